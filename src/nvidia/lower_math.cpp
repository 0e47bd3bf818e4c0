// f32 math functions as PTX sequences: the hardware's approximate exp2 and
// rsqrt where they are accurate enough, and argument reduction plus series
// elsewhere, so results stay within a few ulp without libdevice.
#include <cmath>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

// Instructions of one float width: `op("mul.rn", ...)` appends the width.
struct FloatOps {
  Lowering &L;
  bool wide; // f64, else f32
  std::string t() const { return wide ? ".f64" : ".f32"; }
  std::string op(const std::string &instr, std::vector<std::string> srcs) {
    bool typed = instr.size() > 4 && (instr.compare(instr.size() - 4, 4, ".f32") == 0 ||
                                      instr.compare(instr.size() - 4, 4, ".f64") == 0);
    return L.opReg(typed ? instr : instr + t(), wide ? RegClass::F64 : RegClass::F32, srcs);
  }
  std::string k(double v) { return wide ? immF64(v) : immF32(v); }
  std::string mul(const std::string &a, const std::string &b) { return op("mul.rn", {a, b}); }
  std::string add(const std::string &a, const std::string &b) { return op("add.rn", {a, b}); }
  std::string sub(const std::string &a, const std::string &b) { return op("sub.rn", {a, b}); }
  std::string fma(const std::string &a, const std::string &b, const std::string &c) {
    return op("fma.rn", {a, b, c});
  }
  // f32: 2 ulp, as Triton divides; the functions built on it allow that.
  std::string div(const std::string &a, const std::string &b) {
    return wide ? op("div.rn", {a, b}) : op("div.full.f32", {a, b});
  }
  // c[0] + c[1] x + c[2] x^2 + ..., by Horner.
  std::string poly(const std::string &x, const std::vector<double> &c) {
    std::string acc = op("mov", {k(c.back())});
    for (int i = (int)c.size() - 2; i >= 0; --i)
      acc = fma(acc, x, k(c[i]));
    return acc;
  }
  std::string pred(const std::string &instr, const std::string &a, const std::string &b) {
    return L.opReg(instr, RegClass::Pred, {a, b});
  }
  // setp.<rel> of this width: cmp("lt", a, b) is a < b.
  std::string cmp(const std::string &rel, const std::string &a, const std::string &b) {
    return pred("setp." + rel + t(), a, b);
  }
  std::string sel(const std::string &p, const std::string &a, const std::string &b) {
    return op("selp", {a, b, p});
  }
};

struct F32 : FloatOps {
  explicit F32(Lowering &l) : FloatOps{l, false} {}
};
struct F64 : FloatOps {
  explicit F64(Lowering &l) : FloatOps{l, true} {}
};

std::string sinCosOf(Lowering &L, const std::string &x, bool cosine, bool wide);
std::string tanhOf(Lowering &L, const std::string &x, bool wide);

// Taylor coefficients of sin(r)/r (firstPower 1) or cos(r) (0) in r^2.
std::vector<double> taylor(int terms, int firstPower, bool alternate) {
  std::vector<double> c;
  for (int i = 0; i < terms; ++i) {
    double fact = 1;
    for (int j = 2; j <= firstPower + 2 * i; ++j)
      fact *= j;
    c.push_back((alternate && i % 2 ? -1.0 : 1.0) / fact);
  }
  return c;
}

} // namespace

