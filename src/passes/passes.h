// The Tile IR passes. Each lives in its own file, is one function, and returns
// whether it changed anything.
#pragma once

#include <functional>

#include "ir/ir.h"

namespace tilec {

// Folds ops whose operands are constants, and simple identities (x + 0, x * 1,
// splat of a constant, cast of a constant, if on a constant condition).
// Requires: verified IR. Preserves: semantics. Invalidates: value ids.
bool foldConstants(Function &fn);

// Merges pure ops with the same kind, operands, attributes and types, where the
// earlier one dominates the later one. Invalidates: value ids.
bool eliminateCommonSubexpressions(Function &fn);

// Moves pure ops of loop bodies whose operands are defined outside the loop
// to just before it. Invalidates: value ids.
bool hoistLoopInvariants(Function &fn);

// Folds `acc + dot(a, b, 0)` into `dot(a, b, acc)` where the dot has no other
// use. Invalidates: value ids.
bool foldDotAccumulate(Function &fn);

// Flattens each for marked flatten=1 whose body is pure ops, one inner for
// with bounds it does not change, and anything after: one loop over every pair
// of iterations (flatten_loops.cpp). Invalidates: value ids.
bool flattenLoops(Function &fn);

// Unrolls each for marked loop_unroll_factor=F > 1: F copies of the body per
// iteration, then a loop over the iterations left (unroll_loops.cpp).
// Invalidates: value ids.
bool unrollLoops(Function &fn);

// --- helpers of the loop passes (loops.cpp)

// The value of scalar integer constant `v` (`known` says whether it is one).
int64_t constantOf(const Value *v, bool &known);

// The number of iterations of range(lb, ub, step), at least 0, built at the
// end of `b`'s block in the induction variable's type.
Value *tripCount(Builder &b, Value *lb, Value *ub, Value *step);

// Replaces block.ops[at] with the ops `build` appends through the builder it
// is given, at that place; `build` gets the op (to read, or to put back
// itself). Returns how many ops now stand where it stood.
size_t replaceOp(Block &block, size_t at,
                 const std::function<void(Builder &, std::unique_ptr<Op>)> &build);

// Removes pure ops whose results are unused, and unused loop-carried values.
// Invalidates: value ids.
bool eliminateDeadCode(Function &fn);
// The same within one block (a region a pass builds apart from the body).
bool eliminateDeadCode(Block &body);

} // namespace tilec
