// Axis-info analysis: one forward walk, loops iterated to a fixed point.
#include "nvidia/axis_info.h"

#include <algorithm>
#include <numeric>

namespace tilec::nvidia {

namespace {

constexpr int64_t kMaxDivisibility = int64_t{1} << 30;

int64_t powerOf2Dividing(int64_t v) {
  if (v == 0)
    return kMaxDivisibility;
  int64_t p = v & -v;
  return std::min(p < 0 ? kMaxDivisibility : p, kMaxDivisibility);
}

int dims(const Type &t) { return std::max(1, t.rank()); }
int64_t extent(const Type &t, int d) { return t.isTensor() ? t.shape[d] : 1; }

AxisInfo pessimistic(const Type &t) {
  int n = dims(t);
  return AxisInfo{std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1),
                  std::vector<int64_t>(n, 1)};
}

AxisInfo uniform(const Type &t, int64_t divisibility) {
  AxisInfo info = pessimistic(t);
  for (int d = 0; d < dims(t); ++d) {
    info.divisibility[d] = divisibility;
    info.constancy[d] = extent(t, d);
  }
  return info;
}

AxisInfo meet(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo out = a;
  for (size_t d = 0; d < a.contiguity.size() && d < b.contiguity.size(); ++d) {
    out.contiguity[d] = std::gcd(a.contiguity[d], b.contiguity[d]);
    out.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
    out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
  }
  return out;
}

bool isConstantAlong(const AxisInfo &a, const Type &t, int d) {
  return a.constancy[d] == extent(t, d);
}

class Analysis {
public:
  explicit Analysis(const Function &fn) : fn_(fn) {}

  AxisInfoMap run() {
    const Block &body = *fn_.body;
    for (size_t k = 0; k < body.args.size(); ++k) {
      int64_t div = k < fn_.argDivisibility.size() ? fn_.argDivisibility[k] : 1;
      map_[body.args[k].get()] = uniform(body.args[k]->type, std::max<int64_t>(div, 1));
    }
    walk(body);
    return std::move(map_);
  }

private:
  const Function &fn_;
  AxisInfoMap map_;

  AxisInfo get(const Value *v) { return axisInfoOf(map_, v); }

  void walk(const Block &block) {
    for (auto &op : block.ops)
      visit(*op);
  }

  void visitLoop(const Op &op) {
    const Block &body = *op.regions[0];
    bool isFor = op.kind == OpKind::For;
    size_t firstInit = isFor ? 3 : 0;
    if (isFor) { // lb + k * step: a multiple of whatever divides both
      int64_t div = std::gcd(get(op.operand(0)).divisibility[0], get(op.operand(2)).divisibility[0]);
      map_[body.args[0].get()] = uniform(body.args[0]->type, std::max<int64_t>(div, 1));
    }
    size_t argBase = isFor ? 1 : 0;
    for (size_t k = firstInit; k < op.operands.size(); ++k)
      map_[body.args[argBase + k - firstInit].get()] = get(op.operand(k));
    for (int iter = 0; iter < 4; ++iter) {
      for (auto &region : op.regions)
        walk(*region);
      const Op *yield = op.regions.back()->terminator();
      bool changed = false;
      for (size_t k = 0; k < yield->operands.size(); ++k) {
        const Value *arg = body.args[argBase + k].get();
        AxisInfo merged = meet(get(arg), get(yield->operand(k)));
        if (merged.contiguity != get(arg).contiguity ||
            merged.divisibility != get(arg).divisibility ||
            merged.constancy != get(arg).constancy) {
          map_[arg] = merged;
          changed = true;
        }
      }
      if (!changed)
        break;
    }
    for (size_t k = 0; k < op.results.size(); ++k)
      map_[op.result(k)] = pessimistic(op.result(k)->type);
    if (op.kind == OpKind::While) { // the after region's args come from the condition
      const Block &after = *op.regions[1];
      for (auto &arg : after.args)
        map_[arg.get()] = pessimistic(arg->type);
      walk(after);
    }
  }

  void visit(const Op &op) {
    if (op.kind == OpKind::For || op.kind == OpKind::While) {
      visitLoop(op);
      return;
    }
    for (auto &region : op.regions)
      walk(*region);
    if (op.results.empty())
      return;
    const Type &t = op.result()->type;
    map_[op.result()] = withHints(op, infer(op, t));
    for (size_t k = 1; k < op.results.size(); ++k)
      map_[op.result(k)] = pessimistic(op.result(k)->type);
  }

  // What the kernel asserts of the value (tl.multiple_of, max_contiguous,
  // max_constancy), on top of what was inferred.
  static AxisInfo withHints(const Op &op, AxisInfo info) {
    const std::pair<const char *, std::vector<int64_t> AxisInfo::*> hints[] = {
        {"multiple_of", &AxisInfo::divisibility},
        {"max_contiguous", &AxisInfo::contiguity},
        {"max_constancy", &AxisInfo::constancy}};
    for (auto [name, field] : hints) {
      std::vector<int64_t> values = op.intsAttr(name);
      std::vector<int64_t> &known = info.*field;
      for (size_t d = 0; d < values.size() && d < known.size(); ++d)
        known[d] = std::max(known[d], values[d]);
    }
    return info;
  }

