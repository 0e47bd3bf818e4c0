// The layout completion pass (complete_layouts.cpp).
#pragma once

#include "ir/ir.h"
#include "nvidia/codegen.h"

namespace tilec::nvidia {

// Requires: gpu-propagate-layouts ran. Gives every tensor value still without
// an encoding the layout the lowering computes it in, so that every tensor of
// GPU IR carries one: the default blocked layout for ranges, splats and
// constants, the layout derived from the operand's for views, an operand's
// for elementwise ops, the slice of the operand's for reductions, the scan
// layout for scans and sorts, and for loops and ifs what they carry. An
// operand read in another layout than it holds, that cannot be recomputed
// there, then arrives through an explicit gpu.convert_layout. (Values the
// lowering recomputes where they are read are encoded in the layout they
// would be computed in on their own.)
void completeLayouts(Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
