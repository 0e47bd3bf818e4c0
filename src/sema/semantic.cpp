// Triton's typing rules: the types of literals, type promotion of binary
// operands, broadcasting, casts, and the typed elementwise operations built on
// them. Every IR value sema creates for an operator goes through here.
#include <map>
#include <cmath>
#include <limits>

#include "sema/lowerer.h"

namespace tilec {

static std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<DType> Lowerer::literalDType(const ConstValue &c) {
  switch (c.kind) {
  case ConstValue::Bool:
    return DType::I1;
  case ConstValue::Int:
    if (c.i >= INT32_MIN && c.i <= INT32_MAX)
      return DType::I32;
    if (c.i > 0 && c.i <= (int64_t)UINT32_MAX)
      return DType::U32;
    return DType::I64;
  case ConstValue::Float:
    if (std::isfinite(c.f) && std::fabs(c.f) > std::numeric_limits<float>::max())
      return DType::F64;
    return DType::F32;
  default:
    return std::nullopt;
  }
}

Value *Lowerer::constScalar(const ConstValue &c, DType d) {
  Type t = Type::scalar(d);
  if (isFloat(d))
    return b_.constFloat(c.asDouble(), t);
  if (c.kind == ConstValue::Float)
    return b_.constInt((int64_t)c.f, t);
  return b_.constInt(d == DType::I1 ? (c.asInt() != 0) : c.asInt(), t);
}

Value *Lowerer::materialize(const SVal &v, const Span &span, std::optional<DType> like) {
  if (v.isTensor())
    return like ? castTo(v.v, *like) : v.v;
  if (v.isConst()) {
    std::optional<DType> d = like ? like : literalDType(v.c);
    if (d && v.c.isNumber())
      return constScalar(v.c, *d);
  }
  error(span, "expected a tensor or a number, got " + v.describe());
}

// A Python int beside an integer tensor takes the tensor's type (Triton's weak
// scalars) and must fit it: x_uint8 + 300 is an error, not a silent wrap.
void Lowerer::checkScalarFits(const SVal &s, DType t, const Span &span) {
  if (!s.isConst() || s.c.kind != ConstValue::Int || !isInteger(t))
    return;
  int64_t v = s.c.i;
  int bits = dtypeBits(t);
  if (v < 0 && isUnsigned(t))
    error(span, "Cannot perform a binary operation between an unsigned tensor and a negative "
                "scalar (" + std::to_string(v) + "). Perform an explicit cast on one of them.");
  bool fits = bits == 64 ? (!isUnsigned(t) || v >= 0)
              : isUnsigned(t) ? v >= 0 && v < (int64_t{1} << bits)
                              : v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1));
  if (!fits)
    error(span, "Scalar " + std::to_string(v) + " is out of range for type " +
                    ConstValue::dtype(Type::scalar(t)).repr());
}

static int kindRank(DType d) {
  if (d == DType::I1)
    return 0;
  return isFloat(d) ? 2 : 1;
}

static DType integerPromote(DType a, DType b) {
  int wa = dtypeBits(a), wb = dtypeBits(b);
  bool ua = isUnsigned(a), ub = isUnsigned(b);
  if (ua == ub)
    return wa > wb ? a : b;
  if (ua)
    return wa >= wb ? a : b;
  return wb >= wa ? b : a;
}

