// Software pipelining of the loads that feed tensor-core dots in a for loop
// (num_stages >= 2): the tiles of the next num_stages-1 iterations are copied
// to shared memory with cp.async while the current one is computed, each
// straight into the swizzled tile its dot reads (ldmatrix or wgmma).
//
// Taken for every dot operand of 8 or 16 bits loaded in the loop body, read
// only by dots (directly or through a trans) that all read the same tile,
// from a loop-carried pointer tensor advanced by a loop-invariant offset or a
// pointer tensor computed from the induction variable (recomputed for each
// copied iteration) (with no mask or one that depends on the iteration only
// through the induction variable, recomputed too), from a
// loop-carried block pointer advanced by loop-invariant amounts, or from a
// loop-invariant block pointer (a descriptor) at offsets moving with the loop
// or computed from the induction variable (k * BLOCK_K; recomputed for each
// copied iteration) (their bounds checks zero-fill), when whole vectors of 4
// to 16 bytes go to each tile row: one dot (a matmul) or several (attention's
// q @ k and p @ v, its backward's four). On sm_90, tiles of block pointers
// whose base, sizes and strides come from the arguments go by TMA
// (lower_tma.cpp). Other loads run as written.
#include <algorithm>
#include <functional>
#include <set>
#include <unordered_set>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool usedOnce(const UseCounts &counts, const Value *v) { return useCount(counts, v) == 1; }

// The amount a loop adds to carried scalar `v` each iteration, when its
// yield is v + (something loop-invariant); else null.
const Value *carriedStep(const Block &body, const Value *v) {
  DType d = v->type.dtype;
  if (v->owner != &body || v->index == 0 || !v->type.isScalar() ||
      (d != DType::I32 && d != DType::I64))
    return nullptr; // (the copies step a scalar i32 or i64 on with add.s32/s64)
  const Op *inc = body.terminator()->operand(v->index - 1)->def;
  if (!inc || inc->kind != OpKind::Add || inc->parent != &body)
    return nullptr;
  const Value *step = inc->operand(0) == v ? inc->operand(1) : inc->operand(0);
  bool adds = inc->operand(0) == v || inc->operand(1) == v;
  return adds && !isDefinedIn(step, body) ? step : nullptr;
}

// The ops of `body` that `v` is computed from, in body order, when `v`
// depends on the iteration only through the induction variable, carried
// scalars stepped by loop-invariant amounts (whose value for each copied
// iteration the pipeline keeps) and cheap pure ops (ranges, splats,
// broadcasts, elementwise math), so that it can be computed again for a later
// iteration. False otherwise.
bool inductionSlice(const Block &body, const Value *v, std::vector<const Op *> &slice) {
  if (v->owner == &body)
    return v->index == 0 || carriedStep(body, v);
  if (!isDefinedIn(v, body))
    return true; // loop-invariant
  const Op *def = v->def;
  bool cheap = def->has(PURE) && def->regions.empty() &&
               (def->has(ELEMENTWISE) || def->kind == OpKind::Constant ||
                def->kind == OpKind::Splat || def->kind == OpKind::Broadcast ||
                def->kind == OpKind::ExpandDims || def->kind == OpKind::MakeRange);
  if (!cheap || def->parent != &body)
    return false;
  for (const Value *operand : def->operands)
    if (!inductionSlice(body, operand, slice))
      return false;
  if (std::find(slice.begin(), slice.end(), def) == slice.end())
    slice.push_back(def); // after its operands' ops: body order
  return true;
}

} // namespace