// log(x) = e*ln2 + log1p(t), t = m - 1, m in [sqrt(1/2), sqrt(2)); log1p(t)
// = t + t^2 (t P(t) - 1/2), P a degree-7 least-squares fit of ours on that
// interval (under 1 ulp over 4M arguments sampled from every binade; no
// division).
static std::string logF32(Lowering &L, const std::string &x) {
  F32 f{L};
  // Subnormals: scale up by 2^23 first.
  std::string tiny = f.pred("setp.lt.f32", x, f.k(1.17549435e-38));
  std::string scaled = f.mul(x, f.k(8388608.0));
  std::string xs = f.sel(tiny, scaled, x);
  std::string bits = L.opReg("mov.b32", RegClass::B32, {xs});
  // Exponent relative to sqrt(1/2): m in [0.7071, 1.4142).
  std::string shifted = L.opReg("sub.s32", RegClass::B32, {bits, "0x3F3504F3"});
  std::string e = L.opReg("shr.s32", RegClass::B32, {shifted, "23"});
  std::string mbits = L.opReg("shl.b32", RegClass::B32, {e, "23"});
  mbits = L.opReg("sub.s32", RegClass::B32, {bits, mbits});
  std::string t = f.sub(L.opReg("mov.b32", RegClass::F32, {mbits}), f.k(1.0));
  std::string ef = L.opReg("cvt.rn.f32.s32", RegClass::F32, {e});
  ef = f.sub(ef, f.sel(tiny, f.k(23.0), f.k(0.0)));
  std::string p = f.poly(t, {0.3333335518836975, -0.2500085234642029, 0.19999825954437256,
                             -0.16621370613574982, 0.14227114617824554, -0.13202103972434998,
                             0.1262032687664032, -0.07362867891788483});
  std::string logm = f.fma(f.mul(t, t), f.fma(p, t, f.k(-0.5)), t);
  // One ln2 in f32 is off by 2e-9: under 0.05 ulp of the result for any e.
  std::string r = f.fma(ef, f.k(0.6931471805599453), logm);
  // Zeros, negatives, inf and nan: bit patterns of xs from inf up or 0, less
  // one, unsigned. For them the hardware's lg2 gives the result (-inf, nan,
  // inf, nan): scaled, negative subnormals are normal, so its flush to zero
  // cannot turn them into -0 (and its own subnormal guard is not needed).
  std::string special =
      f.pred("setp.gt.u32", L.opReg("add.s32", RegClass::B32, {bits, "-1"}), "0x7F7FFFFE");
  return f.sel(special, f.op("lg2.approx.ftz.f32", {xs}), r);
}

// exp(x) as 2^(x log2 e), as Triton computes it: within a few ulp for the
// arguments softmax and friends see, and inf, -inf and NaN come out right.
// Results below 2^-126 flush to zero (as Triton's do): the unit takes one
// instruction for them, the exact form three more.
static std::string expF32(Lowering &L, const std::string &x) {
  F32 f{L};
  return f.op("ex2.approx.ftz.f32", {f.mul(x, f.k(1.4426950408889634))});
}

// erf: a series for |x| < 1, Abramowitz and Stegun 7.1.26 above.
static std::string erfF32(Lowering &L, const std::string &x) {
  F32 f{L};
  std::string ax = f.op("abs.f32", {x});
  std::string x2 = f.mul(x, x);
  std::vector<double> series;
  double fact = 1;
  for (int n = 0; n < 12; ++n) {
    if (n)
      fact *= n;
    series.push_back((n % 2 ? -1.0 : 1.0) * 2 / std::sqrt(M_PI) / (fact * (2 * n + 1)));
  }
  std::string small = f.mul(x, f.poly(x2, series));
  std::string t = f.div(f.k(1.0), f.fma(ax, f.k(0.3275911), f.k(1.0)));
  std::string p =
      f.mul(t, f.poly(t, {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429}));
  std::string e = expF32(L, f.op("neg.f32", {x2}));
  std::string large = f.sub(f.k(1.0), f.mul(p, e));
  std::string neg = f.pred("setp.lt.f32", x, f.k(0.0));
  large = f.sel(neg, f.op("neg.f32", {large}), large);
  std::string isSmall = f.pred("setp.lt.f32", ax, f.k(1.0));
  return f.sel(isSmall, small, large);
}

std::string Lowering::mathF32(const Op &op, OpKind kind, const std::string &x) {
  F32 f{*this};
  switch (kind) {
  case OpKind::Neg:
    return f.op("neg.f32", {x});
  case OpKind::Abs:
    return f.op("abs.f32", {x});
  case OpKind::Exp:
    return expF32(*this, x);
  case OpKind::Exp2:
    return f.op("ex2.approx.ftz.f32", {x});
  case OpKind::Log:
    return logF32(*this, x);
  case OpKind::Log2:
    return f.mul(logF32(*this, x), f.k(1.4426950408889634));
  case OpKind::Sqrt:
    return f.op("sqrt.rn.f32", {x});
  case OpKind::Rsqrt:
    return f.op("rsqrt.approx.f32", {x});
  case OpKind::Sin:
    return sinCosOf(*this, x, false, false);
  case OpKind::Cos:
    return sinCosOf(*this, x, true, false);
  case OpKind::Tanh:
    return tanhOf(*this, x, false);
  case OpKind::Floor:
    return f.op("cvt.rmi.f32.f32", {x});
  case OpKind::Ceil:
    return f.op("cvt.rpi.f32.f32", {x});
  case OpKind::Erf:
    return erfF32(*this, x);
  default:
    unsupported(op, std::string("'") + op.info().mnemonic + "' on floats");
  }
}

