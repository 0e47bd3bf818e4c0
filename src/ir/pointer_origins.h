// Where a kernel's pointers come from: the kernel arguments a pointer derives
// from, and whether it derives from an address made at run time (an integer
// cast to a pointer, a pointer loaded from memory) that no argument bounds.
#pragma once

#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace tilec {

struct PointerOrigins {
  std::vector<int> arguments; // indices of the kernel's runtime arguments
  bool madeAtRunTime = false; // from int_to_ptr, or loaded from memory
};

// Follows `ptr` back through pointer arithmetic, selects, shape changes and
// loop-carried values to where it starts.
PointerOrigins pointerOrigins(const Function &fn, const Value *ptr);

// For each runtime argument of `fn`: whether a store or an atomic may write
// through a pointer derived from it.
std::vector<bool> storedArguments(const Function &fn);

// The memory ops whose address derives from a pointer made at run time: no
// argument bounds them (pointer tables), so the CPU backend cannot check them.
std::unordered_set<const Op *> accessesThroughRunTimePointers(const Function &fn);

} // namespace tilec
