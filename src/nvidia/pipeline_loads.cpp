// Software pipelining of a loop's loads, carried out as pipelineLoops
// (pipeline_loops.cpp) marked them: the tiles of the next num_stages-1
// iterations are copied to shared memory with cp.async (or TMA, lower_tma.cpp)
// while the current one is computed, each straight into the swizzled tile its
// dot reads (ldmatrix or wgmma); the copies compute each address again for
// the iteration they copy; the dots the pass marked run on across iterations.
#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool usedOnce(const UseCounts &counts, const Value *v) { return useCount(counts, v) == 1; }

} // namespace

// The loads a pipeline copies ignore their masks in the body (each copy
// computes its own, valueAt): ops that only feed those masks are not lowered
// there (a layout conversion of a dead mask would still cost barriers).
void Lowering::skipDeadMasks(const Pipeline &p, const Block &body) {
  std::map<const Value *, std::vector<const Op *>> users;
  walk(const_cast<Block &>(body), [&](Op *op) {
    for (const Value *v : op->operands)
      users[v].push_back(op);
  });
  auto skipDead = [&](const std::vector<const Op *> &slice) { // users first
    for (auto it = slice.rbegin(); it != slice.rend(); ++it) {
      bool dead = true;
      for (const Op *user : users[(*it)->result()])
        dead &= pipelinedLoads.count(user) || skipped.count(user);
      if (dead)
        skipped.insert(*it);
    }
  };
  for (const PipelinedLoad &l : p.loads) {
    skipDead(l.maskSlice);
    skipDead(l.ptrSlice); // so do computed pointers
  }
}

// Calls fn(slice, value, load) for each value the copies of `p` compute again
// for the iteration they copy (an offset, a pointer tensor, a mask), its
// slice and the load it is for.
template <typename F> static void forEachCopySlice(const Pipeline &p, F fn) {
  for (const PipelinedLoad &l : p.loads) {
    for (auto &[d, slice] : l.offsetSlices)
      fn(slice, l.load->operand(0)->def->operand(1 + d), l);
    if (!l.ptrSlice.empty())
      fn(l.ptrSlice, l.load->operand(0), l);
    if (!l.maskSlice.empty())
      fn(l.maskSlice, l.load->operand(1), l);
  }
}

// Fills p.flat when the copies of flattened loop `forOp` (from 0 by 1, marked
// flat) compute from q = iv / n, n loop-invariant: its outer iteration. With
// `tensors`, small tensors computed from q alone are kept too (a tile's row
// offsets, clamped to the tensor: tl.where(offs < M, offs, 0)).
static void planFlat(Pipeline &p, const Op &forOp, bool tensors) {
  const Block &body = *forOp.regions[0];
  const Value *iv = body.args[0].get();
  const Op *lb = forOp.operand(0)->def, *step = forOp.operand(2)->def;
  if (forOp.intAttr("flat") == 0 || !lb || lb->kind != OpKind::Constant ||
      lb->intAttr("value") != 0 || !step || step->intAttr("value") != 1)
    return; // (flatten_loops.cpp marks its loops: there n > 0)
  auto flat = std::make_unique<Pipeline::Flat>();
  for (auto &opPtr : body.ops) {
    const Op *op = opPtr.get();
    bool splits = (op->kind == OpKind::IDiv || op->kind == OpKind::IRem) &&
                  op->operand(0) == iv && !isDefinedIn(op->operand(1), body);
    if (splits && op->kind == OpKind::IDiv && !flat->div)
      flat->div = op;
    else if (splits && op->kind == OpKind::IRem && !flat->rem)
      flat->rem = op;
  }
  if (!flat->div)
    return;
  if (flat->rem && flat->rem->operand(1) != flat->div->operand(1))
    flat->rem = nullptr;
  // The copies' ops, and the values they copy at (or mask or point with).
  std::set<const Op *> sliceOps;
  std::vector<const Value *> roots;
  forEachCopySlice(p, [&](const std::vector<const Op *> &slice, const Value *root,
                          const PipelinedLoad &) {
    sliceOps.insert(slice.begin(), slice.end());
    roots.push_back(root);
  });
  if (!sliceOps.count(flat->div))
    return; // the copies do not depend on the outer iteration
  // Row or column vectors, a few registers a thread each.
  // (A scalar from scalars only: the tensors are computed after the scalars,
  // by materialize; the kinds it and keptTensorLayouts' walk go through.)
  auto kept = [&](const Op *op) {
    const Type &t = op->result()->type;
    if (t.isScalar())
      return std::all_of(op->operands.begin(), op->operands.end(),
                         [](const Value *v) { return v->type.isScalar(); });
    int wide = 0;
    for (int64_t d : t.shape)
      wide += d > 1;
    bool kind = (op->has(ELEMENTWISE) && op->has(PURE)) || op->kind == OpKind::ExpandDims ||
                op->kind == OpKind::Splat || op->kind == OpKind::MakeRange;
    return tensors && kind && wide <= 1 && t.numel() <= 256;
  };
  std::set<const Value *> fromQ{flat->div->result()};
  for (auto &opPtr : body.ops) {
    const Op *op = opPtr.get();
    if (!sliceOps.count(op) || op == flat->div || op == flat->rem || op->results.size() != 1 ||
        !kept(op))
      continue;
    bool tile = true, readsQ = false;
    for (const Value *v : op->operands) {
      readsQ |= fromQ.count(v) > 0;
      tile &= fromQ.count(v) || !isDefinedIn(v, body);
    }
    if (tile && readsQ) {
      flat->tileOps.push_back(op);
      fromQ.insert(op->result());
    }
  }
  auto keep = [&](const Value *v) {
    if (v != flat->div->result() && fromQ.count(v) &&
        std::find(flat->kept.begin(), flat->kept.end(), v) == flat->kept.end())
      flat->kept.push_back(v);
  };
  for (auto &opPtr : body.ops) { // in body order: the PTX must not depend on addresses
    const Op *op = opPtr.get();
    if (sliceOps.count(op) && op != flat->div && op != flat->rem &&
        std::find(flat->tileOps.begin(), flat->tileOps.end(), op) == flat->tileOps.end())
      for (const Value *v : op->operands)
        keep(v);
  }
  for (const Value *root : roots)
    keep(root);
  p.flat = std::move(flat);
}

