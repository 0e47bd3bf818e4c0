// Shared-memory allocation: the buffers that outlive one op get offsets by
// liveness, and each op learns where its scratch may start.
//
// The buffers: each pipelined loop's stages (live while the loop runs: its
// copies go out before the first iteration and are drained after the last),
// the warp-specialized ring (until the last loop that reads it), the resident
// tiles of loop-invariant dot operands (from the loop that stages one to the
// last loop of its block, or nested there, that reads it too; from its load
// where TMA copies it there, with an mbarrier after it: resident_copy), and
// the tiles of TMA stores that return before their copy has read them (to the
// kernel's end). Positions are the ops' program order, an op with regions spanning
// them; a buffer takes the lowest 1 KiB-aligned offset (swizzle patterns
// repeat at 1 KiB; a lone mbarrier's, 8 bytes) that no buffer live at the
// same time holds.
//
// The scratch (layout conversions, cross-warp reductions, staged dot
// operands, ...) lives within one op, and its size is known only once the op
// is lowered: it starts above every buffer live at the op, and grows up from
// there. An op's own buffers (a loop's stages, the ring) are not live for its
// scratch: what the op converts before its stages fill, or after they drain,
// may use their bytes (gpu-insert-barriers orders the two).
#include "nvidia/allocate_shared.h"

#include <algorithm>
#include <map>
#include <set>

#include "nvidia/lowering.h"
#include "nvidia/pipeline_loops.h"

namespace tilec::nvidia {

namespace {

int64_t wholeKiB(int64_t bytes) { return (bytes + 1023) / 1024 * 1024; }

// The bytes of each kind of buffer (allocated here, and told by ownedShared).
// A pipelined loop's stages, with a stage's mbarrier each under TMA (0: none).
int64_t stagesBytes(const Op &forOp) {
  int64_t stages = forOp.intAttr("pipeline_stages");
  if (stages < 2 || forOp.intAttr("ws_ring"))
    return 0;
  int64_t bytes = pipelineStageBytes(forOp) * stages;
  if (bytes && forOp.intAttr("pipeline_tma"))
    bytes += 8 * stages;
  return bytes;
}
// The ring's slots, then a full and an empty mbarrier per slot.
int64_t ringBytes(const Op &ws) {
  int64_t stages = ws.intAttr("ring_stages");
  return stages * ws.intAttr("ring_slot_bytes") + 16 * stages;
}
// The swizzled tile a 2-D value of type `t` is copied into as wgmma reads it.
int64_t tileBytes(const Type &t) {
  return sharedTile(t.shape[0], t.shape[1] * dtypeBytes(t.dtype)).bytes();
}
int64_t residentBytes(const Op &dot, int i) {
  OperandTiles tiles = operandTiles(dot);
  return (i == 0 ? tiles.a : tiles.b).bytes();
}

struct Buffer {
  int64_t bytes = 0, align = 1024; // (an mbarrier alone: 8)
  int first = 0, last = 0;     // the positions it is live at, inclusive
  Op *owner = nullptr;         // the op it is made for
  bool ownScratchFree = false; // its owner's own scratch may overlap it
  int64_t offset = -1;
  int partner = -1; // a buffer that lives as long (a resident copy's mbarrier)
};

class Allocator {
public:
  Allocator(Function &fn, const GpuOptions &opts) : fn_(fn), opts_(opts) {}

  void run() {
    number(*fn_.body);
    collect(*fn_.body, {});
    place();
    record();
    markScratch(*fn_.body, 0);
  }

private:
  Function &fn_;
  const GpuOptions &opts_;
  std::map<const Op *, std::pair<int, int>> span_; // each op's first and last position
  int next_ = 0;
  std::vector<Buffer> buffers_;
  std::map<Op *, std::vector<int>> resident_; // a loop's entries: buffer index or -1

  void number(const Block &block) {
    for (auto &op : block.ops) {
      int first = next_++;
      for (auto &region : op->regions)
        number(*region);
      span_[op.get()] = {first, next_ - 1};
    }
  }

  int add(int64_t bytes, int first, int last, Op *owner, bool ownScratchFree) {
    buffers_.push_back({bytes, 1024, first, last, owner, ownScratchFree});
    return (int)buffers_.size() - 1;
  }

  // `scope`: the resident tiles staged in enclosing blocks and earlier in this
  // one (a later loop reads the tile an earlier one staged: it lives until
  // the last loop that reads it is done).
  using Scope = std::map<std::pair<const Value *, int>, int>;
  void collect(Block &block, Scope scope) {
    for (auto &opPtr : block.ops) {
      Op &op = *opPtr;
      auto [first, last] = span_[&op];
      if (op.kind == OpKind::For) {
        std::vector<int> &entries = resident_[&op];
        for (auto [dot, i] : invariantOperands(op)) {
          const Value *v = dot->operand(i);
          auto known = scope.find({v, i});
          if (known != scope.end()) {
            Buffer &tile = buffers_[known->second];
            tile.last = std::max(tile.last, last);
            if (tile.partner >= 0)
              buffers_[tile.partner].last = tile.last;
            entries.push_back(known->second);
            continue;
          }
          // An enclosing loop's pipelined tile is read where it lies.
          if (v->def && v->def->intAttr("pipeline_copy") == 1) {
            entries.push_back(-1);
            continue;
          }
          int k = add(residentBytes(*dot, i), first, last, &op, false);
          scope[{v, i}] = k;
          entries.push_back(k);
        }
        if (int64_t bytes = stagesBytes(op))
          add(bytes, first, last, &op, true);
      } else if (op.kind == OpKind::WarpSpecialize) {
        const Op *end = lastRingReader(op);
        add(ringBytes(op), first, end ? span_[end].second : first, &op, true);
      } else if (op.kind == OpKind::LoadBlock && op.intAttr("resident_copy")) {
        // Its tile and, apart, the mbarrier its copy completes; the loops that
        // read it find it in the scope as a staged operand.
        int k = add(tileBytes(op.result()->type), first, last, &op, false);
        buffers_.push_back({8, 8, first, last, &op, false});
        buffers_[k].partner = (int)buffers_.size() - 1;
        scope[{op.result(), 0}] = scope[{op.result(), 1}] = k;
      } else if (op.kind == OpKind::StoreBlock && deferredTmaStore(fn_, opts_, op)) {
        add(tileBytes(op.operand(1)->type), 0, next_, &op, false);
      }
      for (auto &region : op.regions)
        collect(*region, scope);
    }
  }

