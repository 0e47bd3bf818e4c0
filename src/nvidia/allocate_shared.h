// The shared-memory allocation pass (allocate_shared.cpp), and what it shares
// with the lowering that reads its offsets.
#pragma once

#include <utility>
#include <vector>

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Requires: gpu-pipeline-loops and gpu-warp-specialize ran. Gives every
// shared-memory buffer that outlives one op an offset by liveness (first fit,
// in program order; buffers whose live ranges do not meet share bytes), and
// says where each op's scratch starts (above every buffer live there). Records:
//   for:                 shared_stages (its pipeline's stages and their mbarriers),
//                        shared_resident (one offset per invariantOperands entry, -1: none)
//   gpu.warp_specialize: shared_ring (the producer's ring and its mbarriers)
//   store_block:         shared_staging (a deferred TMA store's own tile)
//   load_block:          shared_tile, shared_barrier (a resident_copy's tile, its mbarrier)
//   any op:              scratch_offset (from this op on in its block, nested
//                        blocks included, the scratch starts here; where absent,
//                        as before it, and 0 at the kernel's start)
// The scratch's size is the lowering's: it grows above that offset.
void allocateShared(Function &fn, const GpuOptions &opts);

// The bytes `op` owns in shared memory, where gpu-allocate-shared put them: a
// pipelined loop's stages (and their mbarriers) and resident tiles, the ring
// (slots and mbarriers), a resident copy's tile and its mbarrier, a deferred
// TMA store's tile.
struct SharedRange {
  int64_t offset = 0, bytes = 0;
};
std::vector<SharedRange> ownedShared(const Op &op);

// The operands of `forOp`'s tensor-core dots (16 bits or narrower) defined
// outside its body: staged once before the loop into tiles of their own
// (resident tiles; attention's q), in the order shared_resident lists them.
std::vector<std::pair<const Op *, int>> invariantOperands(const Op &forOp);

// The op of region 0 of gpu.warp_specialize `ws` after which no loop reads
// the ring (the last one holding a ws_ring loop); null if none does.
const Op *lastRingReader(const Op &ws);

} // namespace tilec::nvidia