// The carried scalars the copies of `p` compute from (inductionSlice): kept
// for the next iteration copied.
static void findSteppedScalars(const Block &body, Pipeline &p) {
  forEachCopySlice(p, [&](const std::vector<const Op *> &slice, const Value *,
                          const PipelinedLoad &) {
    for (const Op *op : slice)
      for (const Value *v : op->operands)
        if (v->owner == &body && v->index > 0)
          if (const Value *step = carriedStep(body, v))
            p.stepped[v] = {step, ""};
  });
}

std::unique_ptr<Pipeline> Lowering::planPipeline(const Op &forOp) {
  int stages = (int)forOp.intAttr("pipeline_stages");
  if (stages < 2)
    return nullptr;
  const Block &body = *forOp.regions[0];
  auto p = std::make_unique<Pipeline>();
  const UseCounts &counts = uses();
  LoopDots ld = loopDots(body);
  for (const Op *def : ld.loads) {
    if (def->intAttr("pipeline_copy") != 1)
      continue;
    PipelinedLoad l;
    if (!copyAddress(forOp, *def, l))
      throw std::logic_error("a load marked for copying ahead has no address to copy from");
    const std::vector<OperandUse> &us = ld.uses[def];
    l.transposed = tileOfUse(us.front(), l.tile);
    l.bytes = dtypeBytes(def->result()->type.dtype);
    l.slotBytes = stageSlotBytes(l.tile);
    l.layout = layoutFor(def->result()); // the coalescing pass's: the copies are issued in it
    l.vec = std::min(contiguousRegisters(*l.layout, l.transposed ? 0 : 1), 16 / l.bytes);
    for (const OperandUse &u : us)
      p->genericReads |= wgmmaLayout(*u.dot) == nullptr;
    p->loads.push_back(std::move(l));
  }
  p->tma = forOp.intAttr("pipeline_tma") != 0;
  for (auto &opPtr : body.ops) { // the loads no dot reads, read back from the stage
    const Op &load = *opPtr;
    if (load.intAttr("pipeline_copy") != 2)
      continue;
    PipelinedLoad l;
    if (!copyAddress(forOp, load, l))
      throw std::logic_error("a load marked for copying ahead has no address to copy from");
    l.layout = layoutFor(load.result());
    l.bytes = dtypeBytes(load.result()->type.dtype);
    l.vec = std::min(contiguousRegisters(*l.layout, l.layout->rank() - 1), 16 / l.bytes);
    l.value = true;
    l.slotBytes = valueSlotBytes(load);
    p->loads.push_back(std::move(l));
  }
  p->dot = ld.dots.empty() ? nullptr : ld.dots.front(); // (a loop of value loads alone: none)
  p->asyncDot = p->dot && p->dot->intAttr("pipeline_async") != 0;
  if (p->asyncDot) {
    const Op &dot = *p->dot;
    readLaterOnlyInIfs(body, dot, counts, p->drains);
    if (const Op *reset = resetAccumulator(dot, counts)) {
      const Op *splat = reset->operand(0)->def;
      p->reset = splat->operand(0);
      skipped.insert(reset);
      if (usedOnce(counts, splat->result()))
        skipped.insert(splat);
    }
  }
  for (const Op *d : ld.dots)
    if (int64_t k = d->intAttr("pipeline_deferred", -1); k >= 0)
      p->deferred[d] = (int)k;
  int64_t slotBytes = 0;
  for (PipelinedLoad &l : p->loads) {
    l.offset = slotBytes; // times the stages, below
    slotBytes += l.slotBytes;
  }
  p->ws = forOp.intAttr("ws_ring") != 0;
  if (p->ws) // the producer's ring
    stages = ring.stages;
  p->stages = stages; // too many for shared memory: the caller retries with fewer
  for (PipelinedLoad &l : p->loads)
    l.offset *= p->stages;
  if (p->tma) // a barrier per stage after them (stagesBytes in allocate_shared counts both)
    p->barriers = slotBytes * p->stages;
  if (p->ws) {
    p->base = ring.data;
  } else { // where gpu-allocate-shared put the stages
    p->base = sharedAt(forOp.intAttr("shared_stages"));
  }
  for (PipelinedLoad &l : p->loads)
    pipelinedLoads[l.load] = p.get();
  skipDeadMasks(*p, body);
  if (!p->ws) { // (the producer computes the copies' addresses)
    findSteppedScalars(body, *p);
    planFlat(*p, forOp, true);
    if (p->flat && !keptTensorLayouts(*p))
      planFlat(*p, forOp, false);
  }
  // A carried pointer read only by its copied load and by its own advance,
  // which only the yield reads, and unused after the loop, is left alone.
  for (const PipelinedLoad &l : p->loads) {
    if (l.carried < 0)
      continue;
    const Value *arg = body.args[l.carried + 1].get();
    const Value *next = body.terminator()->operand(l.carried);
    if (next->def && next->def->parent == &body && next->def->operand(0) == arg &&
        useCount(counts, arg) == 2 && usedOnce(counts, next) &&
        useCount(counts, forOp.result(l.carried)) == 0) {
      skipped.insert(next->def);
      p->frozen.insert(l.carried);
    }
  }
  return p;
}

