// Tile IR data structures: the op table, attributes, the builder.
#include "ir/ir.h"

#include <algorithm>
#include <cstring>

namespace tilec {

static const OpInfo kOpInfos[] = {
#define TILEC_OP(name, mnemonic, operands, results, regions, flags)                                \
  {mnemonic, operands, results, regions, flags},
#include "ir/ops.def"
#include "ir/gpu_ops.def"
#undef TILEC_OP
};

const OpInfo &opInfo(OpKind kind) { return kOpInfos[(int)kind]; }

bool opKindFromMnemonic(const std::string &mnemonic, OpKind *kind) {
  for (size_t i = 0; i < sizeof(kOpInfos) / sizeof(kOpInfos[0]); ++i) {
    if (mnemonic == kOpInfos[i].mnemonic) {
      *kind = (OpKind)i;
      return true;
    }
  }
  return false;
}

Value *Block::addArg(Type t) {
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->owner = this;
  v->index = (int)args.size();
  args.push_back(std::move(v));
  return args.back().get();
}

void Op::setAttr(const std::string &name, Attr value) {
  auto it = std::lower_bound(attrs.begin(), attrs.end(), name,
                             [](const auto &a, const std::string &n) { return a.first < n; });
  if (it != attrs.end() && it->first == name) {
    it->second = std::move(value);
    return;
  }
  attrs.insert(it, {name, std::move(value)});
}

const Attr *Op::attr(const std::string &name) const {
  for (const auto &a : attrs)
    if (a.first == name)
      return &a.second;
  return nullptr;
}

int64_t Op::intAttr(const std::string &name, int64_t fallback) const {
  const Attr *a = attr(name);
  if (a && std::holds_alternative<int64_t>(*a))
    return std::get<int64_t>(*a);
  return fallback;
}

double Op::floatAttr(const std::string &name, double fallback) const {
  const Attr *a = attr(name);
  if (!a)
    return fallback;
  if (std::holds_alternative<double>(*a))
    return std::get<double>(*a);
  if (std::holds_alternative<int64_t>(*a))
    return (double)std::get<int64_t>(*a);
  return fallback;
}

std::vector<int64_t> Op::intsAttr(const std::string &name) const {
  const Attr *a = attr(name);
  if (a && std::holds_alternative<std::vector<int64_t>>(*a))
    return std::get<std::vector<int64_t>>(*a);
  return {};
}

std::string Op::strAttr(const std::string &name, const std::string &fallback) const {
  const Attr *a = attr(name);
  if (a && std::holds_alternative<std::string>(*a))
    return std::get<std::string>(*a);
  return fallback;
}

Function::Function() : body(std::make_unique<Block>()) {}

static void numberBlock(Block &block, int &next) {
  for (auto &arg : block.args)
    arg->id = next++;
  for (auto &op : block.ops) {
    for (auto &r : op->results)
      r->id = next++;
    for (auto &region : op->regions)
      numberBlock(*region, next);
  }
}

int Function::renumber() {
  int next = 0;
  numberBlock(*body, next);
  numValues = next;
  return next;
}

Op *Builder::create(OpKind kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
                    int numRegions) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->loc = loc_;
  op->parent = block_;
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    auto v = std::make_unique<Value>();
    v->type = std::move(resultTypes[i]);
    v->def = op.get();
    v->index = (int)i;
    op->results.push_back(std::move(v));
  }
  for (int i = 0; i < numRegions; ++i) {
    auto b = std::make_unique<Block>();
    b->parent = op.get();
    op->regions.push_back(std::move(b));
  }
  block_->ops.push_back(std::move(op));
  return block_->ops.back().get();
}

Value *Builder::constInt(int64_t v, Type t) {
  Op *op = create(OpKind::Constant, {}, {std::move(t)});
  op->setAttr("value", v);
  return op->result();
}

Value *Builder::constFloat(double v, Type t) {
  Op *op = create(OpKind::Constant, {}, {std::move(t)});
  op->setAttr("value", v);
  return op->result();
}

