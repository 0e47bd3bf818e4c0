// Requires: gpu-pipeline-loops ran. Preserves: the kernel's semantics.
// Invalidates: value ids.
//
// Warp specialization on sm_90a, where tl.range(warp_specialize=True) asks:
// one extra warpgroup, the producer, issues the TMA copies of the loops under
// the marked loop (the loops gpu-pipeline-loops pipelined, the "ring loops"),
// while the kernel's own warps, the consumers, wait for each iteration's
// tiles, run the dots and free the slot once the dots are done with it. The
// copies go into one ring of ring_stages slots that every ring loop of the
// kernel shares in program order, so that the producer runs ahead across the
// loops' ends (the next tile of a persistent kernel, attention's second loop).
//
// The producer's program is the kernel's body, cloned, with a gpu.produce of
// each ring loop's block pointers after its last copied load, and everything
// else the producer does not need dropped: stores and other effects, and
// then (dead-code elimination) every value and carried value the copies'
// addresses and the loops' trip counts do not read. What is left must be
// scalar work (sizes, offsets, block pointers, loops, ifs): one thread runs it.
// A kernel where that is not so (an address computed from a tensor), where a
// ring loop copies anything but tiles that wgmma reads, by TMA, or where a
// loop outside the marked one pipelines its own loads (its stages would lie
// where the ring does), is left as it is: warp_specialize is a hint, as in
// Triton.
#include "nvidia/warp_specialize.h"

#include <algorithm>
#include <functional>

#include "nvidia/lowering.h"
#include "nvidia/pipeline_loops.h"
#include "passes/passes.h"