// Where register g's element of value load `l` lies in its row-major buffer
// at `base` (`rebased`: each thread address moved there, by the caller's scope).
static SharedAddr valueElement(Lowering &L, const PipelinedLoad &l, const std::string &base,
                               int g, std::map<std::string, std::string> &rebased) {
  SharedAddr e = L.sharedElement(l.layout, g, l.bytes, 0); // from the scratch's base
  auto [it, fresh] = rebased.try_emplace(e.base);
  if (fresh) {
    std::string shift = L.opReg("sub.u32", RegClass::B32, {base, L.sharedBase()});
    it->second = L.opReg("add.u32", RegClass::B32, {e.base, shift});
  }
  return {it->second, e.offset};
}

static void moveInto(Lowering &L, const std::string &dst, const std::string &src, RegClass rc) {
  L.b.emit(std::string("mov") + regType(rc) + " " + dst + ", " + src);
}

// Issues the copies of the tiles of the iteration at `iv` into stage `slot`,
// each zero-filled where `valid` (or the load's mask, or its bounds) is false,
// and moves the carried pointers the copies read one iteration on. Each
// pointer's next value is computed just before the copy that reads it: with
// the advance after all copies, ptxas funnels every copy's address through
// one register pair, each move waiting for the copy before it to read it.
static void issueCopies(Lowering &L, Pipeline &p, const std::string &slot, const std::string &iv,
                        const std::string &valid) {
  for (PipelinedLoad &l : p.loads)
    for (auto &[d, slice] : l.offsetSlices) { // this iteration's offset, computed again
      const Value *offset = l.load->operand(0)->def->operand(1 + d);
      std::string at = L.valueAt(offset, slice, p, iv, nullptr).regs[0];
      at = L.castScalar(at, offset->type.dtype, DType::I64, false);
      std::string &reg = l.next.regs[1 + 2 * l.deltas.size() + d];
      L.b.emit("add.s64 " + reg + ", " + l.offsetBases[d] + ", " + at);
    }
  if (p.tma) {
    L.issueTmaCopies(p, slot, valid);
    return;
  }
  for (PipelinedLoad &l : p.loads) {
    const LinearLayout *lay = l.layout;
    TVal ptr = l.next, mask;
    if (l.block()) {
      bool masked = false;
      blockAddresses(L, *l.load, l.next, lay, l.vec, ptr, mask, masked);
    } else {
      if (!l.ptrSlice.empty()) // this iteration's pointers, computed again
        ptr = L.convert(L.valueAt(l.load->operand(0), l.ptrSlice, p, iv, lay),
                        l.load->operand(0)->type.dtype, lay);
      if (l.load->operands.size() > 1)
        mask = L.convert(L.valueAt(l.load->operand(1), l.maskSlice, p, iv, lay),
                         DType::I1, lay);
    }
    std::string slotBase =
        L.opReg("mad.lo.u32", RegClass::B32, {slot, imm(l.slotBytes), p.base});
    slotBase = L.opReg("add.u32", RegClass::B32, {slotBase, imm(l.offset)});
    // A transposed tile: the same registers, read as the transposed tensor.
    const LinearLayout *inTile = l.transposed ? L.intern(transLayout(*lay, {1, 0})) : lay;
    Lowering::TileThread th;
    if (!l.value)
      th = L.tileThread(inTile, l.tile, l.bytes);
    std::map<std::pair<std::string, int64_t>, std::string> cache;
    std::map<std::string, std::string> rebased;
    // A value's copies: one thread of those holding an element (a layout may
    // repeat it across threads) copies it.
    std::string owner = l.value ? L.ownerPredicate(lay) : "";
    // The carried pointers one iteration on (none when each copy computes its own).
    const bool advancing = !l.block() && l.ptrSlice.empty();
    TVal delta;
    if (advancing)
      delta = L.convert(L.val(l.delta), l.delta->type.dtype, ptr.layout);
    // Elements copied one by one across the vectors they were loaded in (a
    // tile transposed by its copies): the pointer of a vector's first, plus
    // an offset, addresses the rest; one carried pointer each would spill.
    int run = 1;
    if (advancing && l.vec == 1)
      run = std::min(contiguousRegisters(*lay, vectorDim(*lay)),
                     vectorWidth(L.axisInfo, l.load->operand(0), lay, l.load->result()->type.dtype,
                                 nullptr));
    std::vector<std::pair<std::string, std::string>> moved;
    for (int g = 0; g < lay->numRegs(); g += l.vec) {
      const std::string &first = ptr.regs[g - g % run];
      std::string src = g % run ? first + "+" + std::to_string(g % run * l.bytes) : first;
      if (advancing && g % run == 0)
        moved.emplace_back(ptr.regs[g], L.pointerPlus(ptr.regs[g], delta.regs[g],
                                                      l.delta->type.dtype,
                                                      l.load->result()->type.dtype));
      SharedAddr a =
          l.value ? valueElement(L, l, slotBase, g, rebased)
                  : L.tileAddress(slotBase, th, L.tileRegOffset(inTile, g, l.tile, l.bytes), cache);
      std::string ok = valid;
      if (!mask.regs.empty())
        ok = L.opReg("and.pred", RegClass::Pred, {ok, mask.regs[g]});
      int size = l.vec * l.bytes;
      std::string srcSize = L.opReg("selp.u32", RegClass::B32, {imm(size), "0", ok});
      L.b.emit((owner.empty() ? "" : "@" + owner + " ") + "cp.async." +
               (size == 16 ? "cg" : "ca") + ".shared.global " + a.str() + ", [" + src + "], " +
               imm(size) + ", " + srcSize);
    }
    for (auto &[reg, next] : moved)
      moveInto(L, reg, next, RegClass::B64);
  }
  L.b.emit("cp.async.commit_group");
}

