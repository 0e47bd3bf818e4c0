// Python's semantics on compile-time constants: what `BLOCK // 2`,
// `N % 16 == 0` or `dtype == tl.float16` mean when every operand is constexpr.
#include <algorithm>
#include <cmath>

#include "sema/lowerer.h"

namespace tilec {

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

static int64_t floorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

static ConstValue intOp(Lowerer &l, BinOpKind op, int64_t a, int64_t b, const Span &span) {
  switch (op) {
  case BinOpKind::Add:
    return ConstValue::integer(a + b);
  case BinOpKind::Sub:
    return ConstValue::integer(a - b);
  case BinOpKind::Mul:
    return ConstValue::integer(a * b);
  case BinOpKind::Div:
    if (b == 0)
      l.error(span, "division by zero in a constexpr expression");
    return ConstValue::floating((double)a / (double)b);
  case BinOpKind::FloorDiv:
    if (b == 0)
      l.error(span, "division by zero in a constexpr expression");
    return ConstValue::integer(floorDiv(a, b));
  case BinOpKind::Mod:
    if (b == 0)
      l.error(span, "modulo by zero in a constexpr expression");
    return ConstValue::integer(floorMod(a, b));
  case BinOpKind::Pow: {
    if (b < 0)
      return ConstValue::floating(std::pow((double)a, (double)b));
    int64_t r = 1;
    for (int64_t k = 0; k < b; ++k)
      r *= a;
    return ConstValue::integer(r);
  }
  case BinOpKind::LShift:
    if (b < 0 || b > 63)
      l.error(span, "shift count out of range in a constexpr expression");
    return ConstValue::integer((int64_t)((uint64_t)a << b));
  case BinOpKind::RShift:
    if (b < 0)
      l.error(span, "negative shift count in a constexpr expression");
    return ConstValue::integer(b > 63 ? (a < 0 ? -1 : 0) : a >> b);
  case BinOpKind::BitAnd:
    return ConstValue::integer(a & b);
  case BinOpKind::BitOr:
    return ConstValue::integer(a | b);
  case BinOpKind::BitXor:
    return ConstValue::integer(a ^ b);
  case BinOpKind::MatMul:
    break;
  }
  l.error(span, std::string("unsupported operand types for '") + spelling(op) + "': int and int");
}

static ConstValue floatOp(Lowerer &l, BinOpKind op, double a, double b, const Span &span) {
  switch (op) {
  case BinOpKind::Add:
    return ConstValue::floating(a + b);
  case BinOpKind::Sub:
    return ConstValue::floating(a - b);
  case BinOpKind::Mul:
    return ConstValue::floating(a * b);
  case BinOpKind::Div:
    if (b == 0)
      l.error(span, "division by zero in a constexpr expression");
    return ConstValue::floating(a / b);
  case BinOpKind::FloorDiv:
    if (b == 0)
      l.error(span, "division by zero in a constexpr expression");
    return ConstValue::floating(std::floor(a / b));
  case BinOpKind::Mod: {
    if (b == 0)
      l.error(span, "modulo by zero in a constexpr expression");
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return ConstValue::floating(r);
  }
  case BinOpKind::Pow:
    return ConstValue::floating(std::pow(a, b));
  default:
    break;
  }
  l.error(span, std::string("unsupported operand types for '") + spelling(op) + "': float");
}

ConstValue Lowerer::constBinary(BinOpKind op, const ConstValue &a, const ConstValue &b,
                                const Span &span) {
  if (a.isNumber() && b.isNumber()) {
    if (a.kind == ConstValue::Float || b.kind == ConstValue::Float)
      return floatOp(*this, op, a.asDouble(), b.asDouble(), span);
    ConstValue r = intOp(*this, op, a.asInt(), b.asInt(), span);
    bool bothBool = a.kind == ConstValue::Bool && b.kind == ConstValue::Bool;
    bool bitwise = op == BinOpKind::BitAnd || op == BinOpKind::BitOr || op == BinOpKind::BitXor;
    return bothBool && bitwise ? ConstValue::boolean(r.i != 0) : r;
  }
  if (op == BinOpKind::Add && a.kind == b.kind &&
      (a.kind == ConstValue::Str || a.kind == ConstValue::Tuple)) {
    if (a.kind == ConstValue::Str)
      return ConstValue::string(a.s + b.s);
    std::vector<ConstValue> elems = a.elems;
    elems.insert(elems.end(), b.elems.begin(), b.elems.end());
    return ConstValue::tuple(elems);
  }
  // (0,) * n and n * (0,): repetition, as in Python (so is a string's)
  bool seqInt = (a.kind == ConstValue::Tuple || a.kind == ConstValue::Str) &&
                (b.kind == ConstValue::Int || b.kind == ConstValue::Bool);
  bool intSeq = (b.kind == ConstValue::Tuple || b.kind == ConstValue::Str) &&
                (a.kind == ConstValue::Int || a.kind == ConstValue::Bool);
  if (op == BinOpKind::Mul && (seqInt || intSeq)) {
    const ConstValue &seq = seqInt ? a : b;
    int64_t n = std::max<int64_t>(0, (seqInt ? b : a).asInt());
    ConstValue out = seq.kind == ConstValue::Str ? ConstValue::string("")
                                                 : ConstValue::tuple({});
    for (int64_t k = 0; k < n; ++k)
      out = constBinary(BinOpKind::Add, out, seq, span);
    return out;
  }
  error(span, std::string("unsupported operand types for '") + spelling(op) + "': " + a.repr() +
                  " and " + b.repr());
}

ConstValue Lowerer::constCompare(CmpOpKind op, const ConstValue &a, const ConstValue &b,
                                 const Span &span) {
  switch (op) {
  case CmpOpKind::Eq:
  case CmpOpKind::Is:
    return ConstValue::boolean(a == b);
  case CmpOpKind::NotEq:
  case CmpOpKind::IsNot:
    return ConstValue::boolean(!(a == b));
  case CmpOpKind::In:
  case CmpOpKind::NotIn: {
    if (b.kind != ConstValue::Tuple)
      error(span, "'in' needs a tuple or list on its right, got " + b.repr());
    bool found = false;
    for (auto &e : b.elems)
      found = found || e == a;
    return ConstValue::boolean(op == CmpOpKind::In ? found : !found);
  }
  default:
    break;
  }
  if (a.isNumber() && b.isNumber()) {
    bool useFloat = a.kind == ConstValue::Float || b.kind == ConstValue::Float;
    double x = a.asDouble(), y = b.asDouble();
    int64_t i = a.asInt(), j = b.asInt();
    bool r = false;
    if (op == CmpOpKind::Lt)
      r = useFloat ? x < y : i < j;
    else if (op == CmpOpKind::LtE)
      r = useFloat ? x <= y : i <= j;
    else if (op == CmpOpKind::Gt)
      r = useFloat ? x > y : i > j;
    else
      r = useFloat ? x >= y : i >= j;
    return ConstValue::boolean(r);
  }
  if (a.kind == ConstValue::Str && b.kind == ConstValue::Str) {
    int c = a.s.compare(b.s);
    bool r = op == CmpOpKind::Lt    ? c < 0
             : op == CmpOpKind::LtE ? c <= 0
             : op == CmpOpKind::Gt  ? c > 0
                                    : c >= 0;
    return ConstValue::boolean(r);
  }
  error(span, std::string("cannot compare ") + a.repr() + " and " + b.repr() + " with '" +
                  spelling(op) + "'");
}

ConstValue Lowerer::constUnary(UnaryOpKind op, const ConstValue &a, const Span &span) {
  if (op == UnaryOpKind::Not)
    return ConstValue::boolean(!a.truthy());
  if (!a.isNumber())
    error(span, std::string("bad operand for unary '") + spelling(op) + "': " + a.repr());
  switch (op) {
  case UnaryOpKind::Neg:
    return a.kind == ConstValue::Float ? ConstValue::floating(-a.f) : ConstValue::integer(-a.asInt());
  case UnaryOpKind::Pos:
    return a.kind == ConstValue::Bool ? ConstValue::integer(a.asInt()) : a;
  case UnaryOpKind::Invert:
    if (a.kind == ConstValue::Float)
      error(span, "bad operand for unary '~': float");
    return ConstValue::integer(~a.asInt());
  default:
    return a;
  }
}

} // namespace tilec
