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

// Attributes equal as the merge needs: floats by bits (0.0 and -0.0 differ, a
// NaN equals itself).
bool sameAttr(const Attr &a, const Attr &b) {
  if (a.index() != b.index())
    return false;
  if (auto *f = std::get_if<double>(&a)) {
    double g = std::get<double>(b);
    return std::memcmp(f, &g, sizeof g) == 0;
  }
  return a == b;
}

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The key of an op: kind, operands, attributes and result types, compared in
// place (no text built per op). A commutative op's operands are compared in
// id order, kept in `sorted`; other ops' are read from the op.
struct OpKey {
  const Op *op;
  std::vector<const Value *> sorted;
  size_t hash;

  explicit OpKey(const Op &o) : op(&o), hash((size_t)o.kind) {
    if (o.has(COMMUTATIVE)) {
      sorted.assign(o.operands.begin(), o.operands.end());
      std::sort(sorted.begin(), sorted.end(),
                [](const Value *a, const Value *b) { return a->id < b->id; });
      for (const Value *v : sorted)
        hash = mix(hash, (size_t)v->id);
    } else {
      for (const Value *v : o.operands)
        hash = mix(hash, (size_t)v->id);
    }
    for (const auto &[name, value] : o.attrs) {
      hash = mix(hash, std::hash<std::string>()(name));
      if (auto *i = std::get_if<int64_t>(&value))
        hash = mix(hash, (size_t)*i);
    }
    for (const auto &r : o.results) {
      hash = mix(hash, (size_t)r->type.dtype);
      for (int64_t d : r->type.shape)
        hash = mix(hash, (size_t)d);
    }
  }

  bool operator==(const OpKey &k) const {
    const Op &a = *op, &b = *k.op;
    if (a.kind != b.kind || a.operands.size() != b.operands.size() ||
        a.attrs.size() != b.attrs.size() || a.results.size() != b.results.size())
      return false;
    if (a.has(COMMUTATIVE) ? sorted != k.sorted
                           : !std::equal(a.operands.begin(), a.operands.end(), b.operands.begin()))
      return false;
    for (size_t i = 0; i < a.attrs.size(); ++i)
      if (a.attrs[i].first != b.attrs[i].first || !sameAttr(a.attrs[i].second, b.attrs[i].second))
        return false;
    for (size_t i = 0; i < a.results.size(); ++i) {
      const Type &x = a.results[i]->type, &y = b.results[i]->type;
      if (!(x == y) || !x.sameEncoding(y))
        return false;
    }
    return true;
  }
};

struct OpKeyHash {
  size_t operator()(const OpKey &k) const { return k.hash; }
};

bool isCandidate(const Op &op) { return op.has(PURE) && op.regions.empty(); }

class Eliminator {
public:
  // `values`: how many the function has, at least one per op the tables can
  // hold (they never rehash, so the positions of entries stay valid until
  // they are erased).
  explicit Eliminator(size_t values) {
    seen_.reserve(values);
    replaced_.reserve(values);
  }
  bool run(Block &block);

private:
  using Seen = std::unordered_map<OpKey, Op *, OpKeyHash>;
  Seen seen_;                                           // the ops visible at this point
  std::unordered_map<const Value *, Value *> replaced_; // results of merged ops -> the earlier ones
  bool changed_ = false;
};

// Walks a block; the ops it adds to the table leave it at the block's end.
// Uses are rewritten as they are reached (a definition comes before its uses),
// and merged ops are dropped at the end: one pass, not a walk per merge.
bool Eliminator::run(Block &block) {
  std::vector<Seen::iterator> scope; // the entries this block added to seen_
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
    OpKey key(op);
    auto earlier = seen_.find(key);
    if (earlier != seen_.end()) {
      for (size_t r = 0; r < op.results.size(); ++r)
        replaced_[op.result((int)r)] = earlier->second->result((int)r);
      merged.push_back(&op);
      continue;
    }
    scope.push_back(seen_.emplace(std::move(key), &op).first);
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
  for (Seen::iterator entry : scope)
    seen_.erase(entry);
  return changed_;
}

} // namespace

bool eliminateCommonSubexpressions(Function &fn) {
  return Eliminator(fn.renumber()).run(*fn.body);
}

} // namespace tilec
