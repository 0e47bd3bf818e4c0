// Requires: layouts in the types (after gpu-remove-conversions). Preserves:
// the IR, adding attributes only. Invalidates: nothing.
//
// Software pipelining, decided: for each for loop (num_stages >= 2), the
// loads whose tiles are copied to shared memory num_stages-1 iterations ahead
// while the current one is computed, each straight into the swizzled tile its
// dot reads (ldmatrix or wgmma); whether the copies go by TMA; and which
// tensor-core dots run on across iterations. The lowering
// (pipeline_loads.cpp, lower_tma.cpp) carries the marks out.
//
// Taken for every dot operand of 8 or 16 bits loaded in the loop body, read
// only by dots (directly or through a trans) that all read the same tile,
// whose address can be computed for a later iteration (CopyAddress: with no
// mask or one that depends on the iteration only through the induction
// variable, recomputed too; the bounds checks of block pointers zero-fill),
// when whole vectors of 4 to 16 bytes go to each tile row: one dot (a matmul)
// or several (attention's q @ k and p @ v, its backward's four). On sm_90,
// tiles of block pointers whose base, sizes and strides come from the
// arguments go by TMA. Without TMA, the loads no dot reads go along (copied
// into row-major buffers) where each thread moves whole vectors. A loop
// without tensor-core dots copies such loads ahead only where
// tl.range(num_stages=) asks (as Triton does: with many programs in flight,
// the round trip through shared memory costs more than it hides). Other loads
// run as written.
#include "nvidia/pipeline_loops.h"

#include <algorithm>

#include "nvidia/axis_info.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool usedOnce(const UseCounts &counts, const Value *v) { return useCount(counts, v) == 1; }

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

// A pointer tensor's load (copyAddress).
bool pointerAddress(const Op &forOp, const Op &load, CopyAddress &s) {
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
  s.carried = carried;
  s.delta = next->operand(1);
  return true;
}

// How offset `v` (a scalar in loop `forOp`'s body) moves: its value in the
// first iteration, as a sum of scalars, and what each iteration adds. It is
// loop-invariant (adds nothing), a carried scalar stepped by a loop-invariant
// amount, or the induction variable plus a loop-invariant amount or not.
bool movingOffset(const Op &forOp, const Value *v, std::vector<const Value *> &start,
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

// A block pointer's load (copyAddress).
bool blockAddress(const Op &forOp, const Op &load, CopyAddress &s) {
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


// The wgmma dots of `dots` (in body order) that can run on past the
// iteration, each with the carried value it accumulates into: its f32 result
// only goes back to the loop as carried value k, where the carried value is
// read only by the dot itself, as the accumulator it adds to (the next
// iteration's dot chains on the same registers: attention backward's dk and
// dv), or only by ops of the body before the dot and after a wgmma dot that
// stays synchronous (its wait_group 0 completes the previous iteration's).
// An in-place one needs a synchronous wgmma dot before it, whose wait
// completes it before the next iteration writes its A registers again or
// copies over the stage it reads: A computed after that dot, or outside the
// loop. It keeps its operands' registers live, so only while the loop's
// accumulators take at most half of a thread's registers (attention backward
// at D=128 holds 256 of them and spills more).
std::map<const Op *, int> deferredDots(const Block &body, const std::vector<const Op *> &dots,
                                       const UseCounts &counts, int threads) {
  std::map<const Op *, int> deferred;
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
    bool candidate = isWgmmaDot(*dot) && dot->operand(2)->type.dtype == DType::F32 &&
                     usedOnce(counts, r) && k >= 0 && !impreciseSumSpan(*dot);
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
        deferred[dot] = k;
        continue;
      }
    }
    if (isWgmmaDot(*dot))
      firstSync = std::min(firstSync, position[dot]);
  }
  return deferred;
}

// The decisions for one loop, made in program order (tensor maps are one per
// block pointer: the boxes already taken by earlier loops and TMA stores).
class LoopPipeliner {
public:
  LoopPipeliner(Function &fn, const GpuOptions &opts, const AxisInfoMap &info)
      : fn_(fn), opts_(opts), arch_(archNumber(opts.arch)), info_(info),
        counts_(countUses(*fn.body)) {}

