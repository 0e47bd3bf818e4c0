// Elementwise ops and casts, element by element. Integers narrower than 32
// bits are computed in 32 and re-extended; f16, bf16 and fp8 are computed in
// f32 and rounded back after each op, as the CPU backend rounds them.
#include <cmath>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool isNarrowInt(DType d) { return isInteger(d) && dtypeBits(d) < 32 && d != DType::I1; }
bool needsF32(DType d) { return isFloat(d) && d != DType::F32 && d != DType::F64; }

std::string intSuffix(DType d) {
  bool wide = dtypeBits(d) == 64 || d == DType::Ptr;
  return std::string(isUnsigned(d) || d == DType::Ptr ? ".u" : ".s") + (wide ? "64" : "32");
}
std::string bitsSuffix(DType d) { return regClassOf(d) == RegClass::B64 ? ".b64" : ".b32"; }
std::string floatSuffix(DType d) { return d == DType::F64 ? ".f64" : ".f32"; }

} // namespace

std::string Lowering::normalize(const std::string &r, DType d) {
  if (!isNarrowInt(d))
    return r;
  int bits = dtypeBits(d);
  if (isUnsigned(d))
    return opReg("and.b32", RegClass::B32, {r, imm((1 << bits) - 1)});
  return opReg("bfe.s32", RegClass::B32, {r, "0", imm(bits)});
}

std::string Lowering::toF32(const std::string &r, DType d) {
  switch (d) {
  case DType::F32:
    return r;
  case DType::F64:
    return opReg("cvt.rn.f32.f64", RegClass::F32, {r});
  case DType::F16:
    return opReg("cvt.f32.f16", RegClass::F32, {r});
  case DType::BF16: {
    if (arch >= 90)
      return opReg("cvt.f32.bf16", RegClass::F32, {r});
    std::string w = opReg("cvt.u32.u16", RegClass::B32, {r});
    w = opReg("shl.b32", RegClass::B32, {w, "16"});
    return opReg("mov.b32", RegClass::F32, {w});
  }
  case DType::F8E5M2: { // the top byte of an f16
    std::string w = opReg("shl.b16", RegClass::B16, {r, "8"});
    return opReg("cvt.f32.f16", RegClass::F32, {w});
  }
  case DType::F8E4M3: {
    TILEC_ASSERT(arch >= 89, "fp8e4nv reached the GPU lowering below sm_89");
    std::string w = opReg("cvt.rn.f16x2.e4m3x2", RegClass::B32, {r});
    std::string lo = b.reg(RegClass::B16), hi = b.reg(RegClass::B16);
    b.emit("mov.b32 {" + lo + ", " + hi + "}, " + w);
    return opReg("cvt.f32.f16", RegClass::F32, {lo});
  }
  default:
    TILEC_ASSERT(false, "toF32 of a non-float");
  }
}

std::string Lowering::fromF32(const std::string &f, DType d, bool rtz) {
  std::string mode = rtz ? ".rz" : ".rn";
  switch (d) {
  case DType::F32:
    return f;
  case DType::F64:
    return opReg("cvt.f64.f32", RegClass::F64, {f});
  case DType::F16:
    return opReg("cvt" + mode + ".f16.f32", RegClass::B16, {f});
  case DType::BF16:
    return opReg("cvt" + mode + ".bf16.f32", RegClass::B16, {f});
  case DType::F8E4M3:
  case DType::F8E5M2: {
    TILEC_ASSERT(arch >= 89, "fp8 conversion reached the GPU lowering below sm_89");
    std::string zero = opReg("mov.f32", RegClass::F32, {immF32(0)});
    const char *ty = d == DType::F8E4M3 ? "e4m3x2" : "e5m2x2";
    return opReg(std::string("cvt.rn.satfinite.") + ty + ".f32", RegClass::B16, {zero, f});
  }
  default:
    TILEC_ASSERT(false, "fromF32 to a non-float");
  }
}

