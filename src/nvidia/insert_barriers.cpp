// Barrier insertion: a barrier before an op's first shared-memory write only
// where an access made since the last barrier, on some path to the op, may
// overlap it (a read the write would clobber, or a write it would race).
//
// Accesses are byte ranges: an op's scratch runs from its scratch_offset up
// (its size is the lowering's), and the buffers gpu-allocate-shared placed
// have their offsets and sizes (ownedShared). The analysis walks the kernel
// in program order with the set of accesses not yet ordered by a barrier:
// an if's branches join, a loop's body runs again on what its previous
// iteration left (to a fixed point), and an op marked 1 (one that surely
// writes, so that its barrier is surely there) starts from nothing but its
// own writes; a mark of 2 (one that only may write) clears nothing. It errs
// towards a barrier: an op that may use the scratch counts as using it, and
// accesses stay pending until the next barrier this pass counts on (the
// lowering's own barriers inside ops are not counted), so a mark of 0 is
// safe and a 1 or 2 may be one barrier too many.
#include "nvidia/insert_barriers.h"

#include <climits>
#include <set>
#include <tuple>

#include "nvidia/allocate_shared.h"
#include "nvidia/linear_layout.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

constexpr int64_t kScratchEnd = INT64_MAX; // the scratch grows up to whatever its op needs

struct Access {
  int64_t lo = 0, hi = 0; // [lo, hi)
  bool write = false;
  bool operator<(const Access &o) const {
    return std::tie(lo, hi, write) < std::tie(o.lo, o.hi, o.write);
  }
  bool operator==(const Access &o) const { return !(*this < o) && !(o < *this); }
};
using Pending = std::set<Access>;

bool meets(const Pending &pending, const std::vector<Access> &accesses) {
  for (const Access &a : accesses)
    for (const Access &p : pending)
      if (p.lo < a.hi && a.lo < p.hi && (p.write || a.write))
        return true;
  return false;
}

// A tensor of one dim or more (the lowering holds a 0-d tensor as a scalar).
bool isTile(const Value *v) { return v->type.isTensor() && v->type.rank() > 0; }

// Whether elements move between threads from layout `from` to `to`.
bool exchanges(const LinearLayout &from, const LinearLayout &to) {
  return !(from == to) && registerOnlyConversion(from, to).empty();
}

// Whether dot operand `v` lies in a shared tile before its dot runs: a
// pipelined or resident copy, or a loop-invariant operand its loop staged.
bool inSharedTile(const Op &dot, int i) {
  const Value *v = dot.operand(i);
  while (v->def && (v->def->kind == OpKind::Trans || v->def->kind == OpKind::ConvertLayout))
    v = v->def->operand(0);
  if (v->def && (v->def->intAttr("pipeline_copy") == 1 || v->def->intAttr("resident_copy")))
    return true;
  for (const Op *loop = dot.parent->parent; loop;
       loop = loop->parent ? loop->parent->parent : nullptr) {
    if (loop->kind != OpKind::For)
      continue;
    std::vector<int64_t> offsets = loop->intsAttr("shared_resident");
    std::vector<std::pair<const Op *, int>> operands = invariantOperands(*loop);
    for (size_t k = 0; k < offsets.size() && k < operands.size(); ++k)
      if (operands[k].first == &dot && operands[k].second == i)
        return offsets[k] >= 0;
  }
  return false;
}

class Inserter {
public:
  explicit Inserter(const ScratchModel &model) : model_(model) {}

  void block(Block &b, Pending &pending, int64_t scratch) {
    for (auto &op : b.ops) {
      scratch = op->intAttr("scratch_offset", scratch);
      visit(*op, pending, scratch);
    }
  }

private:
  const ScratchModel &model_;
  Access ring_{}; // the ring of the gpu.warp_specialize being walked (its loops read it)

  void visit(Op &op, Pending &pending, int64_t scratch) {
    std::vector<Access> writes;
    ScratchUse use = model_.use(op);
    if (use != ScratchUse::None)
      writes.push_back({scratch, kScratchEnd, true});
    bool deferredStore = op.kind == OpKind::StoreBlock && op.attr("shared_staging");
    for (SharedRange r : ownedShared(op))
      if (!deferredStore) // (its copy reads the tile on; its own wait and barrier guard it)
        writes.push_back({r.offset, r.offset + r.bytes, true});
      else
        pending.insert({r.offset, r.offset + r.bytes, false});
    if (!writes.empty()) {
      // An op that surely writes (its buffers, a certain use of the scratch)
      // orders everything before it; one that only may leaves it pending.
      bool sure = use != ScratchUse::Maybe;
      int64_t mark = meets(pending, writes) ? (sure ? 1 : 2) : 0;
      op.setAttr("barrier_before", std::max(op.intAttr("barrier_before"), mark));
      if (mark == 1)
        pending.clear();
    }
    Pending own(writes.begin(), writes.end());
    switch (op.kind) {
    case OpKind::For:
    case OpKind::While: {
      if (op.intAttr("ws_ring"))
        own.insert({ring_.lo, ring_.hi, false}); // its dots read the ring's slots
      pending.insert(own.begin(), own.end());
      // Each region runs on what the previous iteration left (the body
      // also after zero iterations, a while's condition once more).
      Pending carry = pending;
      for (int round = 0; round < 8; ++round) {
        Pending next = carry;
        for (auto &region : op.regions)
          block(*region, next, scratch);
        next.insert(carry.begin(), carry.end());
        if (next == carry)
          break;
        carry = std::move(next);
      }
      pending = std::move(carry);
      break;
    }
    case OpKind::If: {
      Pending joined = pending;
      for (auto &region : op.regions) {
        Pending branch = pending;
        block(*region, branch, scratch);
        joined.insert(branch.begin(), branch.end());
      }
      pending = std::move(joined);
      break;
    }
    case OpKind::WarpSpecialize: {
      // Its consumers start past the barrier that publishes the ring's
      // mbarriers; the producer (region 1) is one thread that only copies.
      Access saved = ring_;
      ring_ = writes.empty() ? Access{} : writes.front();
      Pending consumers;
      block(*op.regions[0], consumers, scratch);
      ring_ = saved;
      pending = std::move(consumers);
      pending.insert(own.begin(), own.end());
      break;
    }
    default:
      pending.insert(own.begin(), own.end());
    }
  }
};

} // namespace