  void run() { visit(*fn_.body); }

private:
  struct Copy {
    CopyAddress address;
    SharedTile tile;
    bool transposed = false;
    int bytes = 0;
    // Only dots' B as loaded (no trans): its elements may be copied one by one
    // across the vectors they were loaded in (the case measured on the GPU).
    bool onlyB = false;
  };

  void visit(Block &block) {
    for (auto &op : block.ops) {
      if (op->kind == OpKind::StoreBlock && op->intAttr("tma")) {
        const Value *value = op->operand(1);
        int bytes = dtypeBytes(value->type.dtype);
        SharedTile tile = sharedTile(value->type.shape[0], value->type.shape[1] * bytes);
        boxes_.emplace(blockPtrOrigin(op->operand(0)), std::make_pair(tmaBox(tile, bytes), bytes));
      }
      if (op->kind == OpKind::LoadBlock)
        markResidentCopy(*op);
      if (op->kind == OpKind::For)
        decide(*op);
      for (auto &region : op->regions)
        visit(*region);
    }
  }

  // A block load that only loops' wgmma dots read, as an operand they all
  // read alike and that their loops do not compute (attention's q): on sm_90,
  // TMA copies it straight into the shared tile they read (resident_copy),
  // rather than through registers, while the kernel goes on.
  void markResidentCopy(Op &load) {
    const Value *v = load.result();
    if (arch_ < 90 || v->type.rank() != 2 || dtypeBytes(v->type.dtype) > 2 ||
        (load.strAttr("padding") == "nan" && !load.intsAttr("boundary_check").empty()))
      return;
    Copy c;
    c.bytes = dtypeBytes(v->type.dtype);
    int uses = 0;
    bool ok = true;
    walk(*fn_.body, [&](Op *op) {
      for (size_t i = 0; i < op->operands.size(); ++i) {
        if (op->operands[i] != v)
          continue;
        // (a dot in the body of a loop beside the load: the loops run in
        // program order, the first waits for the copy)
        const Block *body = op->parent;
        bool invariant = op->kind == OpKind::Dot && i < 2 && isWgmmaDot(*op) && body->parent &&
                         body->parent->kind == OpKind::For && body->parent->parent == load.parent;
        SharedTile tile;
        bool transposed = invariant && tileOfUse({op, (int)i, false}, tile);
        ok &= invariant && (uses == 0 || (transposed == c.transposed && tile.rows == c.tile.rows &&
                                          tile.rowBytes == c.tile.rowBytes &&
                                          tile.swizzle == c.tile.swizzle));
        c.tile = tile;
        c.transposed = transposed;
        ++uses;
      }
    });
    c.address.load = &load;
    if (!ok || !uses || !tmaCopyable(c))
      return;
    load.setAttr("resident_copy", int64_t(1));
    boxes_.emplace(blockPtrOrigin(load.operand(0)), std::make_pair(tmaBox(c.tile, c.bytes), c.bytes));
  }

  // Whether the copies of `c` can move whole vectors into its tile's rows:
  // the tile's rows run along the value's last dim, or along its first when
  // transposed.
  bool copyable(const Copy &c, const LinearLayout &lay) const {
    int dim = c.transposed ? 0 : 1;
    // Loaded along the other dim (tf32's B, which wgmma reads K-major only,
    // from an [K][N] tensor): each 4-byte element copied on its own, as
    // Triton does (B through pointer tensors; other tiles go as before).
    bool across = vectorDim(lay) != dim;
    if (across && (c.bytes < 4 || c.address.block() || !c.onlyB))
      return false;
    DType d = c.address.load->result()->type.dtype;
    int vec = across ? 1 : std::min(contiguousRegisters(lay, dim), 16 / c.bytes);
    const Op &load = *c.address.load;
    int proven;
    if (c.address.block()) {
      proven = blockVectorWidth(info_, load, &lay, d);
    } else {
      const Value *mask = load.operands.size() > 1 ? load.operand(1) : nullptr;
      proven = vectorWidth(info_, load.operand(0), &lay, d, mask);
    }
    return vec * c.bytes >= 4 && proven >= vec;
  }

  // The layout the copies of `c` are issued in: the load's (the coalescing pass's).
  const LinearLayout &copyLayout(const Copy &c) const {
    return encodedLayout(c.address.load->result());
  }