// The block pointers the copies read, and the carried scalars they compute
// from, one iteration on.
static void advanceCopies(Lowering &L, Pipeline &p) {
  for (auto &[arg, step] : p.stepped) {
    std::string type = dtypeBits(arg->type.dtype) == 64 ? "s64" : "s32";
    L.b.emit("add." + type + " " + step.second + ", " + step.second + ", " +
             L.val(step.first).regs[0]);
  }
  for (PipelinedLoad &l : p.loads) {
    if (l.block()) { // the offsets (after base, shape and strides) move by the deltas
      size_t rank = l.deltas.size();
      for (size_t d = 0; d < rank; ++d) {
        const Value *delta = l.deltas[d];
        if (!delta)
          continue;
        std::string step = L.castScalar(L.val(delta).regs[0], delta->type.dtype, DType::I64, false);
        std::string &off = l.next.regs[1 + 2 * rank + d];
        L.b.emit("add.s64 " + off + ", " + off + ", " + step);
      }
    }
  }
}

// Copies the tiles of the iteration at `iv` (zero-filled at or past `ub`)
// into stage `slot`, and steps what the copies read on to the next one.
static void issueStage(Lowering &L, Pipeline &p, const std::string &slot, const std::string &iv,
                       const std::string &ub) {
  std::string valid = L.opReg("setp.lt.s32", RegClass::Pred, {iv, ub});
  issueCopies(L, p, slot, iv, valid);
  advanceCopies(L, p);
  if (p.flat)
    L.stepFlat(p);
}

