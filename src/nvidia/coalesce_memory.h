// The coalescing pass (coalesce_memory.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Gives the loads and stores of tensors of addresses in `fn` (a copy the
// backend owns) blocked layouts whose fastest dim is the one their addresses
// run along, so that each thread moves whole vectors and a warp whole lines.
void coalesceMemory(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