// The type both operands of a binary op are converted to (Triton's
// computation_type_impl). A constexpr number of a lower or equal kind than a
// tensor operand does not take part in promotion.
DType Lowerer::computationType(const SVal &a, const SVal &b, bool divOrMod, const Span &span) {
  DType ta = a.isTensor() ? a.v->type.dtype : *literalDType(a.c);
  DType tb = b.isTensor() ? b.v->type.dtype : *literalDType(b.c);
  if (isPointer(ta) || isPointer(tb))
    error(span, "arithmetic on pointers supports only '+' and '-' with an integer offset");
  if (a.isConst() != b.isConst()) {
    DType scalar = a.isConst() ? ta : tb, tensor = a.isConst() ? tb : ta;
    if (kindRank(scalar) <= kindRank(tensor)) {
      if (divOrMod && (tensor == DType::F16 || tensor == DType::BF16))
        return DType::F32;
      return tensor;
    }
  }
  if (ta == DType::F64 || tb == DType::F64)
    return DType::F64;
  if (ta == DType::F32 || tb == DType::F32)
    return DType::F32;
  if (ta == DType::F16 || tb == DType::F16) // fp16 with bf16, fp8 or an integer too
    return divOrMod ? DType::F32 : DType::F16;
  if (ta == DType::BF16 && tb == DType::BF16)
    return divOrMod ? DType::F32 : DType::BF16;
  if (ta == DType::BF16 || tb == DType::BF16) // bf16 with fp8 or an integer
    return DType::F32;
  if (isFloat(ta) && isFloat(tb)) // two fp8: the type if one, else fp16
    return ta == tb ? ta : DType::F16;
  if (isFloat(ta) || isFloat(tb))
    error(span, std::string("an fp8 value and an integer cannot meet in arithmetic (") +
                    dtypeName(ta) + ", " + dtypeName(tb) + "); cast one of them first");
  if (divOrMod && isUnsigned(ta) != isUnsigned(tb) && ta != DType::I1 && tb != DType::I1)
    error(span, std::string("Cannot use /, // or % with ") + dtypeName(ta) + " and " +
                    dtypeName(tb) + " because they have different signedness; cast one first");
  return integerPromote(ta, tb);
}

Value *Lowerer::castTo(Value *v, DType d) {
  if (v->type.dtype == d)
    return v;
  Type t = v->type.withDType(d);
  // A pointer tensor stored into an int64 buffer, an int tensor stored as pointers.
  if (isPointer(v->type.dtype) && d == DType::I1) // whether it is not null
    return castTo(pointerCast(v, v->type.withDType(DType::I64)), d);
  if (isPointer(v->type.dtype))
    return pointerCast(v, t);
  if (isPointer(d))
    return pointerCast(castTo(v, DType::I64), t);
  if (d == DType::I1) {
    Value *zero = v->type.isTensor() ? splatTo(constScalar(ConstValue::integer(0), v->type.dtype),
                                               v->type.shape)
                                     : constScalar(ConstValue::integer(0), v->type.dtype);
    return b_.create1(OpKind::CmpNe, {v, zero}, t);
  }
  return b_.create1(OpKind::Cast, {v}, t);
}

Value *Lowerer::pointerCast(Value *v, const Type &t) {
  if (isPointer(v->type.dtype) && isPointer(t.dtype))
    return b_.create1(OpKind::Bitcast, {v}, t);
  return b_.create1(isPointer(v->type.dtype) ? OpKind::PtrToInt : OpKind::IntToPtr, {v}, t);
}

Value *Lowerer::splatTo(Value *v, const std::vector<int64_t> &shape) {
  if (shape.empty())
    return v;
  return b_.create1(OpKind::Splat, {v}, v->type.withShape(shape));
}

Value *Lowerer::expandDims(Value *v, int axis) {
  std::vector<int64_t> shape = v->type.shape;
  shape.insert(shape.begin() + axis, 1);
  Op *op = b_.create(OpKind::ExpandDims, {v}, {v->type.withShape(shape)});
  op->setAttr("axis", (int64_t)axis);
  return op->result();
}

Value *Lowerer::broadcastTo(Value *v, const std::vector<int64_t> &shape, const Span &span) {
  if (v->type.shape == shape)
    return v;
  if (v->type.isScalar())
    return splatTo(v, shape);
  if (v->type.rank() > (int)shape.size())
    error(span, "cannot broadcast " + v->type.str() + " to shape " + shapeStr(shape));
  while (v->type.rank() < (int)shape.size())
    v = expandDims(v, 0);
  for (size_t i = 0; i < shape.size(); ++i)
    if (v->type.shape[i] != shape[i] && v->type.shape[i] != 1)
      error(span, "cannot broadcast " + v->type.str() + " to shape " + shapeStr(shape));
  return b_.create1(OpKind::Broadcast, {v}, v->type.withShape(shape));
}