// The copies of the first num_stages-1 iterations (from `lb` by `step`; those
// at or past `ub` zero-filled), each into its own stage. Three or more are a
// loop of their own: written out, they were most of a deep pipeline's PTX,
// and of its compile and ptxas time. (Two are written out: the loop's
// counters cost registers that a kernel at the limit spills.) The copies and
// advances rewrite the registers they step in place, so one copy of them
// serves every iteration.
static void issueFirstStages(Lowering &L, Pipeline &p, const std::string &lb, const std::string &ub,
                             int64_t step) {
  if (p.stages <= 3) {
    for (int s = 0; s + 1 < p.stages; ++s)
      issueStage(L, p, imm(s), L.opReg("add.s32", RegClass::B32, {lb, imm(s * step)}), ub);
    return;
  }
  std::string slot = L.b.reg(RegClass::B32), iv = L.b.reg(RegClass::B32);
  L.b.emit("mov.u32 " + slot + ", 0");
  L.b.emit("mov.u32 " + iv + ", " + lb);
  std::string top = L.b.newLabel("first_stages");
  L.b.label(top);
  issueStage(L, p, slot, iv, ub);
  L.b.emit("add.s32 " + iv + ", " + iv + ", " + imm(step));
  L.b.emit("add.s32 " + slot + ", " + slot + ", 1");
  std::string more = L.opReg("setp.lt.u32", RegClass::Pred, {slot, imm(p.stages - 1)});
  L.b.emit("@" + more + " bra " + top);
}

void Lowering::beginPipeline(Pipeline &p, const Op &forOp, const std::vector<TVal> &carried) {
  if (p.ws) { // the producer fills the ring; no slot read here is freed yet
    b.comment("pipelined loads: the producer's, " + std::to_string(p.stages) + " stages");
    p.readSlot = ring.slot;
    p.phase = ring.phase;
    p.notFirst = b.reg(RegClass::Pred);
    b.emit("setp.ne.u32 " + p.notFirst + ", 0, 0");
    return;
  }
  // Scratch used outside pipelined loops may overlap the stages: where
  // gpu-insert-barriers found an access that may, it is done before the first copy.
  bufferBarrier();
  p.ivValue = forOp.regions[0]->args[0].get();
  std::string lb = val(forOp.operand(0)).regs[0], ub = val(forOp.operand(1)).regs[0];
  int64_t step = forOp.operand(2)->def->intAttr("value");
  b.comment("pipelined loads: " + std::to_string(p.stages) + " stages");
  for (PipelinedLoad &l : p.loads) {
    // Fresh registers, read from the initial value now: the loop's own change.
    if (!l.ptrSlice.empty())
      continue; // no pointer of its own: each copy computes its iteration's
    TVal init = l.carried >= 0 ? carried[l.carried] : val(l.base);
    if (!l.block())
      init = convert(init, l.load->operand(0)->type.dtype, l.layout);
    TVal fresh{init.layout, {}};
    for (const std::string &r : init.regs) {
      fresh.regs.push_back(b.reg(RegClass::B64));
      moveInto(*this, fresh.regs.back(), r, RegClass::B64);
    }
    for (size_t d = 0; d < l.starts.size(); ++d) // offsets of the first iteration
      for (const Value *start : l.starts[d]) {
        std::string off = castScalar(val(start).regs[0], start->type.dtype, DType::I64, false);
        std::string &reg = fresh.regs[1 + 2 * l.starts.size() + d];
        b.emit("add.s64 " + reg + ", " + reg + ", " + off);
      }
    for (auto &[d, slice] : l.offsetSlices) { // the pointer's own offset, kept apart
      l.offsetBases[d] = b.reg(RegClass::B64);
      moveInto(*this, l.offsetBases[d], fresh.regs[1 + 2 * l.starts.size() + d], RegClass::B64);
    }
    l.next = fresh;
  }
  if (p.tma)
    initTmaBarriers(p);
  for (auto &[arg, step] : p.stepped) { // the first iteration's: the initial value
    RegClass rc = regClassOf(arg->type.dtype);
    step.second = b.reg(rc);
    moveInto(*this, step.second, carried[arg->index - 1].regs[0], rc);
  }
  if (p.flat) { // the first iteration's outer one: q = r = 0 (registers the copies rewrite)
    for (std::string *reg : {&p.flat->q, &p.flat->r, &p.flat->bodyQ, &p.flat->bodyR}) {
      *reg = b.reg(RegClass::B32);
      b.emit("mov.u32 " + *reg + ", 0");
    }
    keepTileValues(p, true);
    skipped.insert(p.flat->div); // the body's are stepped at each iteration's end
    if (p.flat->rem)
      skipped.insert(p.flat->rem);
  }
  issueFirstStages(*this, p, lb, ub, step);
  p.readSlot = b.reg(RegClass::B32);
  p.writeSlot = b.reg(RegClass::B32);
  b.emit("mov.u32 " + p.readSlot + ", 0");
  b.emit("mov.u32 " + p.writeSlot + ", " + imm(p.stages - 1));
  p.ub = ub;
  p.step = step;
}

