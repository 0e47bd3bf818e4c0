// Requires: verified IR. Preserves: semantics, verified form. Invalidates: value ids.
//
// Removes ops whose results are unused and that do nothing else: pure ops, loads
// and block loads (a read only), and for/if/while whose regions hold no EFFECT op. Also drops
// results nobody uses of `if` (with their yield operands) and loop-carried values
// of `for` that only feed themselves: the result is unused and the body argument
// flows, through pure ops of the body, only into the yield at its own position.
// Repeats until nothing more goes.
#include "passes/passes.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tilec {

namespace {

bool hasEffects(const Block &block) {
  for (const auto &op : block.ops) {
    if (op->has(EFFECT))
      return true;
    for (const auto &region : op->regions)
      if (hasEffects(*region))
        return true;
  }
  return false;
}

bool isControlFlow(OpKind kind) {
  return kind == OpKind::For || kind == OpKind::If || kind == OpKind::While;
}

// Whether dropping the op changes nothing but its results.
bool isRemovable(const Op &op) {
  if (op.has(TERMINATOR) || op.has(EFFECT))
    return false;
  if (op.kind == OpKind::Load || op.kind == OpKind::LoadBlock)
    return true; // only reads memory
  if (op.kind == OpKind::InlineAsm)
    return op.intAttr("pure") != 0;
  if (op.regions.empty())
    return op.has(PURE);
  if (!isControlFlow(op.kind))
    return false;
  for (const auto &region : op.regions)
    if (hasEffects(*region))
      return false;
  return true;
}

bool isUnused(const Op &op, UseCounts &counts) {
  for (const auto &r : op.results)
    if (useCount(counts, r.get()) != 0)
      return false;
  return true;
}

// Takes back the uses by `op` and everything inside it.
void forgetUses(Op &op, UseCounts &counts) {
  for (const Value *v : op.operands)
    --counts[v];
  for (auto &region : op.regions)
    walk(*region, [&](Op *inner) {
      for (const Value *v : inner->operands)
        --counts[v];
    });
}

// One backward sweep: users go before the ops that define their operands.
// The survivors are moved out in one pass (erasing each dead op in place
// would shift the rest of the block every time).
bool removeDeadOps(Block &block, UseCounts &counts) {
  bool changed = false;
  std::vector<std::unique_ptr<Op>> kept;
  kept.reserve(block.ops.size());
  for (size_t i = block.ops.size(); i-- > 0;) {
    Op &op = *block.ops[i];
    if (isRemovable(op) && isUnused(op, counts)) {
      forgetUses(op, counts);
      block.ops[i].reset();
      changed = true;
      continue;
    }
    for (auto &region : op.regions)
      changed |= removeDeadOps(*region, counts);
    kept.push_back(std::move(block.ops[i]));
  }
  std::reverse(kept.begin(), kept.end());
  block.ops = std::move(kept);
  return changed;
}

// --- unused results of if and for

template <typename T> void eraseAt(std::vector<T> &items, size_t i) {
  items.erase(items.begin() + i);
}

void renumberIndices(std::vector<std::unique_ptr<Value>> &values) {
  for (size_t i = 0; i < values.size(); ++i)
    values[i]->index = (int)i;
}

bool dropUnusedIfResults(Op &op, UseCounts &counts) {
  bool changed = false;
  for (size_t i = op.results.size(); i-- > 0;) {
    if (useCount(counts, op.result(i)) != 0)
      continue;
    for (auto &region : op.regions)
      eraseAt(region->terminator()->operands, i);
    eraseAt(op.results, i);
    changed = true;
  }
  renumberIndices(op.results);
  return changed;
}

using Uses = std::unordered_map<const Value *, std::vector<std::pair<Op *, size_t>>>;

Uses usesIn(Block &body) {
  Uses uses;
  walk(body, [&](Op *op) {
    for (size_t i = 0; i < op->operands.size(); ++i)
      uses[op->operands[i]].push_back({op, i});
  });
  return uses;
}

// The ops of `body` that carried value `i` flows through, when it flows only
// through pure ops of the body's top level into yield operand `i`; else false.
bool carriedOnlyToItself(Block &body, Uses &uses, size_t i, std::unordered_set<Op *> &through) {
  Op *yield = body.terminator();
  std::vector<const Value *> work = {body.args[i + 1].get()};
  while (!work.empty()) {
    const Value *v = work.back();
    work.pop_back();
    for (auto [user, index] : uses[v]) {
      if (user == yield && index == i)
        continue;
      if (user == yield || user->parent != &body || !user->regions.empty() || !isRemovable(*user))
        return false;
      if (through.insert(user).second)
        for (const auto &r : user->results)
          work.push_back(r.get());
    }
  }
  return true;
}

void eraseOps(Block &body, const std::unordered_set<Op *> &ops) {
  for (size_t i = body.ops.size(); i-- > 0;)
    if (ops.count(body.ops[i].get()))
      eraseAt(body.ops, i);
}

bool dropUnusedCarried(Op &op, UseCounts &counts) {
  Block &body = *op.regions[0];
  bool changed = false;
  std::optional<Uses> uses; // the body's, until an erase changes them
  for (size_t i = op.results.size(); i-- > 0;) {
    std::unordered_set<Op *> through;
    if (useCount(counts, op.result(i)) != 0)
      continue;
    if (!uses)
      uses = usesIn(body);
    if (!carriedOnlyToItself(body, *uses, i, through))
      continue;
    uses.reset();
    eraseOps(body, through);
    eraseAt(body.terminator()->operands, i);
    eraseAt(body.args, i + 1);
    eraseAt(op.operands, i + 3);
    eraseAt(op.results, i);
    changed = true;
  }
  renumberIndices(op.results);
  renumberIndices(body.args);
  return changed;
}

// `counts`: the uses in `body` as they are.
bool dropUnusedResults(Block &body, UseCounts &counts) {
  bool changed = false;
  walk(body, [&](Op *op) {
    if (op->kind == OpKind::If)
      changed |= dropUnusedIfResults(*op, counts);
    else if (op->kind == OpKind::For)
      changed |= dropUnusedCarried(*op, counts);
  });
  return changed;
}

} // namespace

bool eliminateDeadCode(Block &body) {
  bool changed = false;
  for (;;) {
    UseCounts counts = countUses(body);
    bool removed = removeDeadOps(body, counts); // (keeps `counts` up to date)
    bool dropped = dropUnusedResults(body, counts);
    if (!removed && !dropped)
      return changed;
    changed = true;
  }
}

bool eliminateDeadCode(Function &fn) { return eliminateDeadCode(*fn.body); }

} // namespace tilec