  // First fit, tiles before lone mbarriers (which then take no KiB of their
  // own), longest-lived first among buffers that start together.
  void place() {
    std::vector<int> order(buffers_.size());
    for (size_t k = 0; k < order.size(); ++k)
      order[k] = (int)k;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      const Buffer &a = buffers_[x], &b = buffers_[y];
      if (a.align != b.align)
        return a.align > b.align;
      return a.first != b.first ? a.first < b.first : a.last > b.last;
    });
    std::vector<int> placed;
    for (int k : order) {
      Buffer &buf = buffers_[k];
      int64_t at = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (int p : placed) {
          const Buffer &o = buffers_[p];
          bool together = o.first <= buf.last && buf.first <= o.last;
          if (together && o.offset < at + buf.bytes && at < o.offset + o.bytes) {
            at = (o.offset + o.bytes + buf.align - 1) / buf.align * buf.align;
            moved = true;
          }
        }
      }
      buf.offset = at;
      placed.push_back(k);
    }
  }

  void record() {
    for (const Buffer &buf : buffers_) {
      Op &owner = *buf.owner;
      if (owner.kind == OpKind::WarpSpecialize)
        owner.setAttr("shared_ring", buf.offset);
      else if (owner.kind == OpKind::StoreBlock)
        owner.setAttr("shared_staging", buf.offset);
      else if (owner.kind == OpKind::LoadBlock)
        owner.setAttr(buf.align == 8 ? "shared_barrier" : "shared_tile", buf.offset);
      else if (buf.ownScratchFree)
        owner.setAttr("shared_stages", buf.offset);
    }
    for (auto &[loop, entries] : resident_) {
      if (entries.empty())
        continue;
      std::vector<int64_t> offsets;
      for (int k : entries)
        offsets.push_back(k < 0 ? -1 : buffers_[k].offset);
      loop->setAttr("shared_resident", offsets);
    }
  }

  // Where the scratch of op `op` may start: above every buffer live at it,
  // at a whole KiB (its swizzled tiles).
  int64_t scratchAt(const Op &op) {
    int at = span_[&op].first;
    int64_t top = 0;
    for (const Buffer &buf : buffers_)
      if (buf.first <= at && at <= buf.last && !(buf.ownScratchFree && buf.owner == &op))
        top = std::max(top, wholeKiB(buf.offset + buf.bytes));
    return top;
  }

  void markScratch(Block &block, int64_t current) {
    for (auto &op : block.ops) {
      int64_t at = scratchAt(*op);
      if (at != current)
        op->setAttr("scratch_offset", at);
      current = at;
      for (auto &region : op->regions)
        markScratch(*region, current);
    }
  }
};

} // namespace

std::vector<std::pair<const Op *, int>> invariantOperands(const Op &forOp) {
  const Block &body = *forOp.regions[0];
  std::vector<std::pair<const Op *, int>> out;
  for (const Op *dot : loopDots(body).dots)
    for (int i = 0; i < 2; ++i)
      if (!isDefinedIn(dot->operand(i), body))
        out.push_back({dot, i});
  return out;
}

const Op *lastRingReader(const Op &ws) {
  const Op *end = nullptr;
  for (auto &top : ws.regions[0]->ops) {
    bool reads = top->intAttr("ws_ring") != 0;
    for (auto &region : top->regions)
      walk(*region, [&](Op *loop) { reads |= loop->intAttr("ws_ring") != 0; });
    if (reads)
      end = top.get();
  }
  return end;
}

std::vector<SharedRange> ownedShared(const Op &op) {
  std::vector<SharedRange> out;
  auto add = [&](const char *attr, auto bytes) { // (sizes of what the op has)
    if (op.attr(attr))
      if (int64_t n = bytes(); n > 0)
        out.push_back({op.intAttr(attr), n});
  };
  switch (op.kind) {
  case OpKind::For: {
    add("shared_stages", [&] { return stagesBytes(op); });
    std::vector<int64_t> offsets = op.intsAttr("shared_resident");
    std::vector<std::pair<const Op *, int>> operands = invariantOperands(op);
    for (size_t k = 0; k < offsets.size() && k < operands.size(); ++k)
      if (offsets[k] >= 0)
        out.push_back({offsets[k], residentBytes(*operands[k].first, operands[k].second)});
    break;
  }
  case OpKind::WarpSpecialize:
    add("shared_ring", [&] { return ringBytes(op); });
    break;
  case OpKind::LoadBlock:
    add("shared_tile", [&] { return tileBytes(op.result()->type); });
    add("shared_barrier", [] { return int64_t{8}; });
    break;
  case OpKind::StoreBlock:
    add("shared_staging", [&] { return tileBytes(op.operand(1)->type); });
    break;
  default:
    break;
  }
  return out;
}

void allocateShared(Function &fn, const GpuOptions &opts) { Allocator(fn, opts).run(); }

} // namespace tilec::nvidia