std::string Lowering::castScalar(const std::string &r, DType from, DType to, bool rtz) {
  if (from == to)
    return r;
  RegClass fc = regClassOf(from), tc = regClassOf(to);
  if (to == DType::I1) {
    if (isFloat(from))
      return opReg("setp.neu" + floatSuffix(from == DType::F64 ? from : DType::F32), RegClass::Pred,
                   {toF32IfNeeded(r, from), from == DType::F64 ? immF64(0) : immF32(0)});
    return opReg("setp.ne" + bitsSuffix(from), RegClass::Pred, {r, "0"});
  }
  if (from == DType::I1) {
    if (isFloat(to))
      return fromF32(opReg("selp.f32", RegClass::F32, {immF32(1), immF32(0), r}), to);
    return opReg(std::string("selp") + (tc == RegClass::B64 ? ".u64" : ".u32"), tc, {"1", "0", r});
  }
  if (!isFloat(from) && !isFloat(to)) {
    if (fc == RegClass::B32 && tc == RegClass::B32)
      return normalize(r, to);
    if (fc == RegClass::B32) // widen by the source's signedness
      return opReg(isUnsigned(from) ? "cvt.u64.u32" : "cvt.s64.s32", RegClass::B64, {r});
    if (tc == RegClass::B32)
      return normalize(opReg("cvt.u32.u64", RegClass::B32, {r}), to);
    return r; // 64 bits to 64 bits, or pointers
  }
  if (isFloat(from) && isFloat(to)) {
    if (from == DType::F64 && to != DType::F32 && to != DType::F16)
      return fromF32(
          opReg(std::string("cvt") + (rtz ? ".rz" : ".rn") + ".f32.f64", RegClass::F32, {r}), to,
          rtz);
    if (from == DType::F64)
      return opReg(std::string("cvt") + (rtz ? ".rz" : ".rn") +
                       (to == DType::F32 ? ".f32.f64" : ".f16.f64"),
                   tc, {r});
    if (to == DType::F64 && from == DType::F32)
      return opReg("cvt.f64.f32", RegClass::F64, {r});
    return fromF32(toF32(r, from), to, rtz);
  }
  std::string src = isUnsigned(from) ? (dtypeBits(from) == 64 ? "u64" : "u32")
                                     : (dtypeBits(from) == 64 ? "s64" : "s32");
  if (isFloat(to)) { // integer -> float
    if (to == DType::F64)
      return opReg("cvt.rn.f64." + src, RegClass::F64, {r});
    if (to == DType::F16)
      return opReg("cvt.rn.f16." + src, RegClass::B16, {r});
    return fromF32(opReg("cvt.rn.f32." + src, RegClass::F32, {r}), to);
  }
  // float -> integer: truncate, saturate, NaN to 0 (what cvt.rzi does)
  std::string f = from == DType::F64 ? r : toF32(r, from);
  std::string fs = from == DType::F64 ? "f64" : "f32";
  bool wide = dtypeBits(to) == 64;
  std::string dst = isUnsigned(to) ? (wide ? "u64" : "u32") : (wide ? "s64" : "s32");
  std::string out = opReg("cvt.rzi." + dst + "." + fs, tc, {f});
  if (isNarrowInt(to)) {
    int bits = dtypeBits(to);
    int64_t hi = isUnsigned(to) ? (1 << bits) - 1 : (1 << (bits - 1)) - 1;
    int64_t lo = isUnsigned(to) ? 0 : -(1 << (bits - 1));
    out = opReg(isUnsigned(to) ? "min.u32" : "min.s32", RegClass::B32, {out, imm(hi)});
    if (!isUnsigned(to))
      out = opReg("max.s32", RegClass::B32, {out, imm(lo)});
  }
  return out;
}

std::string Lowering::pointerPlus(const std::string &ptr, std::string offset, DType od,
                                  DType pointee) {
  if (od == DType::I1)
    offset = castScalar(offset, od, DType::I32, false);
  std::string size = imm(dtypeBytes(pointee));
  if (regClassOf(od) == RegClass::B64)
    return opReg("mad.lo.s64", RegClass::B64, {offset, size, ptr});
  return opReg(isUnsigned(od) ? "mad.wide.u32" : "mad.wide.s32", RegClass::B64,
               {offset, size, ptr});
}

