// Warp specialization as gpu-warp-specialize laid it out: the ring's
// mbarriers set up by the whole block, then the kernel's warps (the
// consumers) run region 0 while one thread of an extra warpgroup (the
// producer) runs region 1, issuing each ring loop's TMA copies as soon as the
// consumers free a slot. The producer gives most of its registers to the
// consumers (setmaxnreg, warpRegisters), so that the block holds what its
// kernel would hold without the producer: two blocks an SM where shared
// memory allows, else one.
#include "nvidia/allocate_shared.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

constexpr int kProducerWarps = 4; // setmaxnreg takes whole warpgroups
constexpr int kRegisterFile = 65536;      // per SM (sm_90)
constexpr int64_t kSharedPerSm = 233472;  // 228 KiB per SM, of which 1 KiB per block is reserved

std::string zeroed(Lowering &L) {
  std::string r = L.b.reg(RegClass::B32);
  L.b.emit("mov.u32 " + r + ", 0");
  return r;
}

// The registers each of a block's `threads` may hold, `blocks` blocks an SM.
int registersFor(int threads, int blocks) {
  return std::min(255, kRegisterFile / blocks / threads / 8 * 8);
}

} // namespace

WarpRegisters warpRegisters(int consumerWarps, int64_t sharedBytes) {
  int consumers = 32 * consumerWarps, producers = 32 * kProducerWarps;
  int threads = consumers + producers;
  // What each consumer thread can hold once the producer keeps `kept`.
  auto consumerShare = [&](int base, int kept) {
    return std::min(256, (threads * base - producers * kept) / consumers / 8 * 8);
  };
  // Two blocks an SM where shared memory allows it and the consumers keep
  // what a kernel of one warpgroup may use as its own (the warp-specialized
  // block would otherwise halve the occupancy its kernel had without).
  if (kSharedPerSm / (sharedBytes + 1024) >= 2) {
    int base = registersFor(threads, 2);
    if (consumerShare(base, 24) >= 224)
      return {base, 24, consumerShare(base, 24)};
  }
  int base = registersFor(threads, 1);
  if (base < 255 && consumerShare(base, 40) > base)
    return {base, 40, consumerShare(base, 40)};
  return {}; // every thread may hold 255 already
}

void Lowering::lowerWarpSpecialize(const Op &op) {
  int consumers = 32 * opts.numWarps;
  producerWarps_ = kProducerWarps;
  ring.stages = (int)op.intAttr("ring_stages");
  ring.slotBytes = op.intAttr("ring_slot_bytes");
  int64_t dataBytes = ring.stages * ring.slotBytes;
  // The ring lives until the last loop that reads it is done (shared_ring):
  // the scratch keeps off it until then, and may use it after.
  int64_t at = op.intAttr("shared_ring");
  ring.data = sharedAt(at);
  ring.fullAt = dataBytes;
  ring.emptyAt = dataBytes + 8 * ring.stages;
  b.comment("warp specialized: " + std::to_string(opts.numWarps) + " consumer warps, " +
            std::to_string(kProducerWarps) + " producer warps, a ring of " +
            std::to_string(ring.stages) + " slots");
  std::string leader = tmaLeader();
  bufferBarrier();
  for (int s = 0; s < ring.stages; ++s) {
    b.emit("@" + leader + " mbarrier.init.shared::cta.b64 [" + ring.data + "+" +
           imm(ring.fullAt + 8 * s) + "], 1");
    b.emit("@" + leader + " mbarrier.init.shared::cta.b64 [" + ring.data + "+" +
           imm(ring.emptyAt + 8 * s) + "], " + imm(consumers));
  }
  b.emit("fence.mbarrier_init.release.cluster"); // seen by the copies' complete_tx
  barrier();                                     // every thread of the block

  // The registers each side may hold are set once the kernel's shared
  // memory is known (warpRegisters; run() fills the placeholders in).
  std::string producer = b.newLabel("producer"), joined = b.newLabel("consumers_done");
  std::string isProducer = opReg("setp.ge.u32", RegClass::Pred, {tid, imm(consumers)});
  b.emit("@" + isProducer + " bra " + producer);
  b.raw("TILEC_CONSUMER_REGISTERS");
  barrierThreads_ = consumers;
  ring.slot = zeroed(*this);
  ring.phase = zeroed(*this);
  enterRegion();
  lowerBlock(*op.regions[0]);
  enterRegion();
  b.emit("bra.uni " + joined);

  b.label(producer);
  b.raw("TILEC_PRODUCER_REGISTERS");
  std::string idle = opReg("setp.ne.u32", RegClass::Pred, {tid, imm(consumers)});
  b.emit("@" + idle + " ret"); // one thread issues every copy
  ring.slot = zeroed(*this);
  ring.phase = zeroed(*this);
  lowerBlock(*op.regions[1]);
  enterRegion();
  b.emit("ret");
  b.label(joined);
}