// Whether `load` (in `body` of loop `op`) can be pipelined; fills `s`.
static bool pipelineable(const Op &forOp, const Op &load, const UseCounts &counts,
                         PipelinedLoad &s) {
  const Block &body = *forOp.regions[0];
  const Value *ptr = load.operand(0);
  int carried = -1;
  for (size_t k = 1; k < body.args.size(); ++k)
    if (body.args[k].get() == ptr)
      carried = (int)k - 1;
  if (!ptr->type.isTensor())
    return false;
  // A mask that changes with the iteration only through the induction
  // variable (rk < K - k * BLOCK_K) is computed again for the iteration copied.
  if (load.operands.size() > 1 && !inductionSlice(body, load.operand(1), s.maskSlice))
    return false;
  if (load.operands.size() > 2 && !isZeroConstant(load.operand(2)))
    return false;
  s.load = &load;
  if (carried < 0) { // so is a pointer tensor computed from the induction variable
    s.carried = -1;
    return inductionSlice(body, ptr, s.ptrSlice) && !s.ptrSlice.empty();
  }
  const Op *next = body.terminator()->operand(carried)->def;
  if (!next || next->kind != OpKind::AddPtr || next->operand(0) != ptr ||
      isDefinedIn(next->operand(1), body))
    return false;
  s.load = &load;
  s.carried = carried;
  s.delta = next->operand(1);
  return true;
}

// How offset `v` (a scalar in loop `forOp`'s body) moves: its value in the
// first iteration, as a sum of scalars, and what each iteration adds. It is
// loop-invariant (adds nothing), a carried scalar stepped by a loop-invariant
// amount, or the induction variable plus a loop-invariant amount or not.
static bool movingOffset(const Op &forOp, const Value *v, std::vector<const Value *> &start,
                         const Value *&delta) {
  const Block &body = *forOp.regions[0];
  if (!isDefinedIn(v, body)) {
    start = {v};
    delta = nullptr;
    return true;
  }
  if (const Value *step = carriedStep(body, v)) {
    start = {forOp.operand(2 + v->index)}; // its initial value
    delta = step;
    return true;
  }
  const Value *iv = body.args[0].get();
  const Op *add = v->def;
  if (v != iv && !(add && add->kind == OpKind::Add && add->parent == &body))
    return false;
  start = {forOp.operand(0)}; // the lower bound
  delta = forOp.operand(2);
  if (v == iv)
    return true;
  const Value *other = add->operand(0) == iv ? add->operand(1) : add->operand(0);
  if ((add->operand(0) != iv && add->operand(1) != iv) || isDefinedIn(other, body))
    return false;
  start.push_back(other);
  return true;
}

// Whether `load` (a load_block in `body` of loop `forOp`) can be pipelined;
// fills `s`. Its block pointer is carried and advanced by loop-invariant
// amounts, or it is advance(p, offsets...) of a loop-invariant p with each
// offset moving as movingOffset allows (a tensor descriptor loaded at moving
// offsets).
static bool blockPipelineable(const Op &forOp, const Op &load, const UseCounts &counts,
                              PipelinedLoad &s) {
  const Block &body = *forOp.regions[0];
  const Value *bp = load.operand(0);
  bool checked = !load.intsAttr("boundary_check").empty();
  if (checked && load.strAttr("padding") == "nan")
    return false; // the copies zero-fill
  s.load = &load;
  if (bp->owner == &body && bp->index > 0) {
    s.carried = bp->index - 1;
    const Op *next = body.terminator()->operand(s.carried)->def;
    if (!next || next->kind != OpKind::Advance || next->operand(0) != bp)
      return false;
    for (size_t d = 1; d < next->operands.size(); ++d)
      if (isDefinedIn(next->operand(d), body))
        return false;
    s.deltas.assign(next->operands.begin() + 1, next->operands.end());
    return true;
  }
  const Op *adv = bp->def;
  if (!adv || adv->kind != OpKind::Advance || adv->parent != &body ||
      isDefinedIn(adv->operand(0), body))
    return false;
  s.carried = -1;
  s.base = adv->operand(0);
  for (size_t d = 1; d < adv->operands.size(); ++d) {
    std::vector<const Value *> start;
    const Value *delta = nullptr;
    if (!movingOffset(forOp, adv->operand(d), start, delta)) {
      std::vector<const Op *> slice; // a function of the induction variable: recomputed
      if (!inductionSlice(body, adv->operand(d), slice) || slice.empty())
        return false;
      s.offsetSlices[(int)d - 1] = std::move(slice);
    }
    s.starts.push_back(std::move(start));
    s.deltas.push_back(delta);
  }
  return true;
}

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