  AxisInfo infer(const Op &op, const Type &t) {
    int n = dims(t);
    AxisInfo out = pessimistic(t);
    switch (op.kind) {
    case OpKind::Constant:
      if (isFloat(t.dtype))
        return uniform(t, 1);
      return uniform(t, powerOf2Dividing(op.intAttr("value")));
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
      return uniform(t, 1);
    case OpKind::MakeRange:
      out.contiguity[0] = t.shape[0];
      out.divisibility[0] = powerOf2Dividing(op.intAttr("start"));
      return out;
    case OpKind::Splat: {
      AxisInfo s = get(op.operand(0));
      return uniform(t, s.divisibility[0]);
    }
    case OpKind::ConvertLayout: // the same values, elsewhere
      return get(op.operand(0));
    case OpKind::Broadcast: {
      AxisInfo s = get(op.operand(0));
      const Type &st = op.operand(0)->type;
      for (int d = 0; d < n; ++d) {
        bool widened = st.shape[d] == 1 && t.shape[d] != 1;
        out.contiguity[d] = widened ? 1 : s.contiguity[d];
        out.divisibility[d] = s.divisibility[d];
        out.constancy[d] = widened ? t.shape[d] : s.constancy[d];
      }
      return out;
    }
    case OpKind::ExpandDims: {
      AxisInfo s = get(op.operand(0));
      int axis = (int)op.intAttr("axis");
      if (op.operand(0)->type.isScalar())
        return uniform(t, s.divisibility[0]);
      out = s;
      out.contiguity.insert(out.contiguity.begin() + axis, 1);
      out.divisibility.insert(out.divisibility.begin() + axis, s.divisibility[0]);
      out.constancy.insert(out.constancy.begin() + axis, 1);
      return out;
    }
    case OpKind::Cast:
      if (isInteger(t.dtype) && isInteger(op.operand(0)->type.dtype) &&
          dtypeBits(t.dtype) >= dtypeBits(op.operand(0)->type.dtype))
        return get(op.operand(0));
      return out;
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::AddPtr:
      if (!isFloat(t.dtype))
        return inferAdd(op, t);
      return out;
    case OpKind::Mul:
      if (!isFloat(t.dtype))
        return inferMul(op, t);
      return out;
    case OpKind::IRem:
    case OpKind::IDiv:
      return inferDivRem(op, t);
    case OpKind::CmpEq:
    case OpKind::CmpNe:
    case OpKind::CmpLt:
    case OpKind::CmpLe:
    case OpKind::CmpGt:
    case OpKind::CmpGe:
      return inferCompare(op, t);
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Min:
    case OpKind::Max: {
      AxisInfo a = get(op.operand(0)), b = get(op.operand(1));
      for (int d = 0; d < n; ++d)
        out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
      return out;
    }
    case OpKind::Select: {
      AxisInfo c = get(op.operand(0)), x = get(op.operand(1)), y = get(op.operand(2));
      for (int d = 0; d < n; ++d) {
        out.constancy[d] = std::gcd(c.constancy[d], std::gcd(x.constancy[d], y.constancy[d]));
        out.contiguity[d] = std::gcd(c.constancy[d], std::gcd(x.contiguity[d], y.contiguity[d]));
        out.divisibility[d] = std::gcd(x.divisibility[d], y.divisibility[d]);
      }
      return out;
    }
    default:
      if (t.isScalar())
        return uniform(t, 1); // scalars are the same in every thread
      return out;
    }
  }