  // Whether TMA copies `c`: a 2-D block pointer's tile as loaded (or, from
  // a column-major one, transposed), which the launcher can describe, and
  // whose block pointer has no map of another box.
  bool tmaCopyable(const Copy &c) const {
    if (arch_ < 90 || !c.address.block() || c.transposed != tmaTransposed(c.address.load->operand(0)))
      return false;
    const Op &load = *c.address.load;
    const std::vector<int64_t> &shape = load.result()->type.shape;
    int row = c.transposed ? 1 : 0;
    if (shape.size() != 2 || c.tile.rows != shape[row] ||
        c.tile.rowBytes != shape[1 - row] * c.bytes ||
        !tmaMovable(fn_, info_, load.operand(0), c.bytes))
      return false;
    auto known = boxes_.find(blockPtrOrigin(load.operand(0)));
    return known == boxes_.end() ||
           (known->second.first == tmaBox(c.tile, c.bytes) && known->second.second == c.bytes);
  }

  // The loads of the body that no dot reads, whose address (and mask) can be
  // computed ahead and whose threads each move whole vectors of 4 to 16
  // bytes: copied with the dots' operands, read back from the stage. Whether
  // any was marked.
  bool markValueLoads(Op &forOp) {
    Block &body = *forOp.regions[0];
    bool writes = false; // a load copied ahead could miss what the loop writes before it runs
    walk(body, [&](Op *op) { writes |= op->has(EFFECT); });
    if (writes)
      return false;
    bool marked = false;
    for (auto &opPtr : body.ops) {
      Op &load = *opPtr;
      if (load.kind != OpKind::Load || load.intAttr("pipeline_copy") ||
          !load.result()->type.isTensor() || load.intAttr("volatile") != 0)
        continue;
      CopyAddress a;
      if (!copyAddress(forOp, load, a))
        continue;
      const LinearLayout &lay = encodedLayout(load.result());
      int last = lay.rank() - 1;
      DType d = load.result()->type.dtype;
      int bytes = dtypeBytes(d);
      if (vectorDim(lay) != last || storageBytes(d) != bytes)
        continue;
      int vec = std::min(contiguousRegisters(lay, last), 16 / bytes);
      const Value *mask = load.operands.size() > 1 ? load.operand(1) : nullptr;
      int proven = vectorWidth(info_, load.operand(0), &lay, d, mask);
      int size = vec * bytes;
      if (proven < vec || (size != 4 && size != 8 && size != 16))
        continue;
      load.setAttr("pipeline_copy", int64_t(2));
      marked = true;
    }
    return marked;
  }

