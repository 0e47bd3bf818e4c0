// The barrier insertion pass (insert_barriers.cpp).
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "nvidia/codegen.h"
#include "nvidia/linear_layout.h"

namespace tilec::nvidia {

// Requires: gpu-allocate-shared ran. Marks barrier_before on every op that
// writes shared memory (its scratch, or buffers of its own) where an access
// made since the last barrier, on some path to it (an earlier op's, a
// previous iteration's), may overlap that write:
//   0  no barrier;
//   1  a barrier before its first write (the op surely writes: the pass
//      counts on it, and the lowering puts it at the op's end, or before a
//      loop's first iteration, if the op wrote nothing after all);
//   2  a barrier before its first write, if it writes (it only may: the
//      pass counts on no barrier there).
// What an op does inside itself (write, barrier, read) and a pipeline's or
// the ring's own synchronization (mbarriers, the barrier before a slot is
// copied again) stay the lowering's. An op with no mark that uses the
// scratch all the same gets barriers on both sides of that use.
void insertBarriers(Function &fn, const GpuOptions &opts);

// Whether `op`'s regions are control flow (for, if, while,
// gpu.warp_specialize): the pass walks them, and the uses of the scratch the
// lowering makes for the op itself (a loop's carried values) are not modeled.
bool holdsControl(const Op &op);

// Whether lowering an op (one without control regions) uses the scratch:
// surely (a reduction across warps, a dot on CUDA cores, a gather, a
// histogram), maybe (conversions between layouts that threads exchange
// elements for, as the lowering holds them, unless it recomputes the value
// in place; scans, sorts, atomics, block stores, dots whose operands are not
// in shared tiles already), or not.
enum class ScratchUse { None, Maybe, Certain };
class ScratchModel {
public:
  ScratchUse use(const Op &op) const;

private:
  // Memoized: the analysis visits a loop's ops once per round.
  mutable std::unordered_map<const Op *, ScratchUse> uses_;
  ScratchUse decide(const Op &op) const;
  // The layout the lowering holds `v` in (its encoding).
  const LinearLayout &layout(const Value *v) const;
};

} // namespace tilec::nvidia
