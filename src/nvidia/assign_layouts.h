// The GPU layout pass (assign_layouts.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Puts tensor-core accumulator layouts into the types of `fn` (a copy the
// backend owns) and the gpu.convert_layout ops that make them hold.
void assignLayouts(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