  AxisInfo inferAdd(const Op &op, const Type &t) {
    AxisInfo a = get(op.operand(0)), b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    int64_t scale = op.kind == OpKind::AddPtr ? dtypeBytes(t.pointee) : 1;
    for (int d = 0; d < dims(t); ++d) {
      // c - arange runs backwards: only a - c keeps a's contiguity.
      out.contiguity[d] = op.kind == OpKind::Sub
                              ? std::gcd(a.contiguity[d], b.constancy[d])
                              : std::max(std::gcd(a.contiguity[d], b.constancy[d]),
                                         std::gcd(a.constancy[d], b.contiguity[d]));
      int64_t bdiv = std::min(b.divisibility[d] * scale, kMaxDivisibility);
      out.divisibility[d] = std::gcd(a.divisibility[d], bdiv);
      out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    return out;
  }

  AxisInfo inferMul(const Op &op, const Type &t) {
    AxisInfo a = get(op.operand(0)), b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    for (int d = 0; d < dims(t); ++d) {
      out.divisibility[d] = std::min(a.divisibility[d] * b.divisibility[d], kMaxDivisibility);
      out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    return out;
  }

  AxisInfo inferDivRem(const Op &op, const Type &t) {
    AxisInfo a = get(op.operand(0)), b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    const Type &bt = op.operand(1)->type;
    for (int d = 0; d < dims(t); ++d) {
      bool byUniform = isConstantAlong(b, bt, d);
      int64_t run = byUniform ? std::gcd(a.contiguity[d], b.divisibility[d]) : 1;
      if (op.kind == OpKind::IRem) {
        out.contiguity[d] = run;
        out.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
        out.constancy[d] = a.constancy[d];
      } else {
        out.constancy[d] = std::max(a.constancy[d], run);
      }
    }
    return out;
  }

  AxisInfo inferCompare(const Op &op, const Type &t) {
    AxisInfo a = get(op.operand(0)), b = get(op.operand(1));
    const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
    AxisInfo out = pessimistic(t);
    for (int d = 0; d < dims(t); ++d) {
      int64_t c = std::gcd(a.constancy[d], b.constancy[d]);
      // A run s, s+1, ... compared with a value x constant along d, both
      // multiples of g: s + i < x (and >=) is the same for every i < g. Not
      // so for <=, > (s == x), == and !=.
      bool runLeft = op.kind == OpKind::CmpLt || op.kind == OpKind::CmpGe;
      bool runRight = op.kind == OpKind::CmpGt || op.kind == OpKind::CmpLe;
      if (runLeft && isConstantAlong(b, bt, d))
        c = std::max(c, std::gcd(a.contiguity[d], std::gcd(a.divisibility[d], b.divisibility[d])));
      if (runRight && isConstantAlong(a, at, d))
        c = std::max(c, std::gcd(b.contiguity[d], std::gcd(b.divisibility[d], a.divisibility[d])));
      out.constancy[d] = c;
    }
    return out;
  }
};

} // namespace

AxisInfoMap analyzeAxisInfo(const Function &fn) { return Analysis(fn).run(); }

AxisInfo axisInfoOf(const AxisInfoMap &map, const Value *v) {
  auto it = map.find(v);
  if (it != map.end())
    return it->second;
  return pessimistic(v->type);
}

namespace {

bool isConstantOne(const Value *v) {
  while (v->def && v->def->kind == OpKind::Cast)
    v = v->def->operand(0);
  return v->def && v->def->kind == OpKind::Constant && v->type.isScalar() &&
         isInteger(v->type.dtype) && v->def->intAttr("value") == 1;
}

int64_t scalarDivisibility(const AxisInfoMap &map, const Value *v) {
  return axisInfoOf(map, v).divisibility[0];
}

// Meets the offsets of `info` with the deltas of the advances from `from` back to `to`.
bool meetAdvances(const AxisInfoMap &map, const Value *from, const Value *to, BlockPtrInfo &info) {
  while (from != to) {
    if (!from->def || from->def->kind != OpKind::Advance)
      return false;
    for (size_t d = 0; d < info.offsetDivisibility.size(); ++d)
      info.offsetDivisibility[d] = std::gcd(info.offsetDivisibility[d],
                                            scalarDivisibility(map, from->def->operand(1 + d)));
    from = from->def->operand(0);
  }
  return true;
}

} // namespace

std::optional<BlockPtrInfo> blockPtrInfo(const AxisInfoMap &map, const Value *blockPtr) {
  const Value *v = blockPtr;
  // Advances and loop-carried values lead back to the make_block_ptr.
  std::vector<const Value *> path;
  while (v->def && v->def->kind == OpKind::Advance) {
    path.push_back(v);
    v = v->def->operand(0);
  }
  if (!v->def) {
    const Block *body = v->owner;
    if (!body || !body->parent || body->parent->kind != OpKind::For || v->index == 0)
      return std::nullopt;
    std::optional<BlockPtrInfo> info =
        blockPtrInfo(map, body->parent->operand(2 + v->index)); // the initial value
    if (!info || !meetAdvances(map, body->terminator()->operand(v->index - 1), v, *info))
      return std::nullopt;
    return meetAdvances(map, blockPtr, v, *info) ? info : std::nullopt;
  }
  if (v->def->kind != OpKind::MakeBlockPtr)
    return std::nullopt;
  const Op &make = *v->def;
  size_t rank = v->type.blockShape.size();
  BlockPtrInfo info;
  info.baseDivisibility = scalarDivisibility(map, make.operand(0));
  for (size_t d = 0; d < rank; ++d) {
    info.shapeDivisibility.push_back(scalarDivisibility(map, make.operand(1 + d)));
    info.strideDivisibility.push_back(scalarDivisibility(map, make.operand(1 + rank + d)));
    info.unitStride.push_back(isConstantOne(make.operand(1 + rank + d)));
    info.offsetDivisibility.push_back(scalarDivisibility(map, make.operand(1 + 2 * rank + d)));
  }
  info.order = make.intsAttr("order");
  if (!meetAdvances(map, blockPtr, v, info))
    return std::nullopt;
  return info;
}

} // namespace tilec::nvidia