// Copies the tiles num_stages-1 iterations ahead of `iv` into the write slot.
static void issueAhead(Lowering &L, Pipeline &p, const std::string &iv) {
  std::string ahead = L.opReg("add.s32", RegClass::B32, {iv, imm((p.stages - 1) * p.step)});
  issueStage(L, p, p.writeSlot, ahead, p.ub);
}

std::vector<std::optional<TVal>> Lowering::bindingsOf(const std::vector<const Value *> &vs) const {
  std::vector<std::optional<TVal>> out;
  for (const Value *v : vs) {
    auto it = values_.find(v);
    out.push_back(it == values_.end() ? std::nullopt : std::optional<TVal>(it->second));
  }
  return out;
}

void Lowering::restoreBindings(const std::vector<const Value *> &vs,
                               const std::vector<std::optional<TVal>> &saved) {
  for (size_t k = 0; k < vs.size(); ++k) {
    if (saved[k])
      values_[vs[k]] = *saved[k];
    else
      values_.erase(vs[k]);
  }
}

bool Lowering::keptTensorLayouts(Pipeline &p) {
  Pipeline::Flat &f = *p.flat;
  std::set<const Op *> tileOps(f.tileOps.begin(), f.tileOps.end());
  std::map<const Value *, std::set<const LinearLayout *>> asked;
  // As materialize recomputes a copy's tensor in `to` (valueAt): down to
  // the kept values, through the ops of the slice.
  std::function<bool(const Value *, const std::set<const Op *> &, const LinearLayout *)> walk =
      [&](const Value *v, const std::set<const Op *> &slice, const LinearLayout *to) {
        if (std::find(f.kept.begin(), f.kept.end(), v) != f.kept.end()) {
          asked[v].insert(to);
          return true;
        }
        const Op *def = v->def;
        if (!v->type.isTensor() || !def || (!slice.count(def) && !tileOps.count(def)))
          return true; // bound where the copies run
        switch (def->kind) {
        case OpKind::Broadcast:
          return walk(def->operand(0), slice,
                      intern(withoutRegisterCopies(
                          projectLayout(*to, def->operand(0)->type.shape))));
        case OpKind::ExpandDims:
          return walk(def->operand(0), slice, intern(sliceLayout(*to, (int)def->intAttr("axis"))));
        case OpKind::Splat:
        case OpKind::Constant:
        case OpKind::MakeRange:
          return true;
        default:
          if (!def->has(ELEMENTWISE) || !def->has(PURE))
            return false;
          for (const Value *o : def->operands)
            if (!walk(o, slice, to))
              return false;
          return true;
        }
      };
  bool found = true; // (a scalar root, an offset, reads no kept tensor)
  forEachCopySlice(p, [&](const std::vector<const Op *> &slice, const Value *root,
                          const PipelinedLoad &l) {
    if (root->type.isTensor() && !rematerializable(root))
      found = false; // (lowered op by op, in the ops' own layouts)
    else if (found)
      found = walk(root, std::set<const Op *>(slice.begin(), slice.end()), l.layout);
  });
  if (!found)
    return false;
  f.layouts.assign(f.kept.size(), nullptr);
  for (size_t k = 0; k < f.kept.size(); ++k) {
    if (!f.kept[k]->type.isTensor())
      continue;
    if (asked[f.kept[k]].size() != 1)
      return false;
    f.layouts[k] = *asked[f.kept[k]].begin();
  }
  return true;
}

void Lowering::keepTileValues(Pipeline &p, bool fresh) {
  Pipeline::Flat &f = *p.flat;
  std::vector<const Value *> rebound{f.div->result()};
  for (const Op *op : f.tileOps)
    rebound.push_back(op->result());
  std::vector<std::optional<TVal>> saved = bindingsOf(rebound);
  bind(f.div->result(), TVal{nullptr, {f.q}});
  enterRegion();
  for (const Op *op : f.tileOps) { // tensors: recomputed by materialize, below
    bool uniform = op->kind == OpKind::Splat || op->kind == OpKind::Constant;
    if (op->result()->type.isScalar() || uniform)
      lowerOp(*op);
    else
      values_.erase(op->result());
  }
  for (size_t k = 0; k < f.kept.size(); ++k) {
    TVal v = f.layouts.empty() || !f.layouts[k] ? val(f.kept[k])
                                                 : materialize(f.kept[k], f.layouts[k]);
    RegClass rc = regClassOf(f.kept[k]->type.dtype);
    if (fresh) { // a register of its own for each distinct one of the value's
      TVal own{v.layout, {}, v.uniform};
      std::map<std::string, std::string> renamed;
      for (const std::string &r : v.regs) {
        auto [it, added] = renamed.emplace(r, "");
        if (added)
          it->second = b.reg(rc);
        own.regs.push_back(it->second);
      }
      f.values.push_back(own);
    }
    std::set<std::string> moved;
    for (size_t i = 0; i < v.regs.size(); ++i)
      if (moved.insert(f.values[k].regs[i]).second)
        moveInto(*this, f.values[k].regs[i], v.regs[i], rc);
  }
  restoreBindings(rebound, saved);
  enterRegion();
}

