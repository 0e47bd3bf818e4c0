// The GPU layout pass (assign_layouts.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"
#include "nvidia/linear_layout.h"

namespace tilec::nvidia {

// Puts tensor-core accumulator layouts into the types of `fn` (a copy the
// backend owns) and the gpu.convert_layout ops that make them hold.
void assignLayouts(Function &fn, const GpuOptions &opts);

// `v` moved into encoding `e` by a gpu.convert_layout placed before `user`.
Value *convertBefore(Op *user, Value *v, const std::shared_ptr<const LayoutEncoding> &e);

} // namespace tilec::nvidia