bool holdsControl(const Op &op) {
  return op.kind == OpKind::For || op.kind == OpKind::If || op.kind == OpKind::While ||
         op.kind == OpKind::WarpSpecialize;
}

const LinearLayout &ScratchModel::layout(const Value *v) const { return encodedLayout(v); }

ScratchUse ScratchModel::use(const Op &op) const {
  auto it = uses_.find(&op);
  if (it == uses_.end())
    it = uses_.emplace(&op, decide(op)).first;
  return it->second;
}

ScratchUse ScratchModel::decide(const Op &op) const {
  // A conversion that moves elements between threads (but a splat or a
  // value recomputed in place moves nothing). The lowering holds every
  // tensor in its type's encoding.
  auto converts = [&](const LinearLayout &from, const LinearLayout &to) {
    return exchanges(from, to) ? ScratchUse::Maybe : ScratchUse::None;
  };
  if (holdsControl(op))
    return ScratchUse::None; // (what its regions do is their ops')
  switch (op.kind) {
  case OpKind::Produce:
  case OpKind::Yield:
  case OpKind::Condition:
    return ScratchUse::None;
  case OpKind::ConvertLayout:
    return converts(layout(op.operand(0)), layout(op.result()));
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
  case OpKind::ReduceWith: { // across warps
    int axis = (int)op.intAttr("axis");
    for (const Coords &w : layout(op.operand(0)).warps)
      if (w[axis] != 0)
        return ScratchUse::Certain;
    return ScratchUse::None;
  }
  case OpKind::Dot: {
    const LayoutEncoding *acc = layoutEncoding(op.result()->type);
    if (!acc || (acc->kind != "mma" && acc->kind != "wgmma"))
      return ScratchUse::Certain; // the FMA path stages both operands
    // (A in registers, as wgmma may read it, stages nothing.)
    return inSharedTile(op, 0) && inSharedTile(op, 1) ? ScratchUse::None : ScratchUse::Maybe;
  }
  case OpKind::Gather:
  case OpKind::Histogram:
    return ScratchUse::Certain;
  case OpKind::ScanWith:
  case OpKind::CumSum:
  case OpKind::Sort:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
  case OpKind::AtomicLoad:
  case OpKind::AtomicStore:
  case OpKind::AtomicPoll:
    return ScratchUse::Maybe;
  case OpKind::StoreBlock: // by TMA, through a tile (a deferred store's is its own buffer)
    return op.attr("shared_staging") ? ScratchUse::None : ScratchUse::Maybe;
  // The same registers in a layout derived from the operand's, then moved
  // into the result's own where that differs.
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Trans: {
    if (!isTile(op.operand(0)) || !isTile(op.result()))
      return ScratchUse::None; // a splat, or one element
    const LinearLayout &src = layout(op.operand(0));
    LinearLayout derived = op.kind == OpKind::ExpandDims
                               ? expandDimsLayout(src, (int)op.intAttr("axis"))
                           : op.kind == OpKind::Reshape ? reshapeLayout(src, op.result()->type.shape)
                                                        : transLayout(src, op.intsAttr("order"));
    return converts(derived, layout(op.result()));
  }
  default:
    break;
  }
  // Anything else holds its tensor operands and results in one layout: it
  // moves them there through shared memory where their layouts exchange
  // elements (a broadcast: the result's elements from the operand's). A use
  // where the lowering holds a value otherwise is not modeled: it gets
  // barriers on both sides.
  const LinearLayout *first = nullptr;
  bool moves = false;
  for (const Value *v : op.operands)
    if (isTile(v)) {
      const LinearLayout &l = layout(v);
      moves = moves || (first && exchanges(l, *first));
      if (!first)
        first = &l;
    }
  for (const auto &r : op.results)
    if (isTile(r.get()))
      moves = moves || (first && exchanges(layout(r.get()), *first));
  return moves ? ScratchUse::Maybe : ScratchUse::None;
}

void insertBarriers(Function &fn, const GpuOptions &opts) {
  ScratchModel model;
  Pending pending;
  Inserter(model).block(*fn.body, pending, 0);
}

} // namespace tilec::nvidia
