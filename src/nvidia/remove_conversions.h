// The conversion cleanup pass (remove_conversions.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Requires: the layout passes ran. Drops each gpu.convert_layout whose
// operand already has the layout it converts to (earlier passes insert some
// before later ones give the operand that layout); preserves everything else.
void removeConversions(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