// Fills p.deferred: each wgmma dot of `dots` (in body order) whose f32
// result only goes back to the loop as carried value k, where the carried
// value is read only by the dot itself, as the accumulator it adds to (the
// next iteration's dot chains on the same registers: attention backward's
// dk and dv), or only by ops of the body before the dot and after a wgmma dot
// that stays synchronous (its wait_group 0 completes the previous iteration's).
// An in-place one needs a synchronous wgmma dot before it, whose wait completes
// it before the next iteration writes its A registers again or copies over the
// stage it reads: A computed after that dot, or outside the loop. It keeps its
// operands' registers live, so only while the loop's accumulators take at most
// half of a thread's registers (attention backward at D=128 holds 256 of them
// and spills more).
static void findDeferredDots(const Block &body, const std::vector<const Op *> &dots, Pipeline &p,
                             const UseCounts &counts, int threads) {
  std::map<const Op *, size_t> position;
  for (size_t i = 0; i < body.ops.size(); ++i)
    position[body.ops[i].get()] = i;
  std::set<const Op *> inside;
  walk(const_cast<Block &>(body), [&](Op *op) { inside.insert(op); });
  const Op &yield = *body.terminator();
  int64_t carriedRegs = 0;
  for (const Op *dot : dots)
    if (std::count(yield.operands.begin(), yield.operands.end(), dot->result()))
      carriedRegs += dot->result()->type.numel() / threads;
  bool roomToRunOn = carriedRegs <= 128;
  size_t firstSync = body.ops.size(); // where the first synchronous wgmma is
  for (const Op *dot : dots) {
    const Value *r = dot->result();
    int k = -1;
    for (size_t j = 0; j < yield.operands.size(); ++j)
      if (yield.operand(j) == r)
        k = (int)j;
    bool candidate = layoutEncoding(r->type) && layoutEncoding(r->type)->kind == "wgmma" &&
                     dot->operand(2)->type.dtype == DType::F32 && usedOnce(counts, r) && k >= 0;
    if (candidate) {
      const Value *arg = body.args[k + 1].get();
      size_t first = body.ops.size();
      // Every read of the carried value comes before the dot and computes
      // fresh registers from it (a view, as trans or a register-only
      // conversion, would keep reading the registers the dot accumulates into).
      bool early = true;
      walk(const_cast<Block &>(body), [&](Op *op) {
        for (size_t i = 0; i < op->operands.size(); ++i)
          if (op->operands[i] == arg && !(op == dot && i == 2)) {
            auto at = position.find(op);
            bool computes = (op->has(ELEMENTWISE) && op->kind != OpKind::Cast &&
                             op->kind != OpKind::Bitcast && op->kind != OpKind::IntToPtr &&
                             op->kind != OpKind::PtrToInt) ||
                            (op->kind >= OpKind::ReduceSum && op->kind <= OpKind::ArgMin);
            early &= computes && at != position.end() && at->second < position[dot];
            if (at != position.end())
              first = std::min(first, at->second);
          }
      });
      const Value *a = dot->operand(0);
      auto aAt = a->def ? position.find(a->def) : position.end();
      bool aWrittenAfterWait = a->def ? !inside.count(a->def) ||
                                            (aAt != position.end() && aAt->second > firstSync)
                                      : a->owner != &body; // (a carried A changes every iteration)
      bool inPlace = roomToRunOn && first == body.ops.size() && dot->operand(2) == arg &&
                     firstSync < position[dot] && aWrittenAfterWait;
      if (early && (inPlace || (first != body.ops.size() && firstSync < first))) {
        p.deferred[dot] = k;
        continue;
      }
    }
    if (layoutEncoding(r->type) && layoutEncoding(r->type)->kind == "wgmma")
      firstSync = std::min(firstSync, position[dot]);
  }
}