std::pair<Value *, Value *> Lowerer::broadcastPair(Value *a, Value *b, const Span &span) {
  const auto &sa = a->type.shape, &sb = b->type.shape;
  if (sa == sb)
    return {a, b};
  if (sa.empty())
    return {splatTo(a, sb), b};
  if (sb.empty())
    return {a, splatTo(b, sa)};
  size_t rank = std::max(sa.size(), sb.size());
  std::vector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + sa.size() >= rank ? sa[i + sa.size() - rank] : 1;
    int64_t db = i + sb.size() >= rank ? sb[i + sb.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      error(span, "cannot broadcast " + a->type.str() + " and " + b->type.str());
    shape[i] = da == 1 ? db : da;
  }
  return {broadcastTo(a, shape, span), broadcastTo(b, shape, span)};
}

Value *Lowerer::toMask(Value *v) { return v->type.dtype == DType::I1 ? v : castTo(v, DType::I1); }

// The one element of a one-element tensor (x.item()), as a scalar.
Value *Lowerer::unsplat(Value *v, const Span &span) {
  if (v->type.isScalar())
    return v;
  if (v->type.numel() != 1)
    error(span, "item() needs a tensor of one element, got " + v->type.str());
  return reduce(OpKind::ReduceMax, v, SVal::constant(ConstValue::none()), false, span).v;
}

Value *Lowerer::toCondition(const SVal &v, const Span &span) {
  Value *c = materialize(v, span);
  if (c->type.isTensor() && c->type.numel() == 1) // `if x:` of a one-element tensor, as in Triton
    c = unsplat(c, span);
  if (c->type.isTensor())
    error(span, "a condition must be a scalar, got " + c->type.str());
  if (isPointer(c->type.dtype))
    error(span, "a condition must be a number, got " + c->type.str());
  return toMask(c);
}

Value *Lowerer::elementwise(OpKind kind, std::vector<Value *> operands, const Span &span) {
  Type t = operands.back()->type;
  if (kind >= OpKind::CmpEq && kind <= OpKind::CmpGe)
    t = t.withDType(DType::I1);
  return b_.create1(kind, std::move(operands), t);
}

static OpKind arithmeticOp(BinOpKind op, DType d) {
  switch (op) {
  case BinOpKind::Add:
    return OpKind::Add;
  case BinOpKind::Sub:
    return OpKind::Sub;
  case BinOpKind::Mul:
    return OpKind::Mul;
  case BinOpKind::Div:
    return OpKind::Div;
  case BinOpKind::FloorDiv:
    return OpKind::IDiv;
  case BinOpKind::Mod:
    return isFloat(d) ? OpKind::FRem : OpKind::IRem;
  case BinOpKind::BitAnd:
    return OpKind::And;
  case BinOpKind::BitOr:
    return OpKind::Or;
  case BinOpKind::BitXor:
    return OpKind::Xor;
  case BinOpKind::LShift:
    return OpKind::Shl;
  case BinOpKind::RShift:
    return OpKind::Shr;
  default:
    return OpKind::Add;
  }
}

static bool isBitwise(BinOpKind op) {
  return op == BinOpKind::BitAnd || op == BinOpKind::BitOr || op == BinOpKind::BitXor ||
         op == BinOpKind::LShift || op == BinOpKind::RShift;
}

// ptr + int, int + ptr, ptr - int.
static bool isPointerArith(const SVal &a, const SVal &b) {
  return (a.isTensor() && isPointer(a.v->type.dtype)) || (b.isTensor() && isPointer(b.v->type.dtype));
}