  void decide(Op &forOp) {
    // tl.range(num_stages=) sets a loop's own, no more than the kernel's (which
    // compile_gpu lowers when the stages do not fit in shared memory).
    int stages = (int)std::min<int64_t>(forOp.intAttr("num_stages", opts_.numStages),
                                        opts_.numStages);
    Block &body = *forOp.regions[0];
    const Op *step = forOp.operand(2)->def;
    if (stages < 2 || !step || step->kind != OpKind::Constant || step->intAttr("value") <= 0 ||
        body.args[0]->type.dtype != DType::I32)
      return;
    // The stages of every pipeline start at the same place: a loop holding
    // another loop that may pipeline its own dots is left as written.
    bool nestedDots = false;
    walk(body, [&](Op *loop) {
      if (loop->kind == OpKind::For || loop->kind == OpKind::While)
        for (auto &region : loop->regions)
          walk(*region, [&](Op *op) { nestedDots |= op->kind == OpKind::Dot; });
    });
    if (nestedDots)
      return;
    LoopDots ld = loopDots(body);
    // A loop without tensor-core dots copies its loads ahead where
    // tl.range(num_stages=) asks for it (a reduction streaming through memory
    // with few programs in flight); by default it runs as written.
    if (ld.dots.empty()) {
      if (forOp.attr("num_stages") && markValueLoads(forOp)) {
        forOp.setAttr("pipeline_stages", int64_t(stages));
        forOp.setAttr("pipeline_tma", int64_t(0));
      }
      return;
    }
    // Uses of a value the dots account for (a trans counts for its own users).
    auto dotUses = [&](const Value *v) {
      int n = 0;
      for (const Op *dot : ld.dots)
        for (int i = 0; i < 2; ++i)
          n += dot->operand(i) == v;
      return n;
    };
    std::vector<Copy> copies;
    for (const Op *def : ld.loads) {
      // Every use is a dot operand, directly or through a trans only dots
      // read, and each reads the same tile the same way round.
      const std::vector<OperandUse> &us = ld.uses[def];
      Copy c;
      c.transposed = tileOfUse(us.front(), c.tile);
      bool ok = true;
      int direct = 0;
      std::set<const Op *> transes;
      c.onlyB = std::all_of(us.begin(), us.end(),
                            [](const OperandUse &u) { return u.operand == 1 && !u.viaTrans; });
      for (const OperandUse &u : us) {
        SharedTile t;
        ok &= tileOfUse(u, t) == c.transposed && t.rows == c.tile.rows &&
              t.rowBytes == c.tile.rowBytes && t.swizzle == c.tile.swizzle;
        if (u.viaTrans)
          transes.insert(u.dot->operand(u.operand)->def);
        else
          ++direct;
      }
      for (const Op *trans : transes)
        ok &= useCount(counts_, trans->result()) == dotUses(trans->result());
      ok &= useCount(counts_, def->result()) == direct + (int)transes.size();
      ok = ok && (def->kind == OpKind::LoadBlock || def->result()->type.rank() == 2) &&
           copyAddress(forOp, *def, c.address);
      c.bytes = dtypeBytes(def->result()->type.dtype);
      // (TMA needs no vectors: it takes tiles of any size, bounds and all.)
      if (ok && (copyable(c, copyLayout(c)) || tmaCopyable(c)))
        copies.push_back(std::move(c));
    }
    bool tma = std::all_of(copies.begin(), copies.end(),
                           [&](const Copy &c) { return tmaCopyable(c); });
    if (!tma) // cp.async copies whole vectors
      copies.erase(std::remove_if(copies.begin(), copies.end(),
                                  [&](const Copy &c) { return !copyable(c, copyLayout(c)); }),
                   copies.end());
    if (copies.empty())
      return;
    forOp.setAttr("pipeline_stages", int64_t(stages));
    forOp.setAttr("pipeline_tma", int64_t(tma));
    for (const Copy &c : copies) {
      const_cast<Op *>(c.address.load)->setAttr("pipeline_copy", int64_t(1));
      if (tma) // one map per block pointer, as the lowering makes them
        boxes_.emplace(blockPtrOrigin(c.address.load->operand(0)),
                       std::make_pair(tmaBox(c.tile, c.bytes), c.bytes));
    }
    if (!tma) // (TMA copies tiles only)
      markValueLoads(forOp);
    // One dot whose operands are both copied, accumulating into an f32 the loop
    // carries through it alone, can stay asynchronous on the tensor cores.
    const Op &dot = *ld.dots.front();
    const Op *reset = resetAccumulator(dot, counts_);
    const Value *acc = reset ? reset->operand(2) : dot.operand(2);
    std::set<const Op *> drains;
    bool async = ld.dots.size() == 1 && copies.size() == 2 && isWgmmaDot(dot) &&
                 !impreciseSumSpan(dot) &&
                 acc->type.dtype == DType::F32 && acc->owner == &body && acc->index > 0 &&
                 body.terminator()->operand(acc->index - 1) == dot.result() &&
                 usedOnce(counts_, acc) && readLaterOnlyInIfs(body, dot, counts_, drains);
    if (async) {
      const_cast<Op &>(dot).setAttr("pipeline_async", int64_t(1));
      return;
    }
    for (auto [d, k] : deferredDots(body, ld.dots, counts_, opts_.numWarps * 32))
      const_cast<Op *>(d)->setAttr("pipeline_deferred", int64_t(k));
  }

  Function &fn_;
  const GpuOptions &opts_;
  int arch_;
  const AxisInfoMap &info_;
  UseCounts counts_;
  // The box and element bytes of each block pointer's tensor map.
  std::map<const Op *, std::pair<std::vector<int64_t>, int>> boxes_;
};

} // namespace

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

bool copyAddress(const Op &forOp, const Op &load, CopyAddress &a) {
  return load.kind == OpKind::LoadBlock ? blockAddress(forOp, load, a)
                                        : pointerAddress(forOp, load, a);
}