std::string Lowering::toF32IfNeeded(const std::string &r, DType d) {
  return d == DType::F64 ? r : toF32(r, d);
}

// A known integer's bits as `d` holds them (registers keep narrow integers
// sign- or zero-extended; b16 registers their raw bits).
static uint64_t bitsOf(int64_t v, DType d) {
  int bits = dtypeBits(d);
  return bits == 64 ? (uint64_t)v : (uint64_t)v & ((1ull << bits) - 1);
}

std::string Lowering::compare(OpKind kind, DType d, const std::string &a, const std::string &c) {
  static const char *const kInt[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const char *const kFloat[] = {"eq", "neu", "lt", "le", "gt", "ge"};
  int k = (int)kind - (int)OpKind::CmpEq;
  if (d == DType::I1) {
    std::string ua = castScalar(a, DType::I1, DType::U32, false);
    std::string uc = castScalar(c, DType::I1, DType::U32, false);
    return opReg(std::string("setp.") + kInt[k] + ".u32", RegClass::Pred, {ua, uc});
  }
  if (isFloat(d)) {
    DType cd = d == DType::F64 ? d : DType::F32;
    return opReg(std::string("setp.") + kFloat[k] + floatSuffix(cd), RegClass::Pred,
                 {toF32IfNeeded(a, d), toF32IfNeeded(c, d)});
  }
  std::optional<int64_t> x = knownValue(a), y = knownValue(c);
  if (x && y) { // known on both sides: compared as `d` compares them
    uint64_t ux = bitsOf(*x, d), uy = bitsOf(*y, d), top = 1ull << (dtypeBits(d) - 1);
    if (!isUnsigned(d)) { // order by the sign-flipped bits
      ux ^= top;
      uy ^= top;
    }
    bool v = k == 0 ? ux == uy : k == 1 ? ux != uy : k == 2 ? ux < uy : k == 3 ? ux <= uy
           : k == 4 ? ux > uy : ux >= uy;
    return knownConstant(RegClass::Pred, v);
  }
  std::string suffix = (k < 2) ? bitsSuffix(d) : intSuffix(d);
  return opReg(std::string("setp.") + kInt[k] + suffix, RegClass::Pred, {a, c});
}

std::string Lowering::select(DType d, const std::string &c, const std::string &a,
                             const std::string &e) {
  if (std::optional<int64_t> known = knownValue(c))
    return *known ? a : e;
  RegClass rc = regClassOf(d);
  if (rc == RegClass::Pred) {
    std::string t = opReg("and.pred", rc, {c, a});
    std::string nc = opReg("not.pred", rc, {c});
    std::string f = opReg("and.pred", rc, {nc, e});
    return opReg("or.pred", rc, {t, f});
  }
  static const char *const kSel[] = {"",         "selp.b16", "selp.b32",
                                     "selp.b64", "selp.f32", "selp.f64"};
  return opReg(kSel[(int)rc], rc, {a, e, c});
}

// Float math in f32 (or f64): the instruction, or a short sequence.
static std::string floatBinary(Lowering &L, const Op &op, OpKind kind, DType d,
                               const std::string &a, const std::string &c) {
  std::string s = floatSuffix(d);
  std::string rn = L.opts.enableFpFusion ? "" : ".rn";
  RegClass rc = regClassOf(d);
  switch (kind) {
  case OpKind::Add:
    return L.opReg("add" + rn + s, rc, {a, c});
  case OpKind::Sub:
    return L.opReg("sub" + rn + s, rc, {a, c});
  case OpKind::Mul:
    return L.opReg("mul" + rn + s, rc, {a, c});
  case OpKind::Div: // f32 as Triton divides (2 ulp), unless rounding exactly is asked for
    return L.opReg(d == DType::F64 || op.strAttr("rounding") == "rn" ? "div.rn" + s
                                                                     : std::string("div.full.f32"),
                   rc, {a, c});
  case OpKind::Min:
    return L.opReg("min" + s, rc, {a, c});
  case OpKind::Max:
    return L.opReg("max" + s, rc, {a, c});
  case OpKind::FRem: { // a - trunc(a / c) * c, with the sign of a
    std::string q = L.opReg("div.rn" + s, rc, {a, c});
    q = L.opReg("cvt.rzi" + s + s, rc, {q});
    q = L.opReg("neg" + s, rc, {q});
    return L.opReg("fma.rn" + s, rc, {q, c, a});
  }
  case OpKind::Pow:
    return d == DType::F64 ? L.powF64(a, c) : L.powF32(L.toF32IfNeeded(a, d), L.toF32IfNeeded(c, d));
  case OpKind::Atan2:
    return d == DType::F64 ? L.atan2F64(a, c)
                           : L.atan2F32(L.toF32IfNeeded(a, d), L.toF32IfNeeded(c, d));
  default:
    L.unsupported(op, std::string("'") + op.info().mnemonic + "' on floats");
  }
}

std::string Lowering::binary(const Op &op, OpKind kind, DType d, const std::string &a,
                             const std::string &c) {
  if (isFloat(d)) {
    if (needsF32(d))
      return fromF32(floatBinary(*this, op, kind, DType::F32, toF32(a, d), toF32(c, d)), d);
    return floatBinary(*this, op, kind, d, a, c);
  }
  if (d == DType::I1) {
    switch (kind) {
    case OpKind::And:
    case OpKind::Min:
    case OpKind::Mul:
      return opReg("and.pred", RegClass::Pred, {a, c});
    case OpKind::Or:
    case OpKind::Max:
      return opReg("or.pred", RegClass::Pred, {a, c});
    case OpKind::Xor:
    case OpKind::Add:
    case OpKind::Sub:
      return opReg("xor.pred", RegClass::Pred, {a, c});
    default: {
      std::string r = binary(op, kind, DType::U8, castScalar(a, DType::I1, DType::U8, false),
                             castScalar(c, DType::I1, DType::U8, false));
      return castScalar(opReg("and.b32", RegClass::B32, {r, "1"}), DType::U8, DType::I1, false);
    }
    }
  }
  RegClass rc = regClassOf(d);
  std::string is = intSuffix(d), bs = bitsSuffix(d);
  bool wide = rc == RegClass::B64;
  if (kind == OpKind::Max || kind == OpKind::Min) { // with the identity: the other operand
    bool isMax = kind == OpKind::Max;
    auto identity = [&](const std::string &r) {
      std::optional<int64_t> v = knownValue(r);
      if (!v)
        return false;
      uint64_t u = bitsOf(*v, d), all = bitsOf(-1, d), top = 1ull << (dtypeBits(d) - 1);
      return isUnsigned(d) ? u == (isMax ? 0 : all) : u == (isMax ? top : top - 1);
    };
    if (identity(a))
      return c;
    if (identity(c))
      return a;
  }
  auto shiftAmount = [&]() {
    if (!wide)
      return c;
    std::string m = opReg("min.u64", RegClass::B64, {c, "64"});
    return opReg("cvt.u32.u64", RegClass::B32, {m});
  };
  std::string r;
  switch (kind) {
  case OpKind::Add:
    r = opReg("add" + is, rc, {a, c});
    break;
  case OpKind::Sub:
    r = opReg("sub" + is, rc, {a, c});
    break;
  case OpKind::Mul:
    r = opReg("mul.lo" + is, rc, {a, c});
    break;
  case OpKind::IDiv:
    r = opReg("div" + is, rc, {a, c});
    break;
  case OpKind::IRem:
    r = opReg("rem" + is, rc, {a, c});
    break;
  case OpKind::And:
    return opReg("and" + bs, rc, {a, c});
  case OpKind::Or:
    return opReg("or" + bs, rc, {a, c});
  case OpKind::Xor:
    return opReg("xor" + bs, rc, {a, c});
  case OpKind::Shl:
    r = opReg("shl" + bs, rc, {a, shiftAmount()});
    break;
  case OpKind::Shr:
    return opReg(std::string("shr") + (isUnsigned(d) ? ".u" : ".s") + (wide ? "64" : "32"), rc,
                 {a, shiftAmount()});
  case OpKind::Min:
    return opReg("min" + is, rc, {a, c});
  case OpKind::Max:
    return opReg("max" + is, rc, {a, c});
  case OpKind::UMulHi:
    if (isNarrowInt(d)) {
      r = opReg("mul.lo.s32", rc, {a, c});
      r = opReg("shr.s32", rc, {r, imm(dtypeBits(d))});
      break;
    }
    return opReg("mul.hi" + is, rc, {a, c});
  default:
    unsupported(op, std::string("'") + op.info().mnemonic + "' on integers");
  }
  return normalize(r, d);
}

std::string Lowering::unary(const Op &op, OpKind kind, DType d, const std::string &a) {
  if (d == DType::I1) {
    if (kind == OpKind::Not)
      return opReg("not.pred", RegClass::Pred, {a});
    if (kind == OpKind::Abs || kind == OpKind::Neg)
      return a;
  }
  if (!isFloat(d)) {
    RegClass rc = regClassOf(d);
    bool wide = rc == RegClass::B64;
    switch (kind) {
    case OpKind::Neg:
      return normalize(opReg(wide ? "neg.s64" : "neg.s32", rc, {a}), d);
    case OpKind::Not:
      return normalize(opReg(wide ? "not.b64" : "not.b32", rc, {a}), d);
    case OpKind::Abs:
      if (isUnsigned(d))
        return a;
      return normalize(opReg(wide ? "abs.s64" : "abs.s32", rc, {a}), d);
    default:
      unsupported(op, std::string("'") + op.info().mnemonic + "' on integers");
    }
  }
  if (d == DType::F64) {
    switch (kind) {
    case OpKind::Neg:
      return opReg("neg.f64", RegClass::F64, {a});
    case OpKind::Abs:
      return opReg("abs.f64", RegClass::F64, {a});
    case OpKind::Sqrt:
      return opReg("sqrt.rn.f64", RegClass::F64, {a});
    case OpKind::Rsqrt:
      return opReg("rcp.rn.f64", RegClass::F64, {opReg("sqrt.rn.f64", RegClass::F64, {a})});
    case OpKind::Floor:
      return opReg("cvt.rmi.f64.f64", RegClass::F64, {a});
    case OpKind::Ceil:
      return opReg("cvt.rpi.f64.f64", RegClass::F64, {a});
    default:
      return mathF64(op, kind, a);
    }
  }
  if (needsF32(d)) {
    if (kind == OpKind::Abs && d != DType::F8E4M3 && d != DType::F8E5M2)
      return opReg("and.b16", RegClass::B16, {a, "0x7FFF"});
    return fromF32(unary(op, kind, DType::F32, toF32(a, d)), d);
  }
  return mathF32(op, kind, a);
}

void Lowering::lowerElementwise(const Op &op) {
  // In the layout the layout passes gave the result; operands elsewhere are
  // recomputed there where cheap, else moved.
  const LinearLayout *layout = op.result()->type.isTensor() ? layoutFor(op.result()) : nullptr;
  std::vector<TVal> xs;
  for (Value *v : op.operands)
    xs.push_back(layout ? materialize(v, layout) : val(v));
  bind(op.result(), computeElementwise(op, xs, layout));
}

TVal Lowering::computeElementwise(const Op &op, const std::vector<TVal> &xs,
                                  const LinearLayout *layout, const std::vector<char> *needed) {
  const Type &rt = op.result()->type;
  DType d = op.operand(0)->type.dtype;
  int n = layout ? layout->numRegs() : 1;
  TVal out{layout, {}};
  out.regs.reserve(n);
  for (int r = 0; r < n; ++r) {
    if (needed && !(*needed)[r]) {
      out.regs.emplace_back();
      continue;
    }
    auto x = [&](int k) { return xs[k].regs[r]; };
    std::string res;
    switch (op.kind) {
    case OpKind::Select:
      res = select(rt.dtype, x(0), x(1), x(2));
      break;
    case OpKind::Fma:
      if (needsF32(d))
        res = fromF32(
            opReg("fma.rn.f32", RegClass::F32, {toF32(x(0), d), toF32(x(1), d), toF32(x(2), d)}),
            d);
      else
        res = opReg("fma.rn" + floatSuffix(d), regClassOf(d), {x(0), x(1), x(2)});
      break;
    case OpKind::AddPtr:
      res = pointerPlus(x(0), x(1), op.operand(1)->type.dtype, rt.pointee);
      break;
    case OpKind::CmpEq:
    case OpKind::CmpNe:
    case OpKind::CmpLt:
    case OpKind::CmpLe:
    case OpKind::CmpGt:
    case OpKind::CmpGe:
      res = compare(op.kind, d, x(0), x(1));
      break;
    default:
      res = op.operands.size() == 1 ? unary(op, op.kind, d, x(0))
                                    : binary(op, op.kind, d, x(0), x(1));
    }
    out.regs.push_back(res);
  }
  return out;
}

void Lowering::lowerCast(const Op &op) {
  const Value *x = op.operand(0);
  bind(op.result(),
       computeCast(op, x->type.isTensor() ? materialize(x, layoutFor(op.result())) : val(x)));
}

TVal Lowering::computeCast(const Op &op, const TVal &x) {
  DType from = op.operand(0)->type.dtype, to = op.result()->type.dtype;
  bool rtz = op.strAttr("rounding") == "rtz";
  if (rtz && (to == DType::F8E4M3 || to == DType::F8E5M2))
    unsupported(op, "rounding toward zero to fp8");
  TVal out{x.layout, {}, x.uniform};
  // f32 to f16 or bf16 rounds two elements per instruction, into the halves of
  // one register (as an MMA operand or a packed store takes them).
  bool pairs = op.kind == OpKind::Cast && from == DType::F32 && !rtz && !x.uniform &&
               (to == DType::F16 || to == DType::BF16) && x.regs.size() % 2 == 0;
  for (size_t i = 0; pairs && i < x.regs.size(); i += 2) {
    std::string packed = opReg(to == DType::F16 ? "cvt.rn.f16x2.f32" : "cvt.rn.bf16x2.f32",
                               RegClass::B32, {x.regs[i + 1], x.regs[i]});
    auto [lo, hi] = splitWord(*this, packed);
    out.regs.push_back(lo);
    out.regs.push_back(hi);
  }
  for (const std::string &r : pairs ? std::vector<std::string>{} : x.regs) {
    switch (op.kind) {
    case OpKind::Cast:
      out.regs.push_back(castScalar(r, from, to, rtz));
      break;
    case OpKind::Bitcast:
      out.regs.push_back(storageMove(to, r));
      break;
    default: // int <-> ptr
      out.regs.push_back(isPointer(to) ? castScalar(r, from, DType::U64, false)
                                       : castScalar(r, DType::U64, to, false));
    }
  }
  return out;
}

// Reinterprets the bits of `r` as type `to` (same width).
std::string Lowering::storageMove(DType to, const std::string &r) {
  RegClass rc = regClassOf(to);
  if (rc == RegClass::Pred)
    return r;
  char from = r[1];
  bool narrow = isNarrowInt(to);
  if (rc == RegClass::B32 && from == 'h') { // 16-bit float bits -> i16/u16
    return normalize(opReg(isUnsigned(to) ? "cvt.u32.u16" : "cvt.s32.s16", RegClass::B32, {r}), to);
  }
  if (rc == RegClass::B16 && from == 'r') // i16/u16/i8 -> 16-bit float bits
    return opReg("cvt.u16.u32", RegClass::B16, {r});
  std::string out = opReg(std::string("mov") + (rc == RegClass::F32   ? ".b32"
                                                : rc == RegClass::F64 ? ".b64"
                                                : rc == RegClass::B64 ? ".b64"
                                                : rc == RegClass::B16 ? ".b16"
                                                                      : ".b32"),
                          rc, {r});
  return narrow ? normalize(out, to) : out;
}

} // namespace tilec::nvidia