SVal Lowerer::binary(BinOpKind op, const SVal &a, const SVal &b, const Span &span) {
  if (a.isConst() && b.isConst())
    return SVal::constant(constBinary(op, a.c, b.c, span));
  for (const SVal *x : {&a, &b})
    if (!x->isTensor() && !(x->isConst() && x->c.isNumber()))
      error(span, std::string("unsupported operand for '") + spelling(op) + "': " + x->describe());
  if (isPointerArith(a, b)) {
    bool ptrLeft = a.isTensor() && isPointer(a.v->type.dtype);
    const SVal &ptr = ptrLeft ? a : b, &off = ptrLeft ? b : a;
    bool ok = (op == BinOpKind::Add) || (op == BinOpKind::Sub && ptrLeft);
    Value *offset = materialize(off, span);
    if (!ok || !isInteger(offset->type.dtype))
      error(span, std::string("unsupported pointer arithmetic '") + spelling(op) + "' between " +
                      a.describe() + " and " + b.describe());
    if (op == BinOpKind::Sub)
      offset = b_.create1(OpKind::Neg, {offset}, offset->type);
    auto [p, o] = broadcastPair(ptr.v, offset, span);
    return SVal::tensor(b_.create1(OpKind::AddPtr, {p, o}, p->type));
  }
  if (op == BinOpKind::Pow || op == BinOpKind::MatMul)
    error(span, std::string("operator '") + spelling(op) +
                    "' is not supported on tensors; use tl.math.pow or tl.dot");
  bool divOrMod = op == BinOpKind::Div || op == BinOpKind::FloorDiv || op == BinOpKind::Mod;
  DType t = computationType(a, b, divOrMod, span);
  if (isBitwise(op) && !isInteger(t))
    error(span, "invalid operands of type " + a.describe() + " and " + b.describe() +
                    std::string(": bitwise operator '") + spelling(op) + "' needs integers");
  if (op == BinOpKind::FloorDiv && !isInteger(t))
    error(span, "'//' needs integer operands, got " + a.describe() + " and " + b.describe() +
                    "; use tl.math.floor(x / y) for floats");
  if (op == BinOpKind::Div && !isFloat(t))
    t = DType::F32; // int / int is a float division, as in Python and Triton
  for (const SVal *s : {&a, &b})
    checkScalarFits(*s, t, span);
  Value *x = materialize(a, span, t), *y = materialize(b, span, t);
  auto [bx, by] = broadcastPair(x, y, span);
  bool signedLeft = (a.isTensor() && dtypeKind(a.v->type.dtype) == DKind::Int) ||
                    (a.isConst() && a.c.kind == ConstValue::Int);
  if (op == BinOpKind::RShift && isUnsigned(t) && signedLeft) {
    // As in Triton, >> is arithmetic when the left operand is signed, even when
    // promotion made both unsigned (int8 >> uint8 shifts the uint8 bits arithmetically).
    static const std::map<DType, DType> asSigned = {
        {DType::U8, DType::I8}, {DType::U16, DType::I16}, {DType::U32, DType::I32},
        {DType::U64, DType::I64}};
    Type st = bx->type.withDType(asSigned.at(t));
    Value *sx = b_.create1(OpKind::Bitcast, {bx}, st), *sy = b_.create1(OpKind::Bitcast, {by}, st);
    Value *r = elementwise(OpKind::Shr, {sx, sy}, span);
    return SVal::tensor(b_.create1(OpKind::Bitcast, {r}, bx->type));
  }
  return SVal::tensor(elementwise(arithmeticOp(op, t), {bx, by}, span));
}

SVal Lowerer::compare(CmpOpKind op, const SVal &a, const SVal &b, const Span &span) {
  if (op == CmpOpKind::Is || op == CmpOpKind::IsNot) {
    if (a.isConst() && b.isConst())
      return SVal::constant(constCompare(op, a.c, b.c, span));
    bool same = a.isTensor() && b.isTensor() && a.v == b.v;
    return SVal::constant(ConstValue::boolean((op == CmpOpKind::Is) == same));
  }
  if (a.isConst() && b.isConst())
    return SVal::constant(constCompare(op, a.c, b.c, span));
  if (op == CmpOpKind::In || op == CmpOpKind::NotIn)
    error(span, "'in' is supported only on constexpr values");
  for (const SVal *x : {&a, &b})
    if (!x->isTensor() && !(x->isConst() && x->c.isNumber()))
      error(span, std::string("cannot compare with '") + spelling(op) + "': " + x->describe());
  Value *x, *y;
  if ((a.isTensor() && isPointer(a.v->type.dtype)) || (b.isTensor() && isPointer(b.v->type.dtype))) {
    x = materialize(a, span);
    y = materialize(b, span);
    if (!x->type.sameElement(y->type))
      error(span, "cannot compare " + a.describe() + " and " + b.describe());
  } else {
    DType t = computationType(a, b, false, span);
    x = materialize(a, span, t);
    y = materialize(b, span, t);
  }
  auto [bx, by] = broadcastPair(x, y, span);
  static const OpKind kinds[] = {OpKind::CmpEq, OpKind::CmpNe, OpKind::CmpLt,
                                 OpKind::CmpLe, OpKind::CmpGt, OpKind::CmpGe};
  return SVal::tensor(elementwise(kinds[(int)op], {bx, by}, span));
}

