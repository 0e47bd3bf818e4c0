// Requires: verified IR. Preserves: semantics, verified form. Invalidates: value ids.
//
// Folds ops on constants (a `constant` of tensor type is a splat) to constants,
// simple identities to their operand, `if` on a constant condition to the taken
// region and zero-trip `for` loops to their inits; repeats to a fixed point.
// Integers wrap to their type's width like C; idiv/irem truncate toward zero and
// are not folded on a zero divisor or on MIN / -1. Floats are folded only for
// f32 and f64, and only for correctly rounded operations (+ - * / fmod sqrt fma
// min max abs neg floor ceil, comparisons, conversions): transcendental functions
// are left to the target, whose approximations may differ from the host's libm.
#include "passes/passes.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace tilec {

namespace {

// --- constants as the values they stand for

// An integer of type `d`, as int64: signed types sign-extended, unsigned
// types and i1 zero-extended (u64 keeps its bits).
int64_t wrapInt(uint64_t v, DType d) {
  int bits = dtypeBits(d);
  if (bits >= 64)
    return (int64_t)v;
  uint64_t mask = (uint64_t(1) << bits) - 1;
  v &= mask;
  bool signExtend = dtypeKind(d) == DKind::Int && d != DType::I1 && ((v >> (bits - 1)) & 1);
  return (int64_t)(signExtend ? (v | ~mask) : v);
}

bool isUnsignedLike(DType d) { return isUnsigned(d) || d == DType::I1; }
bool isFoldableFloat(DType d) { return d == DType::F32 || d == DType::F64; }
double roundTo(double v, DType d) { return d == DType::F32 ? (double)(float)v : v; }

struct Const {
  bool isFloat = false;
  int64_t i = 0; // wrapped to the type
  double f = 0;  // rounded to the type
};

std::optional<Const> constOf(const Value *v) {
  if (!v->def || v->def->kind != OpKind::Constant)
    return std::nullopt;
  const Attr *a = v->def->attr("value");
  DType d = v->type.dtype;
  const int64_t *i = a ? std::get_if<int64_t>(a) : nullptr;
  const double *f = a ? std::get_if<double>(a) : nullptr;
  if (isInteger(d) && i)
    return Const{false, wrapInt(*i, d), 0};
  if (isFoldableFloat(d) && (i || f))
    return Const{true, 0, roundTo(i ? (double)*i : *f, d)};
  return std::nullopt;
}

bool isIntConst(const Value *v, int64_t k) {
  auto c = constOf(v);
  return c && !c->isFloat && c->i == wrapInt(k, v->type.dtype);
}

bool isFloatConst(const Value *v, double k) {
  auto c = constOf(v);
  return c && c->isFloat && c->f == k && std::signbit(c->f) == std::signbit(k);
}

// --- integer folding

std::optional<int64_t> divide(OpKind kind, int64_t a, int64_t b, DType d) {
  int bits = dtypeBits(d);
  if (b == 0)
    return std::nullopt;
  if (isUnsignedLike(d))
    return wrapInt(kind == OpKind::IDiv ? (uint64_t)a / (uint64_t)b : (uint64_t)a % (uint64_t)b, d);
  int64_t min = wrapInt(uint64_t(1) << (bits - 1), d);
  if (a == min && b == -1)
    return std::nullopt; // overflows
  return kind == OpKind::IDiv ? a / b : a % b;
}

std::optional<int64_t> shift(OpKind kind, int64_t a, int64_t b, DType d) {
  if (b < 0 || b >= dtypeBits(d))
    return std::nullopt;
  if (kind == OpKind::Shl)
    return wrapInt((uint64_t)a << b, d);
  return isUnsignedLike(d) ? (int64_t)((uint64_t)a >> b) : a >> b;
}

// The high 64 bits of the 128-bit product, from 32-bit halves.
uint64_t mulHi64(uint64_t a, uint64_t b) {
  uint64_t aLo = a & 0xffffffffu, aHi = a >> 32, bLo = b & 0xffffffffu, bHi = b >> 32;
  uint64_t hiLo = aHi * bLo;
  uint64_t cross = ((aLo * bLo) >> 32) + (hiLo & 0xffffffffu) + aLo * bHi;
  return aHi * bHi + (hiLo >> 32) + (cross >> 32);
}

int64_t mulHi(int64_t a, int64_t b, DType d) {
  int bits = dtypeBits(d);
  if (bits == 64)
    return (int64_t)mulHi64(a, b);
  uint64_t mask = (uint64_t(1) << bits) - 1;
  return wrapInt((((uint64_t)a & mask) * ((uint64_t)b & mask)) >> bits, d);
}

// -1, 0 or 1 as a <, ==, > b, signed or not as the type says.
int order(int64_t a, int64_t b, DType d) {
  if (isUnsignedLike(d)) {
    uint64_t ua = a, ub = b;
    return ua < ub ? -1 : ua > ub;
  }
  return a < b ? -1 : a > b;
}

std::optional<int64_t> intBinary(OpKind kind, int64_t a, int64_t b, DType d) {
  uint64_t ua = a, ub = b;
  switch (kind) {
  case OpKind::Add:
    return wrapInt(ua + ub, d);
  case OpKind::Sub:
    return wrapInt(ua - ub, d);
  case OpKind::Mul:
    return wrapInt(ua * ub, d);
  case OpKind::IDiv:
  case OpKind::IRem:
    return divide(kind, a, b, d);
  case OpKind::And:
    return wrapInt(ua & ub, d);
  case OpKind::Or:
    return wrapInt(ua | ub, d);
  case OpKind::Xor:
    return wrapInt(ua ^ ub, d);
  case OpKind::Shl:
  case OpKind::Shr:
    return shift(kind, a, b, d);
  case OpKind::Min:
    return order(a, b, d) <= 0 ? a : b;
  case OpKind::Max:
    return order(a, b, d) >= 0 ? a : b;
  case OpKind::UMulHi:
    return mulHi(a, b, d);
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> intUnary(OpKind kind, int64_t a, DType d) {
  switch (kind) {
  case OpKind::Neg:
    return wrapInt(0 - (uint64_t)a, d);
  case OpKind::Not:
    return wrapInt(~(uint64_t)a, d);
  case OpKind::Abs:
    return isUnsignedLike(d) || a >= 0 ? a : wrapInt(0 - (uint64_t)a, d);
  default:
    return std::nullopt;
  }
}

// A comparison's result from the operands' order (unordered: a NaN took part).
std::optional<int64_t> compare(OpKind kind, int ord, bool unordered) {
  switch (kind) {
  case OpKind::CmpEq:
    return !unordered && ord == 0;
  case OpKind::CmpNe:
    return unordered || ord != 0;
  case OpKind::CmpLt:
    return !unordered && ord < 0;
  case OpKind::CmpLe:
    return !unordered && ord <= 0;
  case OpKind::CmpGt:
    return !unordered && ord > 0;
  case OpKind::CmpGe:
    return !unordered && ord >= 0;
  default:
    return std::nullopt;
  }
}

std::optional<Attr> foldInts(OpKind kind, const std::vector<Const> &x, DType d) {
  std::optional<int64_t> r;
  if (x.size() == 1)
    r = intUnary(kind, x[0].i, d);
  else if (x.size() == 2)
    r = compare(kind, order(x[0].i, x[1].i, d), false);
  if (x.size() == 2 && !r)
    r = intBinary(kind, x[0].i, x[1].i, d);
  if (!r)
    return std::nullopt;
  return Attr(*r);
}

// --- float folding (f32, f64)

std::optional<double> floatBinary(OpKind kind, double a, double b) {
  switch (kind) {
  case OpKind::Add:
    return a + b;
  case OpKind::Sub:
    return a - b;
  case OpKind::Mul:
    return a * b;
  case OpKind::Div:
    return a / b;
  case OpKind::FRem:
    return std::fmod(a, b);
  case OpKind::Min:
  case OpKind::Max:
    if (std::isnan(a) || std::isnan(b) || (a == 0 && b == 0))
      return std::nullopt; // NaN and signed-zero handling is the target's
    return (kind == OpKind::Min) == (a < b) ? a : b;
  default:
    return std::nullopt;
  }
}

std::optional<double> floatUnary(OpKind kind, double a) {
  switch (kind) {
  case OpKind::Neg:
    return -a;
  case OpKind::Abs:
    return std::fabs(a);
  case OpKind::Sqrt:
    return std::sqrt(a);
  case OpKind::Floor:
    return std::floor(a);
  case OpKind::Ceil:
    return std::ceil(a);
  default:
    return std::nullopt;
  }
}

double fusedMultiplyAdd(double a, double b, double c, DType d) {
  if (d == DType::F32)
    return std::fma((float)a, (float)b, (float)c);
  return std::fma(a, b, c);
}

std::optional<Attr> foldFloats(OpKind kind, const std::vector<Const> &x, DType d) {
  if (x.size() == 3 && kind == OpKind::Fma)
    return Attr(fusedMultiplyAdd(x[0].f, x[1].f, x[2].f, d));
  if (x.size() == 1) {
    auto r = floatUnary(kind, x[0].f);
    return r ? std::optional<Attr>(roundTo(*r, d)) : std::nullopt;
  }
  if (x.size() != 2)
    return std::nullopt;
  double a = x[0].f, b = x[1].f;
  if (auto c = compare(kind, a < b ? -1 : a > b, std::isnan(a) || std::isnan(b)))
    return Attr(*c);
  auto r = floatBinary(kind, a, b);
  return r ? std::optional<Attr>(roundTo(*r, d)) : std::nullopt;
}

// --- folding one op

std::optional<Attr> foldElementwise(const Op &op) {
  std::vector<Const> x;
  for (const Value *v : op.operands) {
    auto c = constOf(v);
    if (!c)
      return std::nullopt;
    x.push_back(*c);
  }
  DType d = op.operand(0)->type.dtype;
  if (x.empty())
    return std::nullopt;
  return x[0].isFloat ? foldFloats(op.kind, x, d) : foldInts(op.kind, x, d);
}

std::optional<int64_t> floatToInt(double v, DType d) {
  if (std::isnan(v))
    return std::nullopt;
  double t = std::trunc(v);
  int bits = dtypeBits(d);
  double lo = isUnsignedLike(d) ? 0 : -std::ldexp(1.0, bits - 1);
  double hi = std::ldexp(1.0, isUnsignedLike(d) ? bits : bits - 1);
  if (!(t >= lo && t < hi))
    return std::nullopt; // out of range: the target decides
  return wrapInt(isUnsignedLike(d) ? (uint64_t)t : (uint64_t)(int64_t)t, d);
}

double intToFloat(int64_t v, DType from, DType to) {
  if (to == DType::F32)
    return isUnsignedLike(from) ? (float)(uint64_t)v : (float)v;
  return isUnsignedLike(from) ? (double)(uint64_t)v : (double)v;
}

std::optional<Attr> foldCast(const Op &op) {
  auto c = constOf(op.operand(0));
  DType from = op.operand(0)->type.dtype, to = op.result()->type.dtype;
  if (!c || to == DType::I1)
    return std::nullopt;
  if (isInteger(from) && isInteger(to))
    return Attr(wrapInt(c->i, to));
  if (op.strAttr("rounding", "rtne") != "rtne")
    return std::nullopt;
  if (isInteger(from) && isFoldableFloat(to))
    return Attr(intToFloat(c->i, from, to));
  if (isFoldableFloat(from) && isInteger(to)) {
    auto i = floatToInt(c->f, to);
    return i ? std::optional<Attr>(*i) : std::nullopt;
  }
  if (isFoldableFloat(from) && isFoldableFloat(to))
    return Attr(roundTo(c->f, to));
  if (isFoldableFloat(from) && isFloat(to) && c->f == 0)
    return Attr(c->f); // a zero (of either sign) is one in every float type
  return std::nullopt;
}

// The same bits as another type of one width (32 or 64 bits).
std::optional<Attr> foldBitcast(const Op &op) {
  auto c = constOf(op.operand(0));
  DType from = op.operand(0)->type.dtype, to = op.result()->type.dtype;
  int bits = dtypeBits(from);
  if (!c || (bits != 32 && bits != 64) || dtypeBits(to) != bits || (c->isFloat && std::isnan(c->f)))
    return std::nullopt; // (a NaN's payload does not survive the double a constant holds)
  uint64_t raw;
  if (c->isFloat && bits == 32) {
    float f = (float)c->f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    raw = u;
  } else if (c->isFloat) {
    std::memcpy(&raw, &c->f, 8);
  } else {
    raw = (uint64_t)c->i;
  }
  if (isInteger(to))
    return Attr(wrapInt(raw, to));
  if (to == DType::F32) {
    uint32_t u = (uint32_t)raw;
    float f;
    std::memcpy(&f, &u, 4);
    return std::isnan(f) ? std::nullopt : std::optional<Attr>((double)f);
  }
  if (to == DType::F64) {
    double f;
    std::memcpy(&f, &raw, 8);
    return std::isnan(f) ? std::nullopt : std::optional<Attr>(f);
  }
  return std::nullopt;
}

// Whether `v` is the index along `axis` (0 to n-1) and nothing else: a range
// reshaped to size-1 dims elsewhere and broadcast.
bool isIndexAlong(const Value *v, int axis) {
  const Op *def = v->def;
  while (def && (def->kind == OpKind::Broadcast || def->kind == OpKind::Reshape ||
                 def->kind == OpKind::ExpandDims)) {
    if (def->kind != OpKind::Broadcast) { // only `axis` may be longer than 1
      const std::vector<int64_t> &shape = def->result()->type.shape;
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1 && (int)d != (int)shape.size() - 1)
          return false;
      if (axis != (int)v->type.rank() - 1)
        return false;
    }
    def = def->operand(0)->def;
  }
  return def && def->kind == OpKind::MakeRange && def->intAttr("start") == 0 &&
         def->intAttr("end") == v->type.shape[axis];
}

// reduce_max(select(index == k, c, lowest)) along that index, with c and k
// constants (tl.split and friends pick one value of each line that way): c.
std::optional<Attr> foldPickAlong(const Op &op) {
  if (op.kind != OpKind::ReduceMax)
    return std::nullopt;
  const Op *select = op.operand(0)->def;
  if (!select || select->kind != OpKind::Select)
    return std::nullopt;
  auto picked = constOf(select->operand(1)), other = constOf(select->operand(2));
  DType d = select->result()->type.dtype;
  const Op *match = select->operand(0)->def;
  if (!picked || !other || picked->isFloat || isUnsigned(d) ||
      other->i != wrapInt(uint64_t(1) << (dtypeBits(d) - 1), d) || !match ||
      match->kind != OpKind::CmpEq)
    return std::nullopt;
  int axis = (int)op.intAttr("axis");
  const Value *index = match->operand(0);
  auto k = constOf(match->operand(1));
  if (!k || !isIndexAlong(index, axis) || k->i < 0 || k->i >= index->type.shape[axis])
    return std::nullopt;
  return Attr(picked->i);
}

bool isShapeChange(OpKind kind) {
  return kind == OpKind::Splat || kind == OpKind::Broadcast || kind == OpKind::ExpandDims ||
         kind == OpKind::Reshape || kind == OpKind::Trans;
}

// A shape change of a constant is a constant of the new shape (all constants are splats).
std::optional<Attr> foldShapeChange(const Op &op) {
  if (!isShapeChange(op.kind))
    return std::nullopt;
  const Op *def = op.operand(0)->def;
  if (!def || def->kind != OpKind::Constant || !def->attr("value"))
    return std::nullopt;
  return *def->attr("value");
}

std::optional<Attr> foldToConstant(const Op &op) {
  if (op.kind == OpKind::Constant)
    return std::nullopt;
  if (auto shaped = foldShapeChange(op))
    return shaped;
  if (op.kind == OpKind::Cast)
    return foldCast(op);
  if (op.kind == OpKind::Bitcast)
    return foldBitcast(op);
  if (auto picked = foldPickAlong(op))
    return picked;
  if (op.kind == OpKind::Select || !op.has(INTS | FLOATS))
    return std::nullopt;
  return foldElementwise(op);
}

bool isIdentity(const Value *v, OpKind kind) {
  bool isF = isFloat(v->type.dtype);
  switch (kind) {
  case OpKind::Add: // x + -0.0 is x; x + +0.0 is not, for x = -0.0
    return isF ? isFloatConst(v, -0.0) : isIntConst(v, 0);
  case OpKind::Sub:
    return isF ? isFloatConst(v, 0.0) : isIntConst(v, 0);
  case OpKind::Mul:
    return isF ? isFloatConst(v, 1.0) : isIntConst(v, 1);
  case OpKind::IDiv: // (on the right only: foldToValue asks the left for commutative ops)
    return isIntConst(v, 1);
  case OpKind::And:
    return isIntConst(v, -1);
  case OpKind::Or:
    return isIntConst(v, 0);
  default:
    return false;
  }
}

// An existing value the op equals: x + 0, x * 1, select(c, x, x), ...
Value *foldToValue(const Op &op) {
  if (op.kind == OpKind::Select) {
    auto c = constOf(op.operand(0));
    if (op.operand(1) == op.operand(2))
      return op.operand(1);
    return c ? op.operand(c->i ? 1 : 2) : nullptr;
  }
  if (op.operands.size() != 2 || !op.has(INTS | FLOATS))
    return nullptr;
  if (isIdentity(op.operand(1), op.kind))
    return op.operand(0);
  if (op.has(COMMUTATIVE) && isIdentity(op.operand(0), op.kind))
    return op.operand(1);
  return nullptr;
}

bool isIntZeroProduct(const Op &op) {
  return op.kind == OpKind::Mul && isInteger(op.result()->type.dtype) &&
         (isIntConst(op.operand(0), 0) || isIntConst(op.operand(1), 0));
}

// --- rewriting the IR

void makeConstant(Op &op, Attr value) {
  op.kind = OpKind::Constant;
  op.operands.clear();
  op.attrs.clear();
  op.setAttr("value", std::move(value));
}

class Folder {
public:
  explicit Folder(Function &fn) : fn_(fn) {}
  bool foldBlock(Block &block);

private:
  Function &fn_;

  bool rewrite(Block &block, size_t i);
  bool foldPure(Block &block, size_t i);
  bool inlineIf(Block &block, size_t i);
  bool dropZeroTripFor(Block &block, size_t i);
  void replaceResults(Op &op, const std::vector<Value *> &values);
};

void Folder::replaceResults(Op &op, const std::vector<Value *> &values) {
  for (size_t r = 0; r < op.results.size(); ++r)
    replaceAllUses(*fn_.body, op.result(r), values[r]);
}

bool Folder::foldPure(Block &block, size_t i) {
  Op &op = *block.ops[i];
  if (!op.has(PURE) || !op.regions.empty() || op.results.size() != 1)
    return false;
  if (auto c = foldToConstant(op)) {
    makeConstant(op, *c);
    return true;
  }
  if (isIntZeroProduct(op)) {
    makeConstant(op, int64_t(0));
    return true;
  }
  Value *same = foldToValue(op);
  if (!same)
    return false;
  replaceResults(op, {same});
  block.ops.erase(block.ops.begin() + i);
  return true;
}

// if(true) {A; yield(x)} else {B} → A, with the if's result replaced by x.
bool Folder::inlineIf(Block &block, size_t i) {
  Op &op = *block.ops[i];
  auto cond = constOf(op.operand(0));
  if (!cond)
    return false;
  Block &taken = *op.regions[cond->i ? 0 : 1];
  replaceResults(op, taken.terminator()->operands);
  taken.ops.pop_back();
  for (auto &moved : taken.ops)
    moved->parent = &block;
  auto ifOp = std::move(block.ops[i]);
  block.ops.erase(block.ops.begin() + i);
  block.ops.insert(block.ops.begin() + i, std::make_move_iterator(taken.ops.begin()),
                   std::make_move_iterator(taken.ops.end()));
  return true;
}

// for(lb, ub, step, inits) with step > 0 and lb >= ub runs zero times: its results are the inits.
bool Folder::dropZeroTripFor(Block &block, size_t i) {
  Op &op = *block.ops[i];
  auto lb = constOf(op.operand(0)), ub = constOf(op.operand(1)), step = constOf(op.operand(2));
  DType d = op.operand(0)->type.dtype;
  if (!lb || !ub || !step || order(step->i, 0, d) <= 0 || order(lb->i, ub->i, d) < 0)
    return false;
  replaceResults(op, std::vector<Value *>(op.operands.begin() + 3, op.operands.end()));
  block.ops.erase(block.ops.begin() + i);
  return true;
}

bool Folder::rewrite(Block &block, size_t i) {
  switch (block.ops[i]->kind) {
  case OpKind::If:
    return inlineIf(block, i);
  case OpKind::For:
    return dropZeroTripFor(block, i);
  default:
    return foldPure(block, i);
  }
}

// One sweep over a block and its regions; a rewritten op is looked at again.
bool Folder::foldBlock(Block &block) {
  bool changed = false;
  for (size_t i = 0; i < block.ops.size();) {
    for (auto &region : block.ops[i]->regions)
      changed |= foldBlock(*region);
    if (rewrite(block, i)) {
      changed = true;
      continue;
    }
    ++i;
  }
  return changed;
}

} // namespace

bool foldConstants(Function &fn) {
  Folder folder(fn);
  bool changed = false;
  while (folder.foldBlock(*fn.body))
    changed = true;
  return changed;
}

} // namespace tilec