void Lowering::bindFlatIteration(const Pipeline &p) {
  bind(p.flat->div->result(), TVal{nullptr, {p.flat->bodyQ}});
  if (p.flat->rem)
    bind(p.flat->rem->result(), TVal{nullptr, {p.flat->bodyR}});
}

// Steps a flattened loop's (q, r) on one iteration: r + 1, or (q + 1, 0) past
// the inner loop's last. The predicate that says q moved.
static std::string stepOuterInner(Lowering &L, const Pipeline &p, const std::string &q,
                                  const std::string &r) {
  std::string n = L.val(p.flat->div->operand(1)).regs[0];
  L.b.emit("add.s32 " + r + ", " + r + ", 1");
  std::string wrap = L.opReg("setp.eq.s32", RegClass::Pred, {r, n});
  L.b.emit("selp.u32 " + r + ", 0, " + r + ", " + wrap);
  L.b.emit("@" + wrap + " add.s32 " + q + ", " + q + ", 1");
  return wrap;
}

void Lowering::stepFlat(Pipeline &p) {
  std::string wrap = stepOuterInner(*this, p, p.flat->q, p.flat->r);
  std::string same = b.newLabel("same_outer");
  b.emit("@!" + wrap + " bra " + same);
  keepTileValues(p, false); // the next outer iteration's
  b.label(same);
}

// At the first pipelined load of an iteration: wait for this iteration's
// stage, then start copying the stage num_stages-1 iterations ahead.
void Lowering::pipelinedLoad(Pipeline &p, const Op &load, const std::string &iv) {
  if (!p.waited) {
    bool issueNow = !p.asyncDot && p.deferred.empty();
    if (p.ws) {
      waitTmaStage(p);
      if (issueNow) // the dots of the previous iteration are done with its slot
        freePreviousSlot(p);
      issueNow = false;
    } else if (p.tma) {
      waitTmaStage(p); // each thread sees the copies land
      if (issueNow)
        barrier(); // every thread is done with the slot the copies overwrite
    } else {
      // No proxy fence before wgmma reads what cp.async wrote: the wait and the
      // barrier order them, as in Triton, which fences only tiles stored from
      // registers. A fence here is a MEMBAR.ALL.CTA at every k step.
      b.emit("cp.async.wait_group " + imm(p.stages - 2));
      barrier();
    }
    if (issueNow)
      issueAhead(*this, p, iv);
    p.waited = true;
  }
  for (PipelinedLoad &l : p.loads) {
    if (l.load != &load)
      continue;
    std::string base = opReg("mad.lo.u32", RegClass::B32,
                             {p.readSlot, imm(l.slotBytes), p.base});
    base = opReg("add.u32", RegClass::B32, {base, imm(l.offset)});
    if (l.value) { // each thread reads back its elements
      std::map<std::string, std::string> rebased;
      TVal v{l.layout, {}};
      DType d = load.result()->type.dtype;
      for (int g = 0; g < l.layout->numRegs(); g += l.vec)
        for (const std::string &r : loadSharedRun(valueElement(*this, l, base, g, rebased), d, l.vec))
          v.regs.push_back(r);
      bind(load.result(), v);
      continue;
    }
    TVal resident;
    resident.sharedTile = base;
    bind(load.result(), resident);
  }
}