// The select(splat(c), zeros, carried) that `dot` accumulates into, read by
// the dot alone (a flattened loop starting a tile's accumulator again); else null.
static const Op *resetAccumulator(const Op &dot, const UseCounts &counts) {
  const Op *select = dot.operand(2)->def;
  if (!select || select->kind != OpKind::Select || select->parent != dot.parent ||
      !usedOnce(counts, select->result()) || !isZeroConstant(select->operand(1)))
    return nullptr;
  const Op *splat = select->operand(0)->def;
  return splat && splat->kind == OpKind::Splat ? select : nullptr;
}

// Whether `dot`'s result is read by the yield once and otherwise only inside
// ifs after it in `body` (which go to `drains`).
static bool readLaterOnlyInIfs(const Block &body, const Op &dot, const UseCounts &counts,
                               std::set<const Op *> &drains) {
  const Value *r = dot.result();
  int reads = 0, inYield = 0;
  for (const Value *v : body.terminator()->operands)
    inYield += v == r;
  bool after = false;
  for (auto &opPtr : body.ops) {
    const Op *op = opPtr.get();
    if (op == &dot) {
      after = true;
      continue;
    }
    if (!after || op->kind != OpKind::If)
      continue;
    int here = 0;
    for (auto &region : op->regions)
      walk(*region, [&](Op *inner) {
        for (const Value *v : inner->operands)
          here += v == r;
      });
    if (here) {
      drains.insert(op);
      reads += here;
    }
  }
  return inYield == 1 && useCount(counts, r) == 1 + reads;
}

// Whether the copies of `l` can move whole vectors into its tile's rows, and
// how many elements each: the tile's rows run along the value's last dim, or
// along its first when transposed.
static bool copyable(Lowering &L, PipelinedLoad &l, const TVal &ptr) {
  const LinearLayout *lay = l.layout;
  if (!lay || vectorDim(*lay) != (l.transposed ? 0 : 1))
    return false;
  DType d = l.load->result()->type.dtype;
  int vec = std::min(contiguousRegisters(*lay, l.transposed ? 0 : 1), 16 / l.bytes);
  int proven;
  if (l.block()) {
    proven = blockVectorWidth(L, *l.load, lay, d);
  } else {
    const Value *mask = l.load->operands.size() > 1 ? l.load->operand(1) : nullptr;
    proven = vectorWidth(L, l.load->operand(0), TVal{lay, ptr.regs}, d, mask);
  }
  l.vec = vec;
  return vec * l.bytes >= 4 && proven >= vec;
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
  for (const Op *op : sliceOps)
    if (op != flat->div && op != flat->rem &&
        std::find(flat->tileOps.begin(), flat->tileOps.end(), op) == flat->tileOps.end())
      for (const Value *v : op->operands)
        keep(v);
  for (const Value *root : roots)
    keep(root);
  p.flat = std::move(flat);
}

