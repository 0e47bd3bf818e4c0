// Requires: verified IR. Preserves: semantics, verified form. Invalidates: value ids.
//
// Merges a pure, region-free op into an earlier one of the same kind, operands,
// attributes and result types that dominates it: earlier in the same block or in
// an enclosing block. Walks regions with a scoped table of the ops seen so far;
// commutative ops are keyed with their operands in a canonical order.
#include "passes/passes.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace tilec {

namespace {

void appendAttr(std::string &key, const Attr &attr) {
  key += std::to_string(attr.index()) + ":";
  if (auto *i = std::get_if<int64_t>(&attr)) {
    key += std::to_string(*i);
  } else if (auto *f = std::get_if<double>(&attr)) {
    uint64_t bits; // by bits: 0.0 and -0.0 differ, a NaN equals itself
    std::memcpy(&bits, f, sizeof bits);
    key += std::to_string(bits);
  } else if (auto *s = std::get_if<std::string>(&attr)) {
    key += std::to_string(s->size()) + ":" + *s;
  } else {
    for (int64_t v : std::get<std::vector<int64_t>>(attr))
      key += std::to_string(v) + ",";
  }
  key += ";";
}

// What makes two ops equal: kind, operands (by id), attributes, result types.
std::string keyOf(const Op &op) {
  std::vector<int> ids;
  for (const Value *v : op.operands)
    ids.push_back(v->id);
  if (op.has(COMMUTATIVE))
    std::sort(ids.begin(), ids.end());
  std::string key = std::to_string((int)op.kind) + "(";
  for (int id : ids)
    key += std::to_string(id) + ",";
  key += ")";
  for (const auto &[name, value] : op.attrs) {
    key += name + "=";
    appendAttr(key, value);
  }
  for (const auto &r : op.results)
    key += r->type.str() + ",";
  return key;
}

bool isCandidate(const Op &op) { return op.has(PURE) && op.regions.empty(); }

class Eliminator {
public:
  explicit Eliminator(Function &fn) : fn_(fn) {}
  bool run(Block &block);

private:
  Function &fn_;
  std::unordered_map<std::string, Op *> seen_; // the ops visible at this point
  bool changed_ = false;

  void replaceResults(Op &op, Op &earlier);
};

void Eliminator::replaceResults(Op &op, Op &earlier) {
  for (size_t r = 0; r < op.results.size(); ++r)
    replaceAllUses(*fn_.body, op.result(r), earlier.result(r));
}

// Walks a block; the ops it adds to the table leave it at the block's end.
bool Eliminator::run(Block &block) {
  std::vector<std::string> scope;
  for (size_t i = 0; i < block.ops.size();) {
    Op &op = *block.ops[i];
    for (auto &region : op.regions)
      run(*region);
    if (!isCandidate(op)) {
      ++i;
      continue;
    }
    std::string key = keyOf(op);
    auto earlier = seen_.find(key);
    if (earlier != seen_.end()) {
      replaceResults(op, *earlier->second);
      block.ops.erase(block.ops.begin() + i);
      changed_ = true;
      continue;
    }
    seen_.emplace(key, &op);
    scope.push_back(std::move(key));
    ++i;
  }
  for (const std::string &key : scope)
    seen_.erase(key);
  return changed_;
}

} // namespace

bool eliminateCommonSubexpressions(Function &fn) {
  fn.renumber();
  return Eliminator(fn).run(*fn.body);
}

} // namespace tilec