UseCounts::UseCounts(size_t values) {
  size_t n = 16;
  while (n < 2 * values)
    n *= 2;
  slots_.assign(n, {nullptr, 0});
}

size_t UseCounts::slot(const Value *v) const {
  size_t mask = slots_.size() - 1;
  size_t i = (reinterpret_cast<uintptr_t>(v) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask;
  while (slots_[i].first && slots_[i].first != v)
    i = (i + 1) & mask;
  return i;
}

int &UseCounts::operator[](const Value *v) {
  size_t i = slot(v);
  if (slots_[i].first)
    return slots_[i].second;
  if (2 * (used_ + 1) > slots_.size()) { // at most half full
    std::vector<std::pair<const Value *, int>> old(2 * slots_.size(), {nullptr, 0});
    old.swap(slots_);
    for (auto &e : old)
      if (e.first)
        slots_[slot(e.first)] = e;
    i = slot(v);
  }
  ++used_;
  slots_[i] = {v, 0};
  return slots_[i].second;
}

int UseCounts::get(const Value *v) const { return slots_[slot(v)].second; }

int useCount(const UseCounts &counts, const Value *v) { return counts.get(v); }

bool isDefinedIn(const Value *v, const Block &block) {
  for (const Block *b = v->def ? v->def->parent : v->owner; b;
       b = b->parent ? b->parent->parent : nullptr)
    if (b == &block)
      return true;
  return false;
}

void replaceAllUses(Block &block, Value *from, Value *to) {
  walk(block, [&](Op *op) {
    for (auto &operand : op->operands)
      if (operand == from)
        operand = to;
  });
}

Op *insertOp(Block &block, size_t at, OpKind kind, std::vector<Value *> operands, Type t,
             const Location &loc) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->loc = loc;
  op->parent = &block;
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->def = op.get();
  op->results.push_back(std::move(v));
  block.ops.insert(block.ops.begin() + (long)at, std::move(op));
  return block.ops[at].get();
}

Op *cloneOp(const Op &src, Block &to, std::unordered_map<const Value *, Value *> &map) {
  auto op = std::make_unique<Op>();
  op->kind = src.kind;
  for (Value *v : src.operands) {
    auto it = map.find(v);
    op->operands.push_back(it == map.end() ? v : it->second);
  }
  op->attrs = src.attrs;
  op->loc = src.loc;
  op->parent = &to;
  for (const auto &r : src.results) {
    auto v = std::make_unique<Value>(*r);
    v->def = op.get();
    map[r.get()] = v.get();
    op->results.push_back(std::move(v));
  }
  for (const auto &region : src.regions) {
    auto b = std::make_unique<Block>();
    b->parent = op.get();
    for (const auto &a : region->args)
      map[a.get()] = b->addArg(a->type);
    for (const auto &inner : region->ops)
      cloneOp(*inner, *b, map);
    op->regions.push_back(std::move(b));
  }
  to.ops.push_back(std::move(op));
  return to.ops.back().get();
}

std::unique_ptr<Function> cloneFunction(const Function &fn) {
  auto out = std::make_unique<Function>();
  out->name = fn.name;
  out->argNames = fn.argNames;
  out->argDivisibility = fn.argDivisibility;
  out->dependsOnTarget = fn.dependsOnTarget;
  std::unordered_map<const Value *, Value *> map;
  for (const auto &a : fn.body->args)
    map[a.get()] = out->body->addArg(a->type);
  for (const auto &op : fn.body->ops)
    cloneOp(*op, *out->body, map);
  out->renumber();
  return out;
}

UseCounts countUses(const Block &block) {
  size_t ops = 0; // (buckets for every op's result first: no rehashing as it fills)
  walk(const_cast<Block &>(block), [&](Op *) { ++ops; });
  UseCounts counts(ops);
  walk(const_cast<Block &>(block), [&](Op *op) {
    for (const Value *v : op->operands)
      ++counts[v];
  });
  return counts;
}

bool isZeroConstant(const Value *v) {
  const Op *d = v->def;
  return d && d->kind == OpKind::Constant && d->floatAttr("value") == 0 &&
         d->intAttr("value") == 0;
}

} // namespace tilec
