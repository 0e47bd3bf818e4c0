// The layout propagation pass (propagate_layouts.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Requires: assignLayouts and coalesceMemory ran (dot results and loads carry
// their layouts). Carries those encodings through the values computed from
// them, into loops and ifs, and back into broadcasts; inserts a
// gpu.convert_layout wherever a value must change layout. Values computed
// from none of them keep no encoding (completeLayouts gives them one).
void propagateLayouts(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