SVal Lowerer::unary(UnaryOpKind op, const SVal &a, const Span &span) {
  if (a.isConst())
    return SVal::constant(constUnary(op, a.c, span));
  if (!a.isTensor())
    error(span, std::string("bad operand for unary '") + spelling(op) + "': " + a.describe());
  Value *v = a.v;
  if (isPointer(v->type.dtype))
    error(span, std::string("bad operand for unary '") + spelling(op) + "': " + v->type.str());
  switch (op) {
  case UnaryOpKind::Pos:
    return a;
  case UnaryOpKind::Neg:
    return SVal::tensor(b_.create1(OpKind::Neg, {v}, v->type));
  case UnaryOpKind::Invert:
    if (!isInteger(v->type.dtype))
      error(span, "'~' needs an integer operand, got " + v->type.str());
    return SVal::tensor(b_.create1(OpKind::Not, {v}, v->type));
  case UnaryOpKind::Not: {
    Value *m = toMask(v);
    Value *one = splatTo(b_.constInt(1, Type::scalar(DType::I1)), m->type.shape);
    return SVal::tensor(b_.create1(OpKind::Xor, {m, one}, m->type));
  }
  }
  return a;
}

SVal Lowerer::where(const SVal &cond, const SVal &a, const SVal &b, const Span &span) {
  Value *c = toMask(materialize(cond, span));
  Value *x, *y;
  bool ptrs = (a.isTensor() && isPointer(a.v->type.dtype)) || (b.isTensor() && isPointer(b.v->type.dtype));
  if (ptrs) {
    x = materialize(a, span);
    y = materialize(b, span);
  } else {
    DType t = computationType(a, b, false, span);
    x = materialize(a, span, t);
    y = materialize(b, span, t);
  }
  auto [bx, by] = broadcastPair(x, y, span);
  auto [cc, bx2] = broadcastPair(c, bx, span);
  auto [cc2, by2] = broadcastPair(cc, by, span);
  bx2 = broadcastTo(bx2, cc2->type.shape, span);
  return SVal::tensor(b_.create1(OpKind::Select, {cc2, bx2, by2}, bx2->type));
}

SVal Lowerer::minMax(bool isMax, const SVal &a, const SVal &b, const Span &span) {
  DType t = computationType(a, b, false, span);
  Value *x = materialize(a, span, t), *y = materialize(b, span, t);
  auto [bx, by] = broadcastPair(x, y, span);
  return SVal::tensor(elementwise(isMax ? OpKind::Max : OpKind::Min, {bx, by}, span));
}

Value *Lowerer::reshape(Value *v, const std::vector<int64_t> &shape, const Span &span) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  if (n != v->type.numel())
    error(span, "cannot reshape " + v->type.str() + " to shape " + shapeStr(shape) +
                    ": the number of elements differs");
  if (shape == v->type.shape)
    return v;
  if (v->type.isScalar())
    return splatTo(v, shape);
  return b_.create1(OpKind::Reshape, {v}, v->type.withShape(shape));
}

void Lowerer::checkBlockShape(const std::vector<int64_t> &shape, const Span &span) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s <= 0 || (s & (s - 1)) != 0)
      error(span, "tensor dimensions must be powers of 2, got shape " + shapeStr(shape));
    n *= s;
  }
  if (n > (1 << 20))
    error(span, "tensor of shape " + shapeStr(shape) + " has " + std::to_string(n) +
                    " elements; the most a tensor may have is 1048576");
}

} // namespace tilec
