// Requires: verified IR. Preserves: semantics up to rounding, verified form.
// Invalidates: value ids.
//
// `acc + dot(a, b, 0)` becomes `dot(a, b, acc)` when the dot's result has no
// other use: the tensor cores then accumulate in place instead of into fresh
// zeros that an add folds in afterwards (Triton combines the two the same way).
// The sum is rounded once instead of twice. As in Triton, not an fp8 dot
// whose max_num_imprecise_acc (sema records it) is other than 0, the default
// on Hopper: the add stays in f32, so that the error of the tensor cores'
// narrower sums of fp8 products does not grow with the loop over K. (At 0 the
// folded dot adds in f32 after every instruction: lower_wgmma.cpp.)
#include "passes/passes.h"

namespace tilec {

bool foldDotAccumulate(Function &fn) {
  auto uses = countUses(*fn.body);
  std::vector<std::pair<Op *, int>> found; // (add, the side its dot is on)
  walk(*fn.body, [&](Op *op) {
    if (op->kind != OpKind::Add || !op->result()->type.isTensor())
      return;
    for (int side = 0; side < 2; ++side) {
      Value *d = op->operand(side), *acc = op->operand(1 - side);
      Op *dot = d->def;
      if (dot && dot->kind == OpKind::Dot && uses[d] == 1 && isZeroConstant(dot->operand(2)) &&
          acc->type == d->type && dot->parent == op->parent &&
          dot->intAttr("max_num_imprecise_acc", 0) == 0) {
        found.push_back({op, side});
        return;
      }
    }
  });
  for (auto [add, side] : found) {
    Value *d = add->operand(side), *acc = add->operand(1 - side);
    Op *dot = d->def;
    dot->operands[2] = acc;
    // The dot moves to just before the add: acc may be defined after the dot.
    Block &block = *add->parent;
    size_t dotAt = 0;
    while (block.ops[dotAt].get() != dot)
      ++dotAt;
    std::unique_ptr<Op> moved = std::move(block.ops[dotAt]);
    block.ops.erase(block.ops.begin() + (long)dotAt);
    size_t addAt = 0;
    while (block.ops[addAt].get() != add)
      ++addAt;
    block.ops.insert(block.ops.begin() + (long)addAt, std::move(moved));
    // The add is left adding zero: its users take the dot's result; DCE drops it.
    replaceAllUses(*fn.body, add->result(), d);
  }
  return !found.empty();
}

} // namespace tilec
