// Requires: verified IR. Preserves: semantics, verified form. Invalidates: value ids.
//
// Loop-invariant code motion: a pure op of a for or while body whose operands
// are all defined outside the loop moves to just before the loop, inner loops
// first, so that a chain of invariant ops moves as a whole. A pure op runs
// the same whether or not the loop does, so hoisting is safe even for loops
// that run zero times.
#include "passes/passes.h"

#include <unordered_set>

namespace tilec {

namespace {

void collectDefined(Block &block, std::unordered_set<const Value *> &defined) {
  for (auto &arg : block.args)
    defined.insert(arg.get());
  walk(block, [&](Op *op) {
    for (auto &r : op->results)
      defined.insert(r.get());
    for (auto &region : op->regions)
      for (auto &arg : region->args)
        defined.insert(arg.get());
  });
}

bool isHoistable(const Op &op, const std::unordered_set<const Value *> &inside) {
  if (!op.has(PURE) || !op.regions.empty() || op.has(TERMINATOR))
    return false;
  for (const Value *v : op.operands)
    if (inside.count(v))
      return false;
  return true;
}

// Hoists the invariant ops of the loop at `parent->ops[at]`; returns how many
// ops moved (they now sit just before the loop).
int hoistFrom(Block &parent, size_t at) {
  Op *loop = parent.ops[at].get();
  std::unordered_set<const Value *> inside;
  for (auto &region : loop->regions)
    collectDefined(*region, inside);
  int moved = 0;
  for (auto &region : loop->regions) {
    Block &body = *region;
    for (size_t k = 0; k < body.ops.size();) {
      if (!isHoistable(*body.ops[k], inside)) {
        ++k;
        continue;
      }
      std::unique_ptr<Op> op = std::move(body.ops[k]);
      body.ops.erase(body.ops.begin() + (long)k);
      for (auto &r : op->results)
        inside.erase(r.get());
      op->parent = &parent;
      parent.ops.insert(parent.ops.begin() + (long)(at + moved), std::move(op));
      ++moved;
    }
  }
  return moved;
}

bool hoistIn(Block &block) {
  bool changed = false;
  for (size_t k = 0; k < block.ops.size(); ++k) {
    Op &op = *block.ops[k];
    for (auto &region : op.regions)
      changed |= hoistIn(*region);
    if (op.kind != OpKind::For && op.kind != OpKind::While)
      continue;
    int moved = hoistFrom(block, k);
    k += moved;
    changed |= moved > 0;
  }
  return changed;
}

} // namespace

bool hoistLoopInvariants(Function &fn) { return hoistIn(*fn.body); }

} // namespace tilec