// Adds to `p` the loads of the body that no dot reads, whose address (and
// mask) can be computed ahead and whose threads each move whole vectors of 4
// to 16 bytes: copied with the dots' operands, read back from the stage.
static void addValueLoads(Lowering &L, const Op &forOp, const UseCounts &counts, Pipeline &p) {
  const Block &body = *forOp.regions[0];
  bool writes = false; // a load copied ahead could miss what the loop writes before it runs
  walk(const_cast<Block &>(body), [&](Op *op) { writes |= op->has(EFFECT); });
  if (writes)
    return;
  for (auto &opPtr : body.ops) {
    const Op &load = *opPtr;
    bool taken = std::any_of(p.loads.begin(), p.loads.end(),
                             [&](const PipelinedLoad &l) { return l.load == &load; });
    if (load.kind != OpKind::Load || taken || L.pipelinedLoads.count(&load) ||
        !load.result()->type.isTensor() || load.intAttr("volatile") != 0)
      continue;
    PipelinedLoad l;
    l.layout = L.layoutFor(load.result());
    if (!l.layout || !pipelineable(forOp, load, counts, l))
      continue;
    const LinearLayout &lay = *l.layout;
    int last = lay.rank() - 1;
    DType d = load.result()->type.dtype;
    l.bytes = dtypeBytes(d);
    if (vectorDim(lay) != last || storageBytes(d) != l.bytes)
      continue;
    l.vec = std::min(contiguousRegisters(lay, last), 16 / l.bytes);
    const Value *mask = load.operands.size() > 1 ? load.operand(1) : nullptr;
    int proven = vectorWidth(L, load.operand(0), TVal{l.layout, {}}, d, mask);
    int size = l.vec * l.bytes;
    if (proven < l.vec || (size != 4 && size != 8 && size != 16))
      continue;
    l.value = true;
    l.slotBytes = (load.result()->type.numel() * l.bytes + 127) / 128 * 128;
    p.loads.push_back(std::move(l));
  }
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

std::unique_ptr<Pipeline> Lowering::planPipeline(const Op &forOp,
                                                 const std::vector<TVal> &carried) {
  // tl.range(num_stages=) sets a loop's own, no more than the kernel's (which
  // compile_gpu lowers when the stages do not fit in shared memory).
  int stages = (int)std::min<int64_t>(forOp.intAttr("num_stages", opts.numStages), opts.numStages);
  if (stages < 2)
    return nullptr;
  const Block &body = *forOp.regions[0];
  const Op *step = forOp.operand(2)->def;
  if (!step || step->kind != OpKind::Constant || step->intAttr("value") <= 0 ||
      body.args[0]->type.dtype != DType::I32)
    return nullptr;
  // The stages of every pipeline start at the same place: a loop holding
  // another loop that may pipeline its own dots is left as written.
  bool nestedDots = false;
  walk(const_cast<Block &>(body), [&](Op *loop) {
    if (loop->kind == OpKind::For || loop->kind == OpKind::While)
      for (auto &region : loop->regions)
        walk(*region, [&](Op *op) { nestedDots |= op->kind == OpKind::Dot; });
  });
  if (nestedDots)
    return nullptr;
  auto p = std::make_unique<Pipeline>();
  const UseCounts &counts = uses();
  std::vector<const Op *> dots;
  for (auto &opPtr : body.ops) {
    const Op &dot = *opPtr;
    if (dot.kind == OpKind::Dot && mmaLayout(dot) &&
        dtypeBytes(dot.operand(0)->type.dtype) <= 2 && dtypeBytes(dot.operand(1)->type.dtype) <= 2)
      dots.push_back(&dot);
  }
  // Each use of a load a dot reads: the dot and operand, and whether through a trans.
  struct Use {
    const Op *dot;
    int operand;
    bool viaTrans;
  };
  std::map<const Op *, std::vector<Use>> loadUses;
  std::vector<const Op *> loadOrder;
  for (const Op *dot : dots)
    for (int i = 0; i < 2; ++i) {
      const Op *def = dot->operand(i)->def;
      // A transposed load (k = desc.load(...).T) is copied transposed.
      bool viaTrans = def && def->kind == OpKind::Trans && def->parent == &body;
      if (viaTrans)
        def = def->operand(0)->def;
      if (!def || def->parent != &body || pipelinedLoads.count(def) ||
          (def->kind != OpKind::Load && def->kind != OpKind::LoadBlock))
        continue;
      if (!loadUses.count(def))
        loadOrder.push_back(def);
      loadUses[def].push_back({dot, i, viaTrans});
    }
  // Uses of a value the dots account for (a trans counts for its own users).
  auto dotUses = [&](const Value *v) {
    int n = 0;
    for (const Op *dot : dots)
      for (int i = 0; i < 2; ++i)
        n += dot->operand(i) == v;
    return n;
  };
  for (const Op *def : loadOrder) {
    // Every use is a dot operand, directly or through a trans only dots read,
    // and each reads the same tile the same way round.
    const std::vector<Use> &us = loadUses[def];
    // The tile a use reads, and whether it holds the loaded value transposed.
    auto tileOf = [](const Use &u, SharedTile &tile) {
      OperandTiles tiles = operandTiles(*u.dot);
      tile = u.operand == 0 ? tiles.a : tiles.b;
      return (u.operand == 1 && !tiles.bKRows) != u.viaTrans;
    };
    SharedTile tile;
    bool transposed = tileOf(us.front(), tile), ok = true;
    int direct = 0;
    std::set<const Op *> transes;
    for (const Use &u : us) {
      SharedTile t;
      ok &= tileOf(u, t) == transposed && t.rows == tile.rows && t.rowBytes == tile.rowBytes &&
            t.swizzle == tile.swizzle;
      if (u.viaTrans)
        transes.insert(u.dot->operand(u.operand)->def);
      else
        ++direct;
    }
    for (const Op *trans : transes)
      ok &= useCount(counts, trans->result()) == dotUses(trans->result());
    ok &= useCount(counts, def->result()) == direct + (int)transes.size();
    PipelinedLoad l;
    ok = ok && (def->kind == OpKind::LoadBlock
                    ? blockPipelineable(forOp, *def, counts, l)
                    : def->result()->type.rank() == 2 && pipelineable(forOp, *def, counts, l));
    if (!ok)
      continue;
    l.tile = tile;
    l.transposed = transposed;
    l.bytes = dtypeBytes(def->result()->type.dtype);
    l.slotBytes = (l.tile.bytes() + 1023) / 1024 * 1024; // swizzle patterns start at 1 KB
    const TVal &ptr = l.carried >= 0        ? carried[l.carried]
                      : !l.ptrSlice.empty() ? TVal{layoutFor(def->result()), {}}
                                            : val(l.base);
    if (l.block() || !l.ptrSlice.empty()) {
      l.layout = layoutFor(def->result()); // the coalescing pass's
    } else if (ptr.isTensor() && !ptr.uniform) {
      const LayoutEncoding *e = layoutEncoding(def->result()->type);
      l.layout = e ? intern(e->layout) : ptr.layout;
    }
    if (!copyable(*this, l, ptr))
      continue;
    for (const Use &u : us)
      p->genericReads |= wgmmaLayout(*u.dot) == nullptr;
    p->loads.push_back(std::move(l));
  }
  if (p->loads.empty())
    return nullptr;
  p->tma = std::all_of(p->loads.begin(), p->loads.end(),
                       [&](const PipelinedLoad &l) { return tmaCopyable(l); });
  if (!p->tma) // (with TMA the loads no dot reads stay as written: its copies take tiles only)
    addValueLoads(*this, forOp, counts, *p);
  // One dot whose operands are both copied, accumulating into an f32 the loop
  // carries through it alone, can stay asynchronous on the tensor cores.
  const Op &dot = *dots.front();
  p->dot = &dot;
  const Op *reset = resetAccumulator(dot, counts);
  const Value *acc = reset ? reset->operand(2) : dot.operand(2);
  int operandLoads = (int)std::count_if(p->loads.begin(), p->loads.end(),
                                        [](const PipelinedLoad &l) { return !l.value; });
  p->asyncDot = dots.size() == 1 && operandLoads == 2 && wgmmaLayout(dot) &&
                acc->type.dtype == DType::F32 && acc->owner == &body && acc->index > 0 &&
                body.terminator()->operand(acc->index - 1) == dot.result() &&
                usedOnce(counts, acc) && readLaterOnlyInIfs(body, dot, counts, p->drains);
  if (p->asyncDot && reset) {
    const Op *splat = reset->operand(0)->def;
    p->reset = splat->operand(0);
    skipped.insert(reset);
    if (usedOnce(counts, splat->result()))
      skipped.insert(splat);
  }
  if (!p->asyncDot) {
    p->drains.clear();
    findDeferredDots(body, dots, *p, counts, opts.numWarps * 32);
  }
  int64_t slotBytes = 0;
  for (PipelinedLoad &l : p->loads) {
    l.offset = slotBytes; // times the stages, below
    slotBytes += l.slotBytes;
  }
  p->stages = stages; // too many for shared memory: the caller retries with fewer
  for (PipelinedLoad &l : p->loads)
    l.offset *= p->stages;
  p->totalBytes = slotBytes * p->stages;
  if (p->tma) { // a barrier per stage after them
    p->barriers = p->totalBytes;
    p->totalBytes += 8 * p->stages;
  }
  for (PipelinedLoad &l : p->loads)
    pipelinedLoads[l.load] = p.get();
  skipDeadMasks(*p, body);
  findSteppedScalars(body, *p);
  planFlat(*p, forOp, true);
  if (p->flat && !keptTensorLayouts(*p))
    planFlat(*p, forOp, false);
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
        L.opReg("mad.lo.u32", RegClass::B32, {slot, imm(l.slotBytes), L.pipelineBase()});
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
    std::vector<std::pair<std::string, std::string>> moved;
    for (int g = 0; g < lay->numRegs(); g += l.vec) {
      if (advancing)
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
               (size == 16 ? "cg" : "ca") + ".shared.global " + a.str() + ", [" + ptr.regs[g] +
               "], " + imm(size) + ", " + srcSize);
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

void Lowering::beginPipeline(Pipeline &p, const Op &forOp, const std::vector<TVal> &carried) {
  needPipelineShared(p.totalBytes);
  // Scratch used outside pipelined loops overlaps the stages: the last reader
  // of it (lowered before or after this loop, reached through an enclosing
  // loop's back edge or another branch) is done before the first copy.
  barrier();
  ++pipelinesLive_; // the scratch keeps off the stages from here
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
  for (int s = 0; s + 1 < p.stages; ++s) {
    std::string iv = opReg("add.s32", RegClass::B32, {lb, imm(s * step)});
    std::string valid = opReg("setp.lt.s32", RegClass::Pred, {iv, ub});
    issueCopies(*this, p, imm(s), iv, valid);
    advanceCopies(*this, p);
    if (p.flat)
      stepFlat(p);
  }
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
  std::string valid = L.opReg("setp.lt.s32", RegClass::Pred, {ahead, p.ub});
  issueCopies(L, p, p.writeSlot, ahead, valid);
  advanceCopies(L, p);
  if (p.flat)
    L.stepFlat(p);
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
    if (p.tma) {
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
    std::string base =
        opReg("mad.lo.u32", RegClass::B32, {p.readSlot, imm(l.slotBytes), pipelineBase()});
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
    barrier(); // every warpgroup's deferred dots of the last iteration are done
    issueAhead(*this, *p, p->iv);
    p->issued = true;
    return;
  }
}

void Lowering::endIteration(Pipeline &p) {
  // Every warpgroup's previous group is done: its slot is free.
  if ((p.asyncDot || !p.deferred.empty()) && !p.issued) {
    barrier();
    issueAhead(*this, p, p.iv);
  }
  p.issued = false;
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
  if (!p.tma) // (every TMA copy issued was waited for: only iterations the loop runs are copied)
    b.emit("cp.async.wait_group 0");
  barrier(); // the stages are free: the scratch may use them again
  if (p.tma)
    releaseTmaBarriers(p);
  --pipelinesLive_;
}

} // namespace tilec::nvidia