// --- f64: the same reductions, with series long enough for double precision.

namespace {} // namespace

// exp: x = n ln2 + r, |r| <= ln2/2, e^r by its series, then scaled by 2^n in two
// steps (so that 2^n alone may overflow or underflow while the result does not).
static std::string expF64(Lowering &L, const std::string &x) {
  F64 f{L};
  std::string xc = f.op("min.f64", {f.op("max.f64", {x, f.k(-746.0)}), f.k(710.0)});
  std::string n = f.op("cvt.rni.f64.f64", {f.mul(xc, f.k(1.4426950408889634))});
  std::string r = f.fma(n, f.k(-6.93147180369123816490e-01), xc);
  r = f.fma(n, f.k(-1.90821492927058770002e-10), r);
  std::vector<double> c;
  double fact = 1;
  for (int i = 0; i < 14; ++i) {
    if (i)
      fact *= i;
    c.push_back(1 / fact);
  }
  std::string e = f.poly(r, c);
  std::string ni = L.opReg("cvt.rzi.s32.f64", RegClass::B32, {n});
  std::string half = L.opReg("shr.s32", RegClass::B32, {ni, "1"});
  std::string rest = L.opReg("sub.s32", RegClass::B32, {ni, half});
  auto pow2 = [&](const std::string &k) {
    std::string biased = L.opReg("add.s32", RegClass::B32, {k, "1023"});
    std::string wide = L.opReg("cvt.u64.u32", RegClass::B64, {biased});
    wide = L.opReg("shl.b64", RegClass::B64, {wide, "52"});
    return L.opReg("mov.b64", RegClass::F64, {wide});
  };
  std::string out = f.mul(f.mul(e, pow2(half)), pow2(rest));
  std::string nan = f.pred("setp.nan.f64", x, x);
  return f.sel(nan, x, out);
}

// log: x = 2^e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m-1)/(m+1)).
static std::string logF64(Lowering &L, const std::string &x) {
  F64 f{L};
  std::string tiny = f.pred("setp.lt.f64", x, f.k(2.2250738585072014e-308));
  std::string xs = f.sel(tiny, f.mul(x, f.k(4503599627370496.0)), x); // 2^52
  std::string bits = L.opReg("mov.b64", RegClass::B64, {xs});
  std::string shifted = L.opReg("sub.s64", RegClass::B64, {bits, "0x3FE6A09E667F3BCD"});
  std::string e = L.opReg("shr.s64", RegClass::B64, {shifted, "52"});
  std::string mbits = L.opReg("shl.b64", RegClass::B64, {e, "52"});
  mbits = L.opReg("sub.s64", RegClass::B64, {bits, mbits});
  std::string m = L.opReg("mov.b64", RegClass::F64, {mbits});
  std::string ef = L.opReg("cvt.rn.f64.s64", RegClass::F64, {e});
  ef = f.op("sub.rn.f64", {ef, f.sel(tiny, f.k(52.0), f.k(0.0))});
  std::string s =
      f.op("div.rn.f64", {f.op("sub.rn.f64", {m, f.k(1.0)}), f.op("add.rn.f64", {m, f.k(1.0)})});
  std::string s2 = f.mul(s, s);
  std::vector<double> c;
  for (int i = 0; i < 13; ++i)
    c.push_back(2.0 / (2 * i + 1));
  std::string logm = f.mul(s, f.poly(s2, c));
  std::string r = f.fma(ef, f.k(6.93147180369123816490e-01), logm);
  r = f.fma(ef, f.k(1.90821492927058770002e-10), r);
  std::string ordinary = f.pred("setp.gt.f64", x, f.k(0.0));
  std::string finite = f.pred("setp.lt.f64", x, f.k(INFINITY));
  ordinary = L.opReg("and.pred", RegClass::Pred, {ordinary, finite});
  std::string zero = f.pred("setp.eq.f64", x, f.k(0.0));
  std::string special = f.sel(zero, f.k(-INFINITY), f.sel(finite, f.k(NAN), x));
  return f.sel(ordinary, r, special);
}