LoopDots loopDots(const Block &body) {
  LoopDots out;
  for (auto &opPtr : body.ops) {
    const Op &dot = *opPtr;
    // (tf32 on mma.sync rounds its operands as it stages them: not copied raw;
    // wgmma reads them raw, as Triton's does)
    if (dot.kind == OpKind::Dot && isTensorCoreDot(dot) &&
        ((dtypeBytes(dot.operand(0)->type.dtype) <= 2 &&
          dtypeBytes(dot.operand(1)->type.dtype) <= 2) ||
         isWgmmaDot(dot)))
      out.dots.push_back(&dot);
  }
  for (const Op *dot : out.dots)
    for (int i = 0; i < 2; ++i) {
      const Op *def = dot->operand(i)->def;
      // A transposed load (k = desc.load(...).T) is copied transposed.
      bool viaTrans = def && def->kind == OpKind::Trans && def->parent == &body;
      if (viaTrans)
        def = def->operand(0)->def;
      if (!def || def->parent != &body ||
          (def->kind != OpKind::Load && def->kind != OpKind::LoadBlock))
        continue;
      if (!out.uses.count(def))
        out.loads.push_back(def);
      out.uses[def].push_back({dot, i, viaTrans});
    }
  return out;
}

int64_t stageSlotBytes(const SharedTile &tile) { return (tile.bytes() + 1023) / 1024 * 1024; }

int64_t valueSlotBytes(const Op &load) {
  const Type &t = load.result()->type;
  return (t.numel() * dtypeBytes(t.dtype) + 127) / 128 * 128;
}

int64_t pipelineStageBytes(const Op &forOp) {
  const Block &body = *forOp.regions[0];
  LoopDots ld = loopDots(body);
  int64_t bytes = 0;
  for (const Op *load : ld.loads)
    if (load->intAttr("pipeline_copy") == 1) {
      SharedTile tile;
      tileOfUse(ld.uses[load].front(), tile);
      bytes += stageSlotBytes(tile);
    }
  for (auto &op : body.ops)
    if (op->intAttr("pipeline_copy") == 2)
      bytes += valueSlotBytes(*op);
  return bytes;
}

bool isWgmmaDot(const Op &dot) {
  const LayoutEncoding *e = layoutEncoding(dot.result()->type);
  return e && e->kind == "wgmma";
}

bool isTensorCoreDot(const Op &dot) {
  const LayoutEncoding *e = layoutEncoding(dot.result()->type);
  return e && (e->kind == "wgmma" || e->kind == "mma");
}

int64_t impreciseSumSpan(const Op &dot) {
  int64_t limit = dot.intAttr("max_num_imprecise_acc", -1);
  if (limit < 0 || !isWgmmaDot(dot) || dot.result()->type.dtype != DType::F32)
    return 0;
  constexpr int64_t kStep = 32; // an fp8 wgmma's k
  int64_t k = dot.operand(0)->type.shape.back();
  return std::min(k, std::max<int64_t>(1, (limit + kStep - 1) / kStep) * kStep);
}

bool tileOfUse(const OperandUse &u, SharedTile &tile) {
  OperandTiles tiles = operandTiles(*u.dot);
  tile = u.operand == 0 ? tiles.a : tiles.b;
  return (u.operand == 1 && !tiles.bKRows) != u.viaTrans;
}

const Op *resetAccumulator(const Op &dot, const UseCounts &counts) {
  const Op *select = dot.operand(2)->def;
  if (!select || select->kind != OpKind::Select || select->parent != dot.parent ||
      !usedOnce(counts, select->result()) || !isZeroConstant(select->operand(1)))
    return nullptr;
  const Op *splat = select->operand(0)->def;
  return splat && splat->kind == OpKind::Splat ? select : nullptr;
}

bool readLaterOnlyInIfs(const Block &body, const Op &dot, const UseCounts &counts,
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

void pipelineLoops(Function &fn, const GpuOptions &opts, const AxisInfoMap &info) {
  LoopPipeliner(fn, opts, info).run();
}

void pipelineLoops(Function &fn, const GpuOptions &opts) {
  pipelineLoops(fn, opts, analyzeAxisInfo(fn));
}

} // namespace tilec::nvidia