TVal Lowering::valueAt(const Value *v, const std::vector<const Op *> &slice, const Pipeline &p,
                       const std::string &iv, const LinearLayout *want) {
  if (auto it = p.stepped.find(v); it != p.stepped.end())
    return TVal{nullptr, {it->second.second}};
  if (slice.empty())
    return val(v);
  const Value *ivValue = p.ivValue;
  std::vector<const Value *> rebound{ivValue};
  for (auto &[arg, step] : p.stepped)
    rebound.push_back(arg);
  for (const Op *op : slice)
    rebound.push_back(op->result());
  const Pipeline::Flat *flat = p.flat.get();
  if (flat) {
    rebound.push_back(flat->div->result());
    if (flat->rem)
      rebound.push_back(flat->rem->result());
    rebound.insert(rebound.end(), flat->kept.begin(), flat->kept.end());
  }
  std::vector<std::optional<TVal>> saved = bindingsOf(rebound);
  bind(ivValue, TVal{nullptr, {iv}});
  for (auto &[arg, step] : p.stepped)
    bind(arg, TVal{nullptr, {step.second}});
  enterRegion(); // no value recomputed for the current iteration may be reused
  if (flat) { // the outer iteration's values, as kept
    bind(flat->div->result(), TVal{nullptr, {flat->q}});
    if (flat->rem)
      bind(flat->rem->result(), TVal{nullptr, {flat->r}});
    for (size_t k = 0; k < flat->kept.size(); ++k)
      bind(flat->kept[k], flat->values[k]);
  }
  // The scalars first; the tensor is then recomputed straight in `want`
  // (lowering its ops in their own layouts could move it through shared memory).
  bool direct = want && v->type.isTensor() && rematerializable(v);
  for (const Op *op : slice) {
    if (flat && (op == flat->div || op == flat->rem ||
                 std::find(flat->tileOps.begin(), flat->tileOps.end(), op) != flat->tileOps.end()))
      continue; // bound above
    bool uniform = op->kind == OpKind::Splat || op->kind == OpKind::Constant;
    if (!direct || !op->result()->type.isTensor() || uniform)
      lowerOp(*op);
    else
      values_.erase(op->result()); // recomputed by materialize, for this iteration
  }
  TVal out = direct ? materialize(v, want) : val(v);
  restoreBindings(rebound, saved);
  enterRegion();
  return out;
}

Pipeline *Lowering::asyncPipeline(const Op &dot) {
  const Op *a = dot.operand(0)->def;
  auto it = a ? pipelinedLoads.find(a) : pipelinedLoads.end();
  return it != pipelinedLoads.end() && it->second->asyncDot && it->second->dot == &dot
             ? it->second
             : nullptr;
}

Pipeline *Lowering::deferringPipeline(const Op &dot) {
  for (auto &[load, p] : pipelinedLoads)
    if (p->deferred.count(&dot))
      return p;
  return nullptr;
}

void Lowering::issueAfterSyncDot(const Op &dot) {
  for (auto &[load, p] : pipelinedLoads) {
    // (a dot marked deferred lowered synchronously, its A staged, waits all the same)
    if (load->parent != dot.parent || p->deferred.empty() || !p->waited || p->issued)
      continue;
    if (p->ws) {
      freePreviousSlot(*p); // this thread's deferred dots of the last iteration are done
    } else {
      barrier(); // every warpgroup's deferred dots of the last iteration are done
      issueAhead(*this, *p, p->iv);
    }
    p->issued = true;
    return;
  }
}

void Lowering::endIteration(Pipeline &p) {
  // Every warpgroup's previous group is done: its slot is free.
  if ((p.asyncDot || !p.deferred.empty()) && !p.issued) {
    if (p.ws) {
      freePreviousSlot(p);
    } else {
      barrier();
      issueAhead(*this, p, p.iv);
    }
  }
  p.issued = false;
  if (p.ws) {
    b.emit("setp.eq.u32 " + p.notFirst + ", 0, 0");
    stepRing(); // (p.readSlot and p.phase are the ring's)
    p.waited = false;
    return;
  }
  if (p.flat) // the body's next (q, r)
    stepOuterInner(*this, p, p.flat->bodyQ, p.flat->bodyR);
  for (std::string *slot : {&p.readSlot, &p.writeSlot}) {
    std::string next = opReg("add.u32", RegClass::B32, {*slot, "1"});
    std::string wrap = opReg("setp.eq.u32", RegClass::Pred, {next, imm(p.stages)});
    b.emit("selp.u32 " + *slot + ", 0, " + next + ", " + wrap);
    if (p.tma && slot == &p.readSlot) // the stage barriers' next phase
      b.emit("@" + wrap + " xor.b32 " + p.phase + ", " + p.phase + ", 1");
  }
  p.waited = false;
}

void Lowering::endPipeline(Pipeline &p) {
  if (p.asyncDot || !p.deferred.empty())
    b.emit("wgmma.wait_group.sync.aligned 0");
  if (p.ws) { // the last iteration's slot
    freePreviousSlot(p);
    return;
  }
  // The stages are free once every copy landed; a write to them after the
  // loop waits for every thread (gpu-insert-barriers).
  if (!p.tma) { // (every TMA copy issued was waited for: only iterations the loop runs are copied)
    b.emit("cp.async.wait_group 0");
    return;
  }
  barrier(); // no thread waits on the stages' mbarriers any more
  releaseTmaBarriers(p);
}

} // namespace tilec::nvidia