std::string Lowering::mathF64(const Op &op, OpKind kind, const std::string &x) {
  F64 f{*this};
  switch (kind) {
  case OpKind::Exp:
    return expF64(*this, x);
  case OpKind::Exp2:
    return expF64(*this, f.mul(x, f.k(0.69314718055994530942)));
  case OpKind::Log:
    return logF64(*this, x);
  case OpKind::Log2:
    return f.mul(logF64(*this, x), f.k(1.44269504088896340736));
  case OpKind::Sin:
    return sinCosOf(*this, x, false, true);
  case OpKind::Cos:
    return sinCosOf(*this, x, true, true);
  case OpKind::Tanh:
    return tanhOf(*this, x, true);
  case OpKind::Erf: { // 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)): no cancellation
    std::string ax = f.op("abs.f64", {x});
    std::string xc = f.op("min.f64", {ax, f.k(6.0)}); // erf(6) is 1 to double precision
    std::vector<double> c;
    double term = 1;
    for (int n = 0; n < 110; ++n) {
      c.push_back(term);
      term *= 2.0 / (2 * n + 3);
    }
    std::string x2 = f.mul(xc, xc);
    std::string sum = f.mul(xc, f.poly(x2, c));
    std::string e = expF64(*this, f.op("neg.f64", {x2}));
    std::string r = f.mul(f.mul(sum, e), f.k(1.1283791670955125739));
    r = f.op("min.f64", {r, f.k(1.0)});
    return f.sel(f.pred("setp.lt.f64", x, f.k(0.0)), f.op("neg.f64", {r}), r);
  }
  default:
    unsupported(op, std::string("'") + op.info().mnemonic + "' on f64");
  }
}

// exp and log of either width.
static std::string expOf(Lowering &L, const std::string &x, bool wide) {
  return wide ? expF64(L, x) : expF32(L, x);
}
static std::string logOf(Lowering &L, const std::string &x, bool wide) {
  return wide ? logF64(L, x) : logF32(L, x);
}

namespace {

// sin or cos: reduce to r in [-pi/4, pi/4] and quadrant q (x - q pi/2 with
// pi/2 in three parts, each product exact: Cody and Waite), then a series.
std::string sinCosOf(Lowering &L, const std::string &x, bool cosine, bool wide) {
  FloatOps f{L, wide};
  static const double kPiOver2[2][3] = {
      {1.5703125, 4.837512969970703e-04, 7.549789948768648e-08},
      {1.5707963267341256e+00, 6.07710050630396597660e-11, 2.0222662487959506e-21}};
  std::string q =
      f.op(wide ? "cvt.rni.f64.f64" : "cvt.rni.f32.f32", {f.mul(x, f.k(0.63661977236758134308))});
  std::string r = x;
  for (double part : kPiOver2[wide])
    r = f.fma(q, f.k(-part), r);
  std::string r2 = f.mul(r, r);
  std::string s = f.mul(r, f.poly(r2, taylor(wide ? 12 : 6, 1, true)));
  std::string c = f.poly(r2, taylor(wide ? 12 : 7, 0, true));
  std::string qi = L.opReg(wide ? "cvt.rzi.s32.f64" : "cvt.rzi.s32.f32", RegClass::B32, {q});
  if (cosine)
    qi = L.opReg("add.s32", RegClass::B32, {qi, "1"});
  std::string odd = L.opReg("and.b32", RegClass::B32, {qi, "1"});
  std::string useCos = L.opReg("setp.ne.u32", RegClass::Pred, {odd, "0"});
  std::string v = f.sel(useCos, c, s);
  std::string neg = L.opReg("and.b32", RegClass::B32, {qi, "2"});
  std::string flip = L.opReg("setp.ne.u32", RegClass::Pred, {neg, "0"});
  return f.sel(flip, f.op("neg", {v}), v);
}

// tanh: a series near 0, 1 - 2/(e^2x + 1) elsewhere (its cancellation stays
// small beyond the threshold).
std::string tanhOf(Lowering &L, const std::string &x, bool wide) {
  FloatOps f{L, wide};
  std::string ax = f.op("abs", {x});
  std::string small = f.mul(x, f.poly(f.mul(x, x), {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315,
                                                    62.0 / 2835, -1382.0 / 155925}));
  std::string e = expOf(L, f.mul(ax, f.k(2.0)), wide);
  std::string large = f.sub(f.k(1.0), f.div(f.k(2.0), f.add(e, f.k(1.0))));
  large = f.sel(f.cmp("lt", x, f.k(0.0)), f.op("neg", {large}), large);
  return f.sel(f.cmp("lt", ax, f.k(wide ? 0.05 : 0.3)), small, large);
}

} // namespace

