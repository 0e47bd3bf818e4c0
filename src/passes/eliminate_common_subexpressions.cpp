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
  bool run(Block &block);

private:
  std::unordered_map<std::string, Op *> seen_;         // the ops visible at this point
  std::unordered_map<const Value *, Value *> replaced_; // results of merged ops -> the earlier ones
  bool changed_ = false;
};

// Walks a block; the ops it adds to the table leave it at the block's end.
// Uses are rewritten as they are reached (a definition comes before its uses),
// and merged ops are dropped at the end: one pass, not a walk per merge.
bool Eliminator::run(Block &block) {
  std::vector<std::string> scope;
  std::vector<const Op *> merged;
  for (auto &opPtr : block.ops) {
    Op &op = *opPtr;
    for (Value *&v : op.operands)
      if (auto it = replaced_.find(v); it != replaced_.end())
        v = it->second;
    for (auto &region : op.regions)
      run(*region);
    if (!isCandidate(op))
      continue;
    std::string key = keyOf(op);
    auto earlier = seen_.find(key);
    if (earlier != seen_.end()) {
      for (size_t r = 0; r < op.results.size(); ++r)
        replaced_[op.result((int)r)] = earlier->second->result((int)r);
      merged.push_back(&op);
      continue;
    }
    seen_.emplace(key, &op);
    scope.push_back(std::move(key));
  }
  if (!merged.empty()) {
    changed_ = true;
    std::unordered_map<const Op *, bool> drop;
    for (const Op *op : merged)
      drop[op] = true;
    block.ops.erase(std::remove_if(block.ops.begin(), block.ops.end(),
                                   [&](const std::unique_ptr<Op> &op) { return drop.count(op.get()); }),
                    block.ops.end());
  }
  for (const std::string &key : scope)
    seen_.erase(key);
  return changed_;
}

} // namespace

bool eliminateCommonSubexpressions(Function &fn) {
  fn.renumber();
  return Eliminator().run(*fn.body);
}

} // namespace tilec