void Lowering::lowerProduce(const Op &op) {
  std::vector<int64_t> rows = op.intsAttr("tile_rows"), rowBytes = op.intsAttr("tile_row_bytes");
  // The slot is free once the consumers completed its empty barrier's phase
  // before the one this fill's reads complete (a fresh barrier passes).
  waitBarrier(ring.empty(*this, ring.slot), opReg("xor.b32", RegClass::B32, {ring.phase, "1"}));
  std::string full = ring.full(*this, ring.slot);
  std::vector<SharedTile> tiles;
  int64_t bytes = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    tiles.push_back(sharedTile(rows[k], rowBytes[k]));
    bytes += tiles.back().bytes();
  }
  b.emit("mbarrier.arrive.expect_tx.shared::cta.b64 _, [" + full + "], " + imm(bytes));
  // Each load's slots one after another, as the consumers' pipeline lays them out.
  int64_t offset = 0;
  for (size_t k = 0; k < tiles.size(); ++k) {
    const Value *blockPtr = op.operand((int)k);
    int elementBytes = dtypeBytes(blockPtr->type.pointee);
    int64_t slotBytes = stageSlotBytes(tiles[k]);
    std::string dst = opReg("mad.lo.u32", RegClass::B32, {ring.slot, imm(slotBytes), ring.data});
    if (offset)
      dst = opReg("add.u32", RegClass::B32, {dst, imm(offset * ring.stages)});
    offset += slotBytes;
    copyTileByTma("", tensorMapAddress(blockPtr, tiles[k], elementBytes),
                  tmaCoordinates(blockPtr, val(blockPtr)), tiles[k], elementBytes, dst, full);
  }
  stepRing();
}

void Lowering::stepRing() {
  std::string next = opReg("add.u32", RegClass::B32, {ring.slot, "1"});
  std::string wrap = opReg("setp.eq.u32", RegClass::Pred, {next, imm(ring.stages)});
  b.emit("selp.u32 " + ring.slot + ", 0, " + next + ", " + wrap);
  b.emit("@" + wrap + " xor.b32 " + ring.phase + ", " + ring.phase + ", 1");
}

void Lowering::freePreviousSlot(Pipeline &p) {
  std::string wrapped = opReg("setp.eq.u32", RegClass::Pred, {ring.slot, "0"});
  std::string before = opReg("sub.u32", RegClass::B32, {ring.slot, "1"});
  std::string previous =
      opReg("selp.u32", RegClass::B32, {imm(ring.stages - 1), before, wrapped});
  b.emit("@" + p.notFirst + " mbarrier.arrive.shared::cta.b64 _, [" + ring.empty(*this, previous) +
         "]");
}

std::string WarpRing::full(Lowering &L, const std::string &slot) const {
  return L.opReg("mad.lo.u32", RegClass::B32, {slot, "8", data}) + "+" + imm(fullAt);
}

std::string WarpRing::empty(Lowering &L, const std::string &slot) const {
  return L.opReg("mad.lo.u32", RegClass::B32, {slot, "8", data}) + "+" + imm(emptyAt);
}

} // namespace tilec::nvidia
