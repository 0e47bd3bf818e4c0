// Integer wrapping and the float formats (f64, f32, f16, bf16, fp8) on the CPU.
#include "cpu/numerics.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tilec::cpu {

int64_t wrapInt(int64_t v, DType d) {
  switch (d) {
  case DType::I1:
    return v & 1;
  case DType::I8:
    return (int8_t)v;
  case DType::I16:
    return (int16_t)v;
  case DType::I32:
    return (int32_t)v;
  case DType::U8:
    return (uint8_t)v;
  case DType::U16:
    return (uint16_t)v;
  case DType::U32:
    return (uint32_t)v;
  default:
    return v;
  }
}

void wrapInts(std::vector<int64_t> &v, DType d) {
  switch (d) {
  case DType::I64:
  case DType::U64:
  case DType::Ptr:
    return;
  case DType::I32:
    for (auto &x : v)
      x = (int32_t)x;
    return;
  default:
    for (auto &x : v)
      x = wrapInt(x, d);
  }
}

namespace {

// A binary float format: exponent and mantissa widths, and whether it has
// infinities (fp8 e4m3 does not; its only NaN is all ones).
struct Format {
  int expBits, mantBits;
  bool hasInf;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  double maxFinite() const {
    int emax = hasInf ? (1 << expBits) - 2 - bias() : (1 << expBits) - 1 - bias();
    double mant = hasInf ? 2.0 - std::ldexp(1.0, -mantBits) : 2.0 - std::ldexp(1.0, 1 - mantBits);
    return std::ldexp(mant, emax);
  }
};

Format formatOf(DType d) {
  switch (d) {
  case DType::F16:
    return {5, 10, true};
  case DType::BF16:
    return {8, 7, true};
  case DType::F8E4M3:
    return {4, 3, false};
  case DType::F8E5M2:
    return {5, 2, true};
  default:
    return {8, 23, true};
  }
}

double roundTo(double x, const Format &f, bool saturate) {
  if (std::isnan(x) || x == 0)
    return x;
  if (std::isinf(x))
    return saturate ? std::copysign(f.maxFinite(), x) : x;
  int e;
  std::frexp(std::fabs(x), &e); // |x| = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, 1 - f.bias());
  double scale = std::ldexp(1.0, exp - f.mantBits);
  double r = std::nearbyint(x / scale) * scale;
  if (std::fabs(r) > f.maxFinite())
    return saturate ? std::copysign(f.maxFinite(), x) : std::copysign(INFINITY, x);
  return r;
}

uint64_t encode(double x, const Format &f) {
  uint64_t sign = std::signbit(x) ? 1 : 0;
  uint64_t total = 1 + f.expBits + f.mantBits;
  uint64_t expMask = (1u << f.expBits) - 1;
  uint64_t out;
  if (std::isnan(x)) {
    out = f.hasInf ? (expMask << f.mantBits) | (1u << (f.mantBits - 1))
                   : (expMask << f.mantBits) | ((1u << f.mantBits) - 1);
  } else if (std::isinf(x)) {
    out = expMask << f.mantBits;
  } else if (x == 0) {
    out = 0;
  } else {
    int e;
    double m = std::frexp(std::fabs(x), &e); // value = m * 2^e
    int biased = e - 1 + f.bias();
    if (biased <= 0) { // subnormal: value = mant * 2^(1 - bias - mantBits)
      out = (uint64_t)std::ldexp(std::fabs(x), f.bias() - 1 + f.mantBits);
    } else {
      uint64_t mant = (uint64_t)std::ldexp(m * 2 - 1, f.mantBits);
      out = ((uint64_t)biased << f.mantBits) | mant;
    }
  }
  return out | (sign << (total - 1));
}

double decode(uint64_t bits, const Format &f) {
  uint64_t total = 1 + f.expBits + f.mantBits;
  bool sign = (bits >> (total - 1)) & 1;
  uint64_t expMask = (1u << f.expBits) - 1;
  uint64_t exp = (bits >> f.mantBits) & expMask;
  uint64_t mant = bits & ((1u << f.mantBits) - 1);
  double v;
  if (exp == expMask && f.hasInf)
    v = mant ? NAN : INFINITY;
  else if (exp == expMask && !f.hasInf && mant == ((1u << f.mantBits) - 1))
    v = NAN;
  else if (exp == 0)
    v = std::ldexp((double)mant, 1 - f.bias() - f.mantBits);
  else
    v = std::ldexp(1.0 + std::ldexp((double)mant, -f.mantBits), (int)exp - f.bias());
  return sign ? -v : v;
}

} // namespace

double roundFloat(double x, DType d) {
  switch (d) {
  case DType::F64:
    return x;
  case DType::F32:
    return (double)(float)x;
  case DType::F8E4M3:
  case DType::F8E5M2:
    return roundTo(x, formatOf(d), true);
  default:
    return roundTo(x, formatOf(d), false);
  }
}

void roundFloats(std::vector<double> &v, DType d) {
  if (d == DType::F64)
    return;
  if (d == DType::F32) {
    for (auto &x : v)
      x = (double)(float)x;
    return;
  }
  for (auto &x : v)
    x = roundFloat(x, d);
}

uint64_t floatToBits(double x, DType d) {
  if (d == DType::F64) {
    uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
  }
  if (d == DType::F32) {
    float f = (float)x;
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  return encode(x, formatOf(d));
}

double bitsToFloat(uint64_t bits, DType d) {
  if (d == DType::F64) {
    double x;
    std::memcpy(&x, &bits, 8);
    return x;
  }
  if (d == DType::F32) {
    uint32_t b = (uint32_t)bits;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  return decode(bits, formatOf(d));
}

double roundToTf32(double x) { return roundTo((double)(float)x, Format{8, 10, true}, false); }

} // namespace tilec::cpu