// x^y = e^(y log|x|); for x < 0 defined at integer y, negative at odd y.
static std::string powOf(Lowering &L, const std::string &x, const std::string &y, bool wide) {
  FloatOps f{L, wide};
  std::string ax = f.op("abs", {x});
  std::string r = expOf(L, f.mul(y, logOf(L, ax, wide)), wide);
  std::string yi = f.op(wide ? "cvt.rzi.f64.f64" : "cvt.rzi.f32.f32", {y});
  std::string isInt = f.cmp("eq", yi, y);
  std::string half = f.mul(y, f.k(0.5));
  std::string halfInt = f.op(wide ? "cvt.rzi.f64.f64" : "cvt.rzi.f32.f32", {half});
  std::string odd = f.cmp("ne", halfInt, half);
  std::string negX = f.cmp("lt", x, f.k(0.0));
  std::string negR = f.sel(odd, f.op("neg", {r}), r);
  std::string forNeg = f.sel(isInt, negR, f.k(NAN));
  r = f.sel(negX, forNeg, r);
  std::string yZero = f.cmp("eq", y, f.k(0.0));
  return f.sel(yZero, f.k(1.0), r);
}

// atan2(y, x): atan of min/max in [0, 1] (by a series after reducing past
// tan(pi/8)), then the octant and the sign of y.
static std::string atan2Of(Lowering &L, const std::string &y, const std::string &x, bool wide) {
  FloatOps f{L, wide};
  std::string ax = f.op("abs", {x}), ay = f.op("abs", {y});
  std::string hi = f.op("max", {ax, ay}), lo = f.op("min", {ax, ay});
  std::string t = f.div(lo, hi);
  std::string upper = f.cmp("gt", t, f.k(0.41421356237309503));
  std::string tr = f.sel(upper, f.div(f.sub(t, f.k(1.0)), f.add(t, f.k(1.0))), t);
  std::vector<double> series;
  for (int n = 0; n < (wide ? 22 : 11); ++n)
    series.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
  std::string a = f.mul(tr, f.poly(f.mul(tr, tr), series));
  a = f.sel(upper, f.add(a, f.k(M_PI / 4)), a);
  a = f.sel(f.cmp("gt", ay, ax), f.sub(f.k(M_PI / 2), a), a);
  std::string left = f.cmp("lt", x, f.k(0.0));
  a = f.sel(left, f.sub(f.k(M_PI), a), a);
  std::string bothZero = f.cmp("eq", hi, f.k(0.0));
  a = f.sel(bothZero, f.sel(left, f.k(M_PI), f.k(0.0)), a);
  // the sign of y (copysign keeps -0)
  RegClass bits = wide ? RegClass::B64 : RegClass::B32;
  std::string mov = wide ? "mov.b64" : "mov.b32";
  std::string ybits = L.opReg(mov, bits, {y});
  std::string sign = L.opReg(wide ? "and.b64" : "and.b32", bits,
                             {ybits, wide ? "0x8000000000000000" : "0x80000000"});
  std::string abits = L.opReg(mov, bits, {a});
  abits = L.opReg(wide ? "or.b64" : "or.b32", bits, {abits, sign});
  return L.opReg(mov, wide ? RegClass::F64 : RegClass::F32, {abits});
}

std::string Lowering::powF32(const std::string &x, const std::string &y) {
  return powOf(*this, x, y, false);
}
std::string Lowering::atan2F32(const std::string &y, const std::string &x) {
  return atan2Of(*this, y, x, false);
}
std::string Lowering::powF64(const std::string &x, const std::string &y) {
  return powOf(*this, x, y, true);
}
std::string Lowering::atan2F64(const std::string &y, const std::string &x) {
  return atan2Of(*this, y, x, true);
}

} // namespace tilec::nvidia