namespace tilec::nvidia {

namespace {

struct RingLoad {
  const Op *load;
  SharedTile tile;
};

// The copied loads of pipelined loop `loop`, in the order the lowering lays
// out their slots (Lowering::planPipeline's), each with the tile its dot
// reads; false when a copy is not a TMA copy of a tile that only wgmma reads.
bool ringLoads(const Op &loop, std::vector<RingLoad> &out) {
  const Block &body = *loop.regions[0];
  if (loop.intAttr("pipeline_tma") == 0)
    return false;
  for (auto &op : body.ops)
    if (op->intAttr("pipeline_copy") == 2)
      return false;
  LoopDots ld = loopDots(body);
  for (const Op *load : ld.loads) {
    if (load->intAttr("pipeline_copy") != 1)
      continue;
    const std::vector<OperandUse> &uses = ld.uses[load];
    RingLoad r{load, {}};
    // (TMA copies tiles as they lie in memory, or a column-major block
    // pointer's transposed.)
    if (tileOfUse(uses.front(), r.tile) != tmaTransposed(load->operand(0)))
      return false;
    for (const OperandUse &u : uses)
      if (!isWgmmaDot(*u.dot))
        return false; // ldmatrix reads would need a proxy fence before each copy
    out.push_back(r);
  }
  return !out.empty();
}

// Drops the ops with effects the producer does not have (stores, atomics,
// prints): false when one's result is read.
bool dropEffects(Block &block, const UseCounts &counts) {
  std::vector<std::unique_ptr<Op>> kept;
  for (auto &op : block.ops) {
    bool consumers = op->has(EFFECT) && op->kind != OpKind::Produce &&
                     op->kind != OpKind::GdcWait && op->regions.empty();
    if (consumers) {
      for (auto &r : op->results)
        if (useCount(counts, r.get()))
          return false;
      continue;
    }
    for (auto &region : op->regions)
      if (!dropEffects(*region, counts))
        return false;
    kept.push_back(std::move(op));
  }
  block.ops = std::move(kept);
  return true;
}

bool scalar(const std::vector<std::unique_ptr<Value>> &values) {
  return std::none_of(values.begin(), values.end(),
                      [](const auto &v) { return v->type.isTensor(); });
}

// Whether one thread can run `block`: scalars, block pointers and control flow.
bool scalarOnly(const Block &block) {
  for (auto &op : block.ops) {
    switch (op->kind) {
    case OpKind::Produce:
    case OpKind::GdcWait:
    case OpKind::Yield:
    case OpKind::Condition:
      continue;
    case OpKind::For:
    case OpKind::If:
    case OpKind::While:
      for (auto &region : op->regions)
        if (!scalar(region->args) || !scalarOnly(*region))
          return false;
      break;
    default:
      if (!op->has(PURE) && op->kind != OpKind::Load)
        return false;
    }
    if (!scalar(op->results))
      return false;
  }
  return true;
}

bool pipelinesLoads(const Op &op) {
  return op.kind == OpKind::For && op.intAttr("pipeline_stages") >= 2;
}

// The loops that pipeline their loads among for-loop `loop` and the loops under it.
std::vector<Op *> pipelinedLoops(Op &loop) {
  std::vector<Op *> out;
  if (pipelinesLoads(loop))
    out.push_back(&loop);
  walk(*loop.regions[0], [&](Op *inner) {
    if (pipelinesLoads(*inner))
      out.push_back(inner);
  });
  return out;
}

// GpuOptions::warpSpecializeLoops where no loop asks: marks each outermost
// loop that pipelines its loads or holds one that does.
void markOutermostPipelinedLoops(Block &body) {
  bool asked = false;
  walk(body, [&](Op *op) { asked |= op->kind == OpKind::For && op->intAttr("warp_specialize"); });
  if (asked)
    return;
  std::function<void(Block &)> mark = [&](Block &block) {
    for (auto &op : block.ops) {
      if (op->kind == OpKind::For && !pipelinedLoops(*op).empty())
        op->setAttr("warp_specialize", int64_t(1));
      else
        for (auto &region : op->regions)
          mark(*region);
    }
  };
  mark(body);
}

} // namespace

void warpSpecialize(Function &fn, const GpuOptions &opts) {
  if (opts.arch != "sm_90a" || opts.numWarps % 4)
    return; // (setmaxnreg and wgmma: whole warpgroups on sm_90a)
  Block &body = *fn.body;
  if (opts.warpSpecializeLoops)
    markOutermostPipelinedLoops(body);
  std::vector<Op *> ring;
  const Op *asked = nullptr;
  bool returns = false;
  walk(body, [&](Op *op) {
    returns |= op->kind == OpKind::Return && op != body.terminator();
    if (op->kind != OpKind::For || op->intAttr("warp_specialize") == 0)
      return;
    asked = asked ? asked : op;
    for (Op *loop : pipelinedLoops(*op))
      ring.push_back(loop);
  });
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  // Every other pipelined loop's stages would start where the ring lies.
  bool others = false;
  walk(body, [&](Op *op) {
    others |= pipelinesLoads(*op) && !std::binary_search(ring.begin(), ring.end(), op);
  });
  if (ring.empty() || returns || others)
    return;
  int64_t stages = 0, ringSlotBytes = 0;
  std::vector<std::vector<RingLoad>> loads(ring.size());
  for (size_t k = 0; k < ring.size(); ++k) {
    if (!ringLoads(*ring[k], loads[k]))
      return;
    int64_t bytes = 0;
    for (const RingLoad &l : loads[k])
      bytes += stageSlotBytes(l.tile);
    stages = std::max(stages, ring[k]->intAttr("pipeline_stages"));
    ringSlotBytes = std::max(ringSlotBytes, bytes);
  }

  // The producer: the body cloned, a produce op after each ring loop's last
  // copied load, then cut down to what the copies need.
  auto producer = std::make_unique<Block>();
  std::unordered_map<const Value *, Value *> map;
  for (size_t i = 0; i + 1 < body.ops.size(); ++i)
    cloneOp(*body.ops[i], *producer, map);
  for (size_t k = 0; k < ring.size(); ++k) {
    Op *loop = map.at(ring[k]->regions[0]->args[0].get())->owner->parent;
    loop->setAttr("pipeline_stages", int64_t(0)); // its loads are the produce op's
    Block &loopBody = *loop->regions[0];
    std::vector<Value *> blockPtrs;
    std::vector<int64_t> rows, rowBytes;
    size_t after = 0;
    for (const RingLoad &l : loads[k]) {
      const Op *copy = map.at(l.load->result())->def;
      for (size_t i = 0; i < loopBody.ops.size(); ++i)
        if (loopBody.ops[i].get() == copy)
          after = std::max(after, i + 1);
      blockPtrs.push_back(copy->operand(0));
      rows.push_back(l.tile.rows);
      rowBytes.push_back(l.tile.rowBytes);
    }
    auto produce = std::make_unique<Op>();
    produce->kind = OpKind::Produce;
    produce->operands = blockPtrs;
    produce->loc = ring[k]->loc;
    produce->parent = &loopBody;
    produce->setAttr("tile_rows", rows);
    produce->setAttr("tile_row_bytes", rowBytes);
    loopBody.ops.insert(loopBody.ops.begin() + after, std::move(produce));
  }
  if (!dropEffects(*producer, countUses(*producer)))
    return;
  eliminateDeadCode(*producer);
  if (!scalarOnly(*producer))
    return;

  // The body: one warp_specialize (the consumers' region, then the
  // producer's), then the return.
  std::vector<std::unique_ptr<Op>> ops = std::move(body.ops);
  std::unique_ptr<Op> ret = std::move(ops.back());
  ops.pop_back();
  Builder b(&body);
  b.setLoc(asked->loc);
  Op *ws = b.create(OpKind::WarpSpecialize, {}, {}, 2);
  ws->setAttr("ring_stages", stages);
  ws->setAttr("ring_slot_bytes", ringSlotBytes);
  Block &consumers = *ws->regions[0];
  for (auto &op : ops) {
    op->parent = &consumers;
    consumers.ops.push_back(std::move(op));
  }
  b.setBlock(&consumers);
  b.create(OpKind::Yield, {}, {});
  producer->parent = ws;
  ws->regions[1] = std::move(producer);
  b.setBlock(ws->regions[1].get());
  b.create(OpKind::Yield, {}, {});
  ret->parent = &body;
  body.ops.push_back(std::move(ret));
  for (Op *loop : ring)
    loop->setAttr("ws_ring", int64_t(1));
}

} // namespace tilec::nvidia
