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

AxisInfo pessimistic(const Type &t) { return AxisInfo{RankVector<AxisInfo::Dim>(dims(t))}; }

AxisInfo uniform(const Type &t, int64_t divisibility) {
  AxisInfo info = pessimistic(t);
  for (int d = 0; d < dims(t); ++d) {
    info.dims[d].divisibility = divisibility;
    info.dims[d].constancy = extent(t, d);
  }
  return info;
}

AxisInfo meet(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo out = a;
  for (size_t d = 0; d < a.dims.size() && d < b.dims.size(); ++d) {
    out.dims[d].contiguity = std::gcd(a.dims[d].contiguity, b.dims[d].contiguity);
    out.dims[d].divisibility = std::gcd(a.dims[d].divisibility, b.dims[d].divisibility);
    out.dims[d].constancy = std::gcd(a.dims[d].constancy, b.dims[d].constancy);
  }
  return out;
}

bool isConstantAlong(const AxisInfo &a, const Type &t, int d) {
  return a.dims[d].constancy == extent(t, d);
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

  // By reference: an unknown value enters the map as pessimistic (the map's
  // nodes stay where they are as it grows).
  const AxisInfo &get(const Value *v) {
    auto it = map_.find(v);
    if (it == map_.end())
      it = map_.emplace(v, pessimistic(v->type)).first;
    return it->second;
  }

  void walk(const Block &block) {
    for (auto &op : block.ops)
      visit(*op);
  }

  void visitLoop(const Op &op) {
    const Block &body = *op.regions[0];
    bool isFor = op.kind == OpKind::For;
    size_t firstInit = isFor ? 3 : 0;
    if (isFor) { // lb + k * step: a multiple of whatever divides both
      int64_t div = std::gcd(get(op.operand(0)).dims[0].divisibility,
                             get(op.operand(2)).dims[0].divisibility);
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
        if (merged.dims != get(arg).dims) {
          map_[arg] = std::move(merged);
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
    const std::pair<const char *, int64_t AxisInfo::Dim::*> hints[] = {
        {"multiple_of", &AxisInfo::Dim::divisibility},
        {"max_contiguous", &AxisInfo::Dim::contiguity},
        {"max_constancy", &AxisInfo::Dim::constancy}};
    for (auto [name, field] : hints) {
      std::vector<int64_t> values = op.intsAttr(name);
      for (size_t d = 0; d < values.size() && d < info.dims.size(); ++d)
        info.dims[d].*field = std::max(info.dims[d].*field, values[d]);
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
      out.dims[0].contiguity = t.shape[0];
      out.dims[0].divisibility = powerOf2Dividing(op.intAttr("start"));
      return out;
    case OpKind::Splat: {
      const AxisInfo &s = get(op.operand(0));
      return uniform(t, s.dims[0].divisibility);
    }
    case OpKind::ConvertLayout: // the same values, elsewhere
      return get(op.operand(0));
    case OpKind::Broadcast: {
      const AxisInfo &s = get(op.operand(0));
      const Type &st = op.operand(0)->type;
      for (int d = 0; d < n; ++d) {
        bool widened = st.shape[d] == 1 && t.shape[d] != 1;
        out.dims[d].contiguity = widened ? 1 : s.dims[d].contiguity;
        out.dims[d].divisibility = s.dims[d].divisibility;
        out.dims[d].constancy = widened ? t.shape[d] : s.dims[d].constancy;
      }
      return out;
    }
    case OpKind::ExpandDims: {
      const AxisInfo &s = get(op.operand(0));
      int axis = (int)op.intAttr("axis");
      if (op.operand(0)->type.isScalar())
        return uniform(t, s.dims[0].divisibility);
      out = s;
      out.dims.insert(out.dims.begin() + axis, AxisInfo::Dim{1, s.dims[0].divisibility, 1});
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
      const AxisInfo &a = get(op.operand(0)), &b = get(op.operand(1));
      for (int d = 0; d < n; ++d)
        out.dims[d].constancy = std::gcd(a.dims[d].constancy, b.dims[d].constancy);
      return out;
    }
    case OpKind::Select: {
      const AxisInfo &c = get(op.operand(0)), &x = get(op.operand(1)), &y = get(op.operand(2));
      for (int d = 0; d < n; ++d) {
        out.dims[d].constancy =
            std::gcd(c.dims[d].constancy, std::gcd(x.dims[d].constancy, y.dims[d].constancy));
        out.dims[d].contiguity =
            std::gcd(c.dims[d].constancy, std::gcd(x.dims[d].contiguity, y.dims[d].contiguity));
        out.dims[d].divisibility = std::gcd(x.dims[d].divisibility, y.dims[d].divisibility);
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
    const AxisInfo &a = get(op.operand(0)), &b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    int64_t scale = op.kind == OpKind::AddPtr ? dtypeBytes(t.pointee) : 1;
    for (int d = 0; d < dims(t); ++d) {
      // c - arange runs backwards: only a - c keeps a's contiguity.
      out.dims[d].contiguity = op.kind == OpKind::Sub
                                   ? std::gcd(a.dims[d].contiguity, b.dims[d].constancy)
                                   : std::max(std::gcd(a.dims[d].contiguity, b.dims[d].constancy),
                                              std::gcd(a.dims[d].constancy, b.dims[d].contiguity));
      int64_t bdiv = std::min(b.dims[d].divisibility * scale, kMaxDivisibility);
      out.dims[d].divisibility = std::gcd(a.dims[d].divisibility, bdiv);
      out.dims[d].constancy = std::gcd(a.dims[d].constancy, b.dims[d].constancy);
    }
    return out;
  }

  AxisInfo inferMul(const Op &op, const Type &t) {
    const AxisInfo &a = get(op.operand(0)), &b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    for (int d = 0; d < dims(t); ++d) {
      out.dims[d].divisibility =
          std::min(a.dims[d].divisibility * b.dims[d].divisibility, kMaxDivisibility);
      out.dims[d].constancy = std::gcd(a.dims[d].constancy, b.dims[d].constancy);
    }
    return out;
  }

  AxisInfo inferDivRem(const Op &op, const Type &t) {
    const AxisInfo &a = get(op.operand(0)), &b = get(op.operand(1));
    AxisInfo out = pessimistic(t);
    const Type &bt = op.operand(1)->type;
    for (int d = 0; d < dims(t); ++d) {
      bool byUniform = isConstantAlong(b, bt, d);
      int64_t run = byUniform ? std::gcd(a.dims[d].contiguity, b.dims[d].divisibility) : 1;
      if (op.kind == OpKind::IRem) {
        out.dims[d].contiguity = run;
        out.dims[d].divisibility = std::gcd(a.dims[d].divisibility, b.dims[d].divisibility);
        out.dims[d].constancy = a.dims[d].constancy;
      } else {
        out.dims[d].constancy = std::max(a.dims[d].constancy, run);
      }
    }
    return out;
  }

  AxisInfo inferCompare(const Op &op, const Type &t) {
    const AxisInfo &a = get(op.operand(0)), &b = get(op.operand(1));
    const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
    AxisInfo out = pessimistic(t);
    for (int d = 0; d < dims(t); ++d) {
      int64_t c = std::gcd(a.dims[d].constancy, b.dims[d].constancy);
      // A run s, s+1, ... compared with a value x constant along d, both
      // multiples of g: s + i < x (and >=) is the same for every i < g. Not
      // so for <=, > (s == x), == and !=.
      bool runLeft = op.kind == OpKind::CmpLt || op.kind == OpKind::CmpGe;
      bool runRight = op.kind == OpKind::CmpGt || op.kind == OpKind::CmpLe;
      if (runLeft && isConstantAlong(b, bt, d))
        c = std::max(c, std::gcd(a.dims[d].contiguity,
                                 std::gcd(a.dims[d].divisibility, b.dims[d].divisibility)));
      if (runRight && isConstantAlong(a, at, d))
        c = std::max(c, std::gcd(b.dims[d].contiguity,
                                 std::gcd(b.dims[d].divisibility, a.dims[d].divisibility)));
      out.dims[d].constancy = c;
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
  return axisInfoOf(map, v).dims[0].divisibility;
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
