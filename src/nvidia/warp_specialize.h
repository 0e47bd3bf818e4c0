// The warp specialization pass (warp_specialize.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Requires: gpu-pipeline-loops ran. On sm_90a, where a loop asks for it
// (tl.range(warp_specialize=True)) and every loop it holds that pipelines its
// loads copies them all by TMA into tiles wgmma dots read, the kernel's body
// moves into region 0 of one gpu.warp_specialize, and region 1 gets the
// producer: the body's scalar computations those copies' addresses and the
// loops' trip counts need, with a gpu.produce per iteration in place of the
// loads. Else (another target, a copy it cannot compute from scalars alone)
// the kernel stays as it is.
void warpSpecialize(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
