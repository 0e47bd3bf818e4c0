// The type rules of Tile IR, stated in one place.
#pragma once

#include "ir/ir.h"

namespace tilec {

// Throws InternalError naming the first op that breaks a rule. GPU-level ops
// (gpu_ops.def) are allowed only with `gpuLevel`, on a backend's copy.
void verify(const Function &fn, bool gpuLevel = false);

} // namespace tilec
