"""``libdevice``: the functions of Triton's ``tl.extra.cuda.libdevice`` (CUDA's
libdevice), written in the kernel language.

Each function is a @jit helper built from tilec's own operations, so it runs on
every backend. It follows Triton's signatures: float32 and float64 arguments
(float16 and bfloat16 are computed in a wider type and rounded back), results
of the types Triton gives (``isnan`` is a bool, ``ilogb`` and ``signbit`` are
int32, ...), and libdevice's integer variants (``clz`` of int32 and int64,
``mulhi`` of int32, uint32, int64, uint64, ...).

The special functions are computed in float64 and rounded to the argument's
type, from their definitions: power series, continued fractions, asymptotic
expansions, recurrences and Newton steps. The constants they need are derived
below, when the module is imported. The directed roundings (``add_rz``,
``div_ru``, ``ll2float_rd``, ...) find the rounding error of the float64 operation
and move the result by one ulp where the mode asks.
"""

import decimal as _decimal
import math as _pymath
from fractions import Fraction as _Fraction

from .. import core as tl

from ...runtime.jit import jit

# --- constants, derived when the module is imported ---------------------------

_PI = _pymath.pi
_EULER_GAMMA = 0.57721566490153286061  # lim (1 + 1/2 + ... + 1/n - log n)
_TWO_OVER_PI = 2.0 / _pymath.pi
_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)
_SQRT_PI_OVER_2 = _pymath.sqrt(_pymath.pi) / 2.0
_HALF_LOG_2PI = 0.5 * _pymath.log(2.0 * _pymath.pi)
_LN2 = _pymath.log(2.0)
_SQRT2 = _pymath.sqrt(2.0)
_SQRT_PI = _pymath.sqrt(_pymath.pi)
_SQRT_2PI = _pymath.sqrt(2.0 * _pymath.pi)
_INF = float("inf")
_NAN = float("nan")
_INV_LN10 = 1.0 / _pymath.log(10.0)
_TWO_M969 = 2.0 ** -969  # 2^-1022 * 2^53: scales toward the subnormals without rounding twice
_TWO_1023 = 2.0 ** 1023
_MIN_SUBNORMAL = 2.0 ** -1074
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


def _hi_lo(value):
    """A Decimal as the sum of two floats, the second below the first's ulp."""
    hi = float(value)
    return hi, float(value - _decimal.Decimal(hi))


with _decimal.localcontext() as _ctx:
    _ctx.prec = 40
    _LOG2_10_HI, _LOG2_10_LO = _hi_lo(_decimal.Decimal(10).ln() / _decimal.Decimal(2).ln())
    _INV_SQRT2_HI, _INV_SQRT2_LO = _hi_lo(1 / _decimal.Decimal(2).sqrt())


def _bernoulli(n):
    """B_0 .. B_n, from sum_{k <= m} C(m + 1, k) B_k = 0."""
    b = [_Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(_pymath.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


# Stirling's series: log Gamma(z) = (z - 1/2) log z - z + log(2 pi) / 2
#   + sum_k B_2k / (2k (2k - 1) z^(2k - 1)).
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1)))
                  for k, b in enumerate(_bernoulli(16)[2::2], start=1))


def _zeta_minus_1(s, n=16):
    """zeta(s) - 1 for s >= 2: the terms below n, the rest by Euler-Maclaurin summation."""
    total = sum(k ** -s for k in range(2, n)) + n ** (1 - s) / (s - 1) + n ** -s / 2
    rising = s  # s (s + 1) ... (s + 2j - 2)
    for j, b in enumerate(_bernoulli(12)[2::2], start=1):
        total += float(b) / _pymath.factorial(2 * j) * rising * n ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total


# log Gamma(1 + z) = -gamma z + sum_(k >= 2) (-1)^k zeta(k) z^k / k, and
# log Gamma(2 + z) = (1 - gamma) z + sum_(k >= 2) (-1)^k (zeta(k) - 1) z^k / k (over z):
# relative accuracy at the zeros 1 and 2, for |z| <= 1/2.
_LGAMMA_AT_1 = (-_EULER_GAMMA,) + tuple((-1) ** k * (1 + _zeta_minus_1(k)) / k
                                         for k in range(2, 51))
_LGAMMA_AT_2 = (1 - _EULER_GAMMA,) + tuple((-1) ** k * _zeta_minus_1(k) / k for k in range(2, 31))


def _erfcx_taylor(center, terms):
    """Taylor coefficients of erfcx(x) = e^(x^2) erfc(x) about `center`: erfcx
    solves y' = 2 x y - 2 / sqrt(pi), so (k + 1) a_(k+1) = 2 c a_k + 2 a_(k-1)."""
    a = [_pymath.erfc(center) * _pymath.exp(center * center)]
    a.append(2 * center * a[0] - _TWO_OVER_SQRT_PI)
    for k in range(1, terms - 1):
        a.append((2 * center * a[k] + 2 * a[k - 1]) / (k + 1))
    return tuple(a)


_ERFCX_CENTER = 1.25
_ERFCX_TAYLOR = _erfcx_taylor(_ERFCX_CENTER, 32)  # erfcx on [0.5, 2] to 1e-15
_ERFCX_CF_TERMS = 60  # Laplace's continued fraction from x = 2 to 1e-16
_EXPM1_TAYLOR = tuple(1.0 / _pymath.factorial(k + 1) for k in range(17))  # |x| < 1/2
_ATANH_ODD = tuple(1.0 / (2 * k + 1) for k in range(13))  # atanh(s)/s in s^2, |s| < 0.2


def _harmonic(k):
    return sum(1.0 / i for i in range(1, k + 1))


def _fact(k):
    return float(_pymath.factorial(k))


# Power series in q = x^2 / 4 of J0, J1 (over x/2), and of the parts of Y0 and Y1
# that are not logarithms (Abramowitz and Stegun 9.1.10, 9.1.11), for x < 5.
_J0_SERIES = tuple((-1) ** k / _fact(k) ** 2 for k in range(20))
_J1_SERIES = tuple((-1) ** k / (_fact(k) * _fact(k + 1)) for k in range(20))
_Y0_SERIES = tuple((-1) ** (k + 1) * _harmonic(k) / _fact(k) ** 2 for k in range(1, 20))
_Y1_SERIES = tuple((-1) ** k * (_harmonic(k) + _harmonic(k + 1) - 2 * _EULER_GAMMA)
                   / (_fact(k) * _fact(k + 1)) for k in range(20))
_I0_SERIES = tuple(1.0 / _fact(k) ** 2 for k in range(40))  # x < 20
_I1_SERIES = tuple(1.0 / (_fact(k) * _fact(k + 1)) for k in range(40))


def _hankel_terms(nu, count):
    """a_k(nu) = prod_(j <= k) (4 nu^2 - (2j - 1)^2) / (k! 8^k), k < count: the
    coefficients of the asymptotic expansions of J, Y and I."""
    a = [1.0]
    for k in range(1, count):
        a.append(a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    return a


# J_nu(x), Y_nu(x) = sqrt(2 / (pi x)) (P cos w -+ Q sin w ...), P and Q in 1/x (x >= 20).
_HANKEL_P = tuple(tuple((-1) ** m * _hankel_terms(nu, 20)[2 * m] for m in range(10))
                  for nu in (0, 1))
_HANKEL_Q = tuple(tuple((-1) ** m * _hankel_terms(nu, 20)[2 * m + 1] for m in range(10))
                  for nu in (0, 1))
# I_nu(x) = e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k (x >= 20).
_I_ASYMPTOTIC = tuple(tuple((-1) ** k * a for k, a in enumerate(_hankel_terms(nu, 20)))
                      for nu in (0, 1))


def _miller_weights(n):
    """For Miller's recurrence from order n: the weights of J_k in the sum that
    normalises (J0 + 2 J2 + 2 J4 + ... = 1) and in Neumann's series of Y0 and Y1:
    Y0 = 2/pi ((log(x/2) + gamma) J0 - 2 sum_m (-1)^m J_2m / m),
    Y1 = -2/pi (J0 / x - (log(x/2) + gamma) J1 - sum_m (-1)^m (J_(2m-1) - J_(2m+1)) / m)."""
    norm, y0, y1 = [0.0] * (n + 1), [0.0] * (n + 1), [0.0] * (n + 1)
    for m in range(1, n // 2):
        norm[2 * m] = 2.0
        y0[2 * m] = -2.0 * (-1) ** m / m
        y1[2 * m - 1] += (-1) ** m / m
        y1[2 * m + 1] -= (-1) ** m / m
    norm[n - n % 2] = 2.0
    return tuple(norm), tuple(y0), tuple(y1)


_MILLER_N = 50  # J0, J1, Y0, Y1 on [5, 20] to 3e-16
_MILLER_NORM, _MILLER_Y0, _MILLER_Y1 = _miller_weights(_MILLER_N)

# --- arguments ------------------------------------------------------------------


@jit
def _float(x):
    """x as a tensor, which must be of a floating-point type."""
    x = tl.to_tensor(x)
    tl.static_assert(x.dtype.is_floating(), "libdevice: expected a floating-point argument")
    return x


@jit
def _float2(x, y):
    """Two floating-point arguments, and a value of their common type (the result's)."""
    x = tl.to_tensor(x)
    y = tl.to_tensor(y)
    like = x + y
    tl.static_assert(like.dtype.is_floating(), "libdevice: expected floating-point arguments")
    return x, y, like


@jit
def _integer(x):
    """x as a tensor, which must be a 32- or 64-bit integer."""
    x = tl.to_tensor(x)
    tl.static_assert(x.dtype.is_int() and x.dtype.primitive_bitwidth >= 32,
                     "libdevice: expected a 32- or 64-bit integer argument")
    return x


@jit
def _int32(x):
    """x as a tensor, which must be a 32-bit integer."""
    x = tl.to_tensor(x)
    tl.static_assert(x.dtype.is_int() and x.dtype.primitive_bitwidth == 32,
                     "libdevice: expected a 32-bit integer argument")
    return x


@jit
def _wide(x):
    return x.to(tl.float64)


@jit
def _native(x):
    """x in a type that rounding by comparisons handles: float16 and bfloat16 as float32."""
    if x.dtype.primitive_bitwidth < 32:
        return x.to(tl.float32)
    return x


# --- bits -------------------------------------------------------------------------


@jit
def _is_nan(x):
    """NaN is the one value unequal to itself."""
    return x != x  # noqa: PLR0124


@jit
def _bits(x):
    """The bits of a float as a signed integer of its width."""
    tl.static_assert(x.dtype.primitive_bitwidth >= 16, "libdevice: fp8 arguments are not supported")
    if x.dtype.primitive_bitwidth == 64:
        return x.to(tl.int64, bitcast=True)
    if x.dtype.primitive_bitwidth == 32:
        return x.to(tl.int32, bitcast=True)
    return x.to(tl.int16, bitcast=True)


@jit
def _from_bits(b, like):
    return b.to(like.dtype, bitcast=True)


@jit
def _unsigned(x):
    """The bits of a 32- or 64-bit integer as an unsigned integer."""
    if x.dtype.primitive_bitwidth == 64:
        return x.to(tl.uint64, bitcast=True)
    return x.to(tl.uint32, bitcast=True)


@jit
def _sign_set(x):
    """Whether x's sign bit is set (true for -0.0 and negative NaNs)."""
    return _bits(x) < 0


@jit
def _copysign(x, y):
    """|x| with the sign of y (same float types)."""
    return tl.where(_sign_set(x) != _sign_set(y), -x, x)


@jit
def _next_up(x):
    """The least float above x (x itself for +inf and NaN)."""
    b = _bits(x)
    step = _from_bits(tl.where(b >= 0, b + 1, b - 1), x)
    tiny = _from_bits(b * 0 + 1, x)
    return tl.where(_is_nan(x) | (x == _INF), x, tl.where(x == 0, tiny, step))


@jit
def _next_down(x):
    return -_next_up(-x)


@jit
def _pow2(n):
    """2^n as a float64, for an integer n in [-1022, 1023]."""
    return ((n.to(tl.int64) + 1023) << 52).to(tl.float64, bitcast=True)


@jit
def _ldexp64(x, n):
    """x * 2^n (float64, n an int32), rounded once: steps of 2^1023 up, or of
    2^-969 down (which keep the value normal until the last step)."""
    n = tl.minimum(tl.maximum(n, -2200), 2200)
    for _ in tl.static_range(2):
        up = n > 1023
        x = tl.where(up, x * _TWO_1023, x)
        n = tl.where(up, n - 1023, n)
        down = n < -1022
        x = tl.where(down, x * _TWO_M969, x)
        n = tl.where(down, n + 969, n)
    return x * _pow2(tl.minimum(tl.maximum(n, -1022), 1023))


@jit
def _scale2(x, n):
    """x * 2^n for |n| <= 2044 and x near 1, in two exact steps and one rounding."""
    half = n >> 1
    return x * _pow2(half) * _pow2(n - half)


@jit
def _ilogb64(x):
    """The exponent of a finite nonzero float64 (subnormals included), as an int32."""
    biased = ((x.to(tl.int64, bitcast=True) >> 52) & 0x7FF).to(tl.int32)
    scaled = x * 18446744073709551616.0  # 2^64 makes a subnormal normal
    scaled_biased = ((scaled.to(tl.int64, bitcast=True) >> 52) & 0x7FF).to(tl.int32)
    return tl.where(biased == 0, scaled_biased - 64, biased) - 1023


@jit
def _finite(x):
    return tl.abs(x) < _INF


@jit
def _product(a, b):
    """a b rounded on its own: with fp fusion on, the GPU may fuse a product into a
    later addition, which the error-free sums below must not see."""
    return tl.fma(a, b, 0.0)


# --- the functions tilec has built in -------------------------------------------


@jit
def abs(arg0):
    return tl.abs(arg0)


@jit
def exp(arg0):
    return tl.exp(arg0)


@jit
def exp2(arg0):
    return tl.exp2(arg0)


@jit
def log(arg0):
    return tl.log(arg0)


@jit
def log2(arg0):
    return tl.log2(arg0)


@jit
def sqrt(arg0):
    return tl.sqrt(arg0)


@jit
def sqrt_rn(arg0):
    return tl.sqrt_rn(arg0)


@jit
def rsqrt(arg0):
    return tl.rsqrt(arg0)


@jit
def sin(arg0):
    return tl.sin(arg0)


@jit
def cos(arg0):
    return tl.cos(arg0)


@jit
def tanh(arg0):
    return tl.math.tanh(arg0)


@jit
def floor(arg0):
    return tl.floor(arg0)


@jit
def ceil(arg0):
    return tl.ceil(arg0)


@jit
def erf(arg0):
    return tl.erf(arg0)


@jit
def fma(arg0, arg1, arg2):
    return tl.fma(arg0, arg1, arg2)


@jit
def div_rn(arg0, arg1):
    return tl.div_rn(arg0, arg1)


@jit
def atan2(arg0, arg1):
    return tl.math.atan2(arg0, arg1)


@jit
def pow(arg0, arg1):
    """x^y; y may be an int32 (libdevice's powi)."""
    x = _float(arg0)
    y = tl.to_tensor(arg1)
    if y.dtype.is_int():
        return tl.math.pow(x, y.to(x.dtype))
    return tl.math.pow(x, y)


# --- classification and sign ------------------------------------------------------


@jit
def isnan(arg0):
    x = _float(arg0)
    return _is_nan(x)


@jit
def isinf(arg0):
    x = _float(arg0)
    return tl.abs(x) == _INF


@jit
def finitef(arg0):
    return _finite(_float(arg0))


@jit
def isfinited(arg0):
    return _finite(_float(arg0))


@jit
def signbit(arg0):
    return _sign_set(_float(arg0)).to(tl.int32)


@jit
def copysign(arg0, arg1):
    x, y, like = _float2(arg0, arg1)
    return _copysign(x.to(like.dtype), y.to(like.dtype))


@jit
def nextafter(arg0, arg1):
    """The float next to x in the direction of y."""
    x, y, like = _float2(arg0, arg1)
    x = x.to(like.dtype)
    y = y.to(like.dtype)
    toward = tl.where(y > x, _next_up(x), _next_down(x))
    return tl.where(_is_nan(x) | _is_nan(y), x + y, tl.where(x == y, y, toward))


@jit
def fdim(arg0, arg1):
    """x - y where x > y, else +0."""
    x, y, like = _float2(arg0, arg1)
    x = x.to(like.dtype)
    y = y.to(like.dtype)
    return tl.where(_is_nan(x) | _is_nan(y), x + y, tl.where(x > y, x - y, 0.0))


@jit
def saturatef(arg0):
    """x clamped to [0, 1]; NaN gives 0."""
    x = _float(arg0)
    return tl.where(x > 0.0, tl.where(x < 1.0, x, 1.0), 0.0).to(x.dtype)


# --- rounding to integers ---------------------------------------------------------


@jit
def _trunc(x):
    return _copysign(tl.floor(tl.abs(x)), x)


@jit
def _rint(x):
    """x rounded to the nearest integer, ties to even. |x| - floor(|x|) is exact."""
    a = tl.abs(x)
    r = tl.floor(a)
    frac = a - r
    odd = (r - 2.0 * tl.floor(r * 0.5)) == 1.0
    up = (frac > 0.5) | ((frac == 0.5) & odd)
    return _copysign(tl.where(up, r + 1.0, r), x)


@jit
def _round(x):
    """x rounded to the nearest integer, ties away from zero."""
    a = tl.abs(x)
    r = tl.floor(a)
    return _copysign(tl.where(a - r >= 0.5, r + 1.0, r), x)


@jit
def _round_mode(x, MODE: tl.constexpr):
    """x rounded to an integer: to nearest even, toward zero, down or up."""
    if MODE == "rn":
        return _rint(x)
    if MODE == "rz":
        return _trunc(x)
    if MODE == "rd":
        return tl.floor(x)
    return tl.ceil(x)


@jit
def rint(arg0):
    x = _float(arg0)
    return _rint(_native(x)).to(x.dtype)


@jit
def nearbyint(arg0):
    x = _float(arg0)
    return _rint(_native(x)).to(x.dtype)


@jit
def round(arg0):
    x = _float(arg0)
    return _round(_native(x)).to(x.dtype)


@jit
def trunc(arg0):
    x = _float(arg0)
    return _trunc(_native(x)).to(x.dtype)


@jit
def _to_int(r, DST: tl.constexpr):
    """An integer-valued float as DST (int32, uint32, int64 or uint64), saturating
    as the GPU's conversions do; NaN gives 0. Unsigned values come back as the
    bits of a signed integer of their width, as Triton's libdevice declares them."""
    r = r.to(tl.float64)
    r = tl.where(_is_nan(r), 0.0, r)
    if DST == "int32":
        return tl.minimum(tl.maximum(r, -2147483648.0), 2147483647.0).to(tl.int32)
    if DST == "uint32":
        u = tl.minimum(tl.maximum(r, 0.0), 4294967295.0).to(tl.int64)
        return u.to(tl.int32)
    if DST == "int64":
        i = tl.maximum(r, -9223372036854775808.0).to(tl.int64)
        return tl.where(r >= 9223372036854775808.0, 9223372036854775807, i)
    # uint64: [2^63, 2^64) converts as its difference from 2^63, then wraps.
    high = (tl.minimum(r, 18446744073709549568.0) - 9223372036854775808.0).to(tl.int64)
    high = high + (-9223372036854775807 - 1)
    i = tl.where(r >= 9223372036854775808.0, high, tl.maximum(r, 0.0).to(tl.int64))
    return tl.where(r >= 18446744073709551616.0, -1, i)


@jit
def llrint(arg0):
    return _to_int(_rint(_native(_float(arg0))), "int64")


@jit
def llround(arg0):
    return _to_int(_round(_native(_float(arg0))), "int64")


# --- exponents --------------------------------------------------------------------


@jit
def _ldexp(arg0, arg1):
    x = _float(arg0)
    n = tl.to_tensor(arg1)
    tl.static_assert(n.dtype.is_int(), "libdevice: the exponent must be an integer")
    n = tl.minimum(tl.maximum(n, -2200), 2200).to(tl.int32)
    if x.dtype != tl.float64:
        n = tl.minimum(tl.maximum(n, -400), 400)  # the float64 product is then exact
    return _ldexp64(_wide(x), n).to(x.dtype)


@jit
def ldexp(arg0, arg1):
    return _ldexp(arg0, arg1)


@jit
def scalbn(arg0, arg1):
    return _ldexp(arg0, arg1)


@jit
def ilogb(arg0):
    """The exponent of x: INT_MIN for 0 and NaN, INT_MAX for infinities."""
    w = _wide(_float(arg0))
    ordinary = (w != 0) & _finite(w)
    e = _ilogb64(tl.where(ordinary, w, 1.0))
    return tl.where(ordinary, e, tl.where(tl.abs(w) == _INF, _INT32_MAX, _INT32_MIN))


@jit
def logb(arg0):
    """The exponent of x as a float: -inf for 0, inf for infinities."""
    x = _float(arg0)
    w = _wide(x)
    ordinary = (w != 0) & _finite(w)
    e = _ilogb64(tl.where(ordinary, w, 1.0)).to(tl.float64)
    r = tl.where(ordinary, e, tl.where(w == 0, -_INF, w * w))
    return r.to(x.dtype)


# --- exponentials and logarithms ----------------------------------------------------


@jit
def _poly(t, C: tl.constexpr):
    """C[0] + C[1] t + C[2] t^2 + ..., by Horner's rule."""
    p = t * 0.0 + C[len(C) - 1]
    for i in tl.static_range(len(C) - 2, -1, -1):
        p = p * t + C[i]
    return p


@jit
def _expm1(x):
    """e^x - 1 (float64): its Taylor series where the subtraction would cancel."""
    series = x * _poly(x, _EXPM1_TAYLOR)
    return tl.where(tl.abs(x) < 0.5, series, tl.exp(x) - 1.0)


@jit
def _log1p(x):
    """log(1 + x) (float64): 2 atanh(x / (2 + x)) by its series near 0."""
    s = x / (2.0 + x)
    series = 2.0 * s * _poly(s * s, _ATANH_ODD)
    return tl.where((x > -0.3) & (x < 0.5), series, tl.log(1.0 + x))


@jit
def _exp10(x):
    """10^x (float64): 2^t for t = x log2(10) carried in two parts, its integer
    part applied as a power of two."""
    xc = tl.minimum(tl.maximum(x, -400.0), 400.0)
    t = _product(xc, _LOG2_10_HI)
    t_err = tl.fma(xc, _LOG2_10_HI, -t) + xc * _LOG2_10_LO
    n = tl.floor(t + 0.5)
    r = tl.exp2(t - n) * (1.0 + t_err * _LN2)
    return tl.where(_is_nan(x), x, _scale2(r, n.to(tl.int32)))


@jit
def exp10(arg0):
    x = _float(arg0)
    return _exp10(_wide(x)).to(x.dtype)


@jit
def expm1(arg0):
    x = _float(arg0)
    return _expm1(_wide(x)).to(x.dtype)


@jit
def log10(arg0):
    x = _float(arg0)
    return (tl.log(_wide(x)) * _INV_LN10).to(x.dtype)


@jit
def log1p(arg0):
    x = _float(arg0)
    return _log1p(_wide(x)).to(x.dtype)


# The fast_* functions: single-precision approximations, as the GPU's special function unit gives.


@jit
def fast_expf(arg0):
    return tl.exp(_float(arg0))


@jit
def fast_exp10f(arg0):
    x = _float(arg0)
    return tl.exp2(x * 3.3219280948873622)


@jit
def fast_logf(arg0):
    return tl.log(_float(arg0))


@jit
def fast_log2f(arg0):
    return tl.log2(_float(arg0))


@jit
def fast_log10f(arg0):
    x = _float(arg0)
    return tl.log2(x) * 0.30102999566398120


@jit
def fast_powf(arg0, arg1):
    x, y, like = _float2(arg0, arg1)
    return tl.exp2(y * tl.log2(x)).to(like.dtype)


@jit
def fast_sinf(arg0):
    return tl.sin(_float(arg0))


@jit
def fast_cosf(arg0):
    return tl.cos(_float(arg0))


@jit
def fast_tanf(arg0):
    x = _float(arg0)
    return tl.sin(x) / tl.cos(x)


@jit
def fast_dividef(arg0, arg1):
    return arg0 / arg1


# --- roots and norms ----------------------------------------------------------------


@jit
def _cbrt(x):
    """The real cube root (float64): pow, then a Newton step."""
    a = tl.abs(x)
    y = tl.math.pow(a, 1.0 / 3.0)
    y = y + (a / (y * y) - y) * (1.0 / 3.0)
    return _copysign(tl.where((a > 0) & (a < _INF), y, a), x)


@jit
def cbrt(arg0):
    x = _float(arg0)
    return _cbrt(_wide(x)).to(x.dtype)


@jit
def rcbrt(arg0):
    x = _float(arg0)
    return (1.0 / _cbrt(_wide(x))).to(x.dtype)


@jit
def _norm4(a, b, c, d):
    """sqrt(a^2 + b^2 + c^2 + d^2) (float64), each scaled by the largest magnitude
    so that nothing overflows or underflows; an infinite argument gives inf, even
    beside a NaN (tl.maximum passes over NaNs)."""
    a = tl.abs(a)
    b = tl.abs(b)
    c = tl.abs(c)
    d = tl.abs(d)
    m = tl.maximum(tl.maximum(a, b), tl.maximum(c, d))
    infinite = m == _INF
    s = tl.where((m > 0) & ~infinite, m, 1.0)
    a = a / s
    b = b / s
    c = c / s
    d = d / s
    return tl.where(infinite, _INF, s * tl.sqrt(a * a + b * b + c * c + d * d))


@jit
def hypot(arg0, arg1):
    x, y, like = _float2(arg0, arg1)
    return _norm4(_wide(x), _wide(y), 0.0, 0.0).to(like.dtype)


@jit
def rhypot(arg0, arg1):
    x, y, like = _float2(arg0, arg1)
    return (1.0 / _norm4(_wide(x), _wide(y), 0.0, 0.0)).to(like.dtype)


@jit
def norm3d(arg0, arg1, arg2):
    x, y, like = _float2(arg0, arg1)
    z = _float(arg2)
    return _norm4(_wide(x), _wide(y), _wide(z), 0.0).to((like + z).dtype)


@jit
def rnorm3d(arg0, arg1, arg2):
    x, y, like = _float2(arg0, arg1)
    z = _float(arg2)
    return (1.0 / _norm4(_wide(x), _wide(y), _wide(z), 0.0)).to((like + z).dtype)


@jit
def norm4d(arg0, arg1, arg2, arg3):
    x, y, like = _float2(arg0, arg1)
    z, t, like2 = _float2(arg2, arg3)
    return _norm4(_wide(x), _wide(y), _wide(z), _wide(t)).to((like + like2).dtype)


@jit
def rnorm4d(arg0, arg1, arg2, arg3):
    x, y, like = _float2(arg0, arg1)
    z, t, like2 = _float2(arg2, arg3)
    return (1.0 / _norm4(_wide(x), _wide(y), _wide(z), _wide(t))).to((like + like2).dtype)


@jit
def rsqrt_rn(arg0):
    """1 / sqrt(x), from float64."""
    x = _float(arg0)
    return (1.0 / tl.sqrt(_wide(x))).to(x.dtype)


@jit
def rcp64h(arg0):
    """An approximate reciprocal, as the GPU's rcp64h instruction gives: 1 / x from
    the high word of x, with the low word of the result zero."""
    x = _wide(_float(arg0))
    high = (x.to(tl.int64, bitcast=True) >> 32) << 32
    r = 1.0 / high.to(tl.float64, bitcast=True)
    return ((r.to(tl.int64, bitcast=True) >> 32) << 32).to(tl.float64, bitcast=True)


# --- trigonometric and hyperbolic functions ------------------------------------------


@jit
def _half_turns(x):
    """x - 2 rint(x / 2), exactly: x modulo 2 into [-1, 1]."""
    return x - 2.0 * _rint(x * 0.5)


@jit
def _sin_half_turns(u):
    """sin(pi u) for u in [-1, 1]: sin(pi u) = sin(pi (+-1 - u)) folds u into [-1/2, 1/2]."""
    u = tl.where(tl.abs(u) > 0.5, _copysign(u * 0.0 + 1.0, u) - u, u)
    return tl.sin(_PI * u)


@jit
def _sinpi(x):
    """sin(pi x); its zeros have x's sign."""
    s = _sin_half_turns(_half_turns(x))
    return tl.where(s == 0, x * 0.0, s)


@jit
def _cospi(x):
    return _sin_half_turns(0.5 - tl.abs(_half_turns(x)))


@jit
def sinpi(arg0):
    x = _float(arg0)
    return _sinpi(_wide(x)).to(x.dtype)


@jit
def cospi(arg0):
    x = _float(arg0)
    return _cospi(_wide(x)).to(x.dtype)


@jit
def tan(arg0):
    x = _float(arg0)
    w = _wide(x)
    return (tl.sin(w) / tl.cos(w)).to(x.dtype)


@jit
def asin(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.math.atan2(w, tl.sqrt((1.0 - w) * (1.0 + w))).to(x.dtype)


@jit
def acos(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.math.atan2(tl.sqrt((1.0 - w) * (1.0 + w)), w).to(x.dtype)


@jit
def atan(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.math.atan2(w, 1.0).to(x.dtype)


@jit
def _half_exp_squared(a):
    """e^a / 2 for a >= 20 (float64), as (e^(a/2) / 2) e^(a/2): no early overflow."""
    h = tl.exp(0.5 * a)
    return (0.5 * h) * h


@jit
def sinh(arg0):
    x = _float(arg0)
    w = _wide(x)
    a = tl.abs(w)
    em = _expm1(tl.minimum(a, 20.0))
    small = 0.5 * (em + em / (em + 1.0))
    return _copysign(tl.where(a < 20.0, small, _half_exp_squared(a)), w).to(x.dtype)


@jit
def cosh(arg0):
    x = _float(arg0)
    a = tl.abs(_wide(x))
    e = tl.exp(tl.minimum(a, 20.0))
    small = 0.5 * (e + 1.0 / e)
    return tl.where(a < 20.0, small, _half_exp_squared(a)).to(x.dtype)


@jit
def asinh(arg0):
    """log(a + sqrt(a^2 + 1)) as log1p(a + a^2 / (1 + sqrt(1 + a^2)))."""
    x = _float(arg0)
    w = _wide(x)
    a = tl.abs(w)
    am = tl.minimum(a, 268435456.0)  # 2^28: above it, log(2a)
    small = _log1p(am + am * am / (1.0 + tl.sqrt(1.0 + am * am)))
    r = tl.where(a < 268435456.0, small, tl.log(a) + _LN2)
    return _copysign(r, w).to(x.dtype)


@jit
def acosh(arg0):
    """log(x + sqrt(x^2 - 1)), as log1p near 1."""
    x = _float(arg0)
    w = _wide(x)
    t = w - 1.0
    near = _log1p(t + tl.sqrt(2.0 * t + t * t))
    wm = tl.minimum(w, 268435456.0)
    mid = tl.log(wm + tl.sqrt(wm * wm - 1.0))
    r = tl.where(w < 2.0, near, tl.where(w < 268435456.0, mid, tl.log(w) + _LN2))
    return tl.where(w < 1.0, _NAN, r).to(x.dtype)


@jit
def atanh(arg0):
    x = _float(arg0)
    w = _wide(x)
    a = tl.abs(w)
    return _copysign(0.5 * _log1p(2.0 * a / (1.0 - a)), w).to(x.dtype)


# --- remainders -------------------------------------------------------------------------


@jit
def _fmod(a, b):
    """a mod b for a >= 0 and finite b > 0 (float64), exactly: each step takes off
    q b 2^j with q < 2^51 (fma makes r - q b 2^j exact), shortening the exponent
    gap by 50 bits."""
    eb = _ilogb64(b)
    gap = _ilogb64(tl.where(a > 0, a, b)) - eb
    steps = tl.max(tl.maximum(gap, 0) // 50 + 1, axis=None)
    r = a
    for _ in range(steps):
        live = r > 0
        j = tl.maximum(_ilogb64(tl.where(live, r, b)) - eb - 50, 0)
        m = _ldexp64(b, j)
        q = tl.floor(r / m)
        r = tl.fma(-q, m, r)
        r = tl.where(r < 0, r + m, r)
    return r


@jit
def _fmod_signed(x, y):
    """C's fmod (float64): the remainder of x / y truncated, with the sign of x."""
    a = tl.abs(x)
    b = tl.abs(y)
    ordinary = (b > 0) & _finite(b) & _finite(a)
    r = _fmod(tl.where(ordinary, a, 0.0), tl.where(ordinary, b, 1.0))
    special = tl.where((b == _INF) & _finite(a), x, _NAN)
    return tl.where(ordinary, _copysign(r, x), special)


@jit
def fmod(arg0, arg1):
    x, y, like = _float2(arg0, arg1)
    return _fmod_signed(_wide(x), _wide(y)).to(like.dtype)


@jit
def remainder(arg0, arg1):
    """x - n y for n the integer nearest x / y (ties to even), from fmod(|x|, 2|y|)."""
    x, y, like = _float2(arg0, arg1)
    w = _wide(x)
    b = tl.abs(_wide(y))
    r = tl.abs(_fmod_signed(tl.abs(w), 2.0 * b))
    once = r + r > b
    r = tl.where(once, r - b, r)
    r = tl.where(once & (r + r >= b), r - b, r)
    r = tl.where(_sign_set(w), -r, r)
    return tl.where(b == _INF, tl.where(_finite(w), w, _NAN), r).to(like.dtype)


# --- the error function and the normal distribution ----------------------------------------


@jit
def _exp_minus_square(x):
    """e^(-x^2) for 0 <= x (float64), x^2 split into an exact square and a small rest."""
    x = tl.minimum(x, 40.0)
    high = tl.floor(x * 1048576.0) * (1.0 / 1048576.0)  # 20 fraction bits: high^2 is exact
    return tl.exp(-(high * high)) * tl.exp(-((x - high) * (x + high)))


@jit
def _erfcx_large(x):
    """erfcx(x) = e^(x^2) erfc(x) for x >= 0.5 (float64): its Taylor series about
    1.25 below 2; above, Laplace's continued fraction
    1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))))."""
    taylor = _poly(x - _ERFCX_CENTER, _ERFCX_TAYLOR)
    xc = tl.maximum(x, 2.0)
    d = xc
    for k in tl.static_range(_ERFCX_CF_TERMS, 0, -1):
        d = xc + (k * 0.5) / d
    return tl.where(x < 2.0, taylor, 1.0 / (_SQRT_PI * d))


@jit
def _erfcx(x):
    small = (1.0 - tl.erf(x)) / _exp_minus_square(tl.abs(x))  # inf below -26.6, as it should
    return tl.where(x < 0.5, small, _erfcx_large(x))


@jit
def _erfc(x, lo):
    """erfc(x + lo) for |lo| below x's ulp (float64)."""
    large = _exp_minus_square(tl.maximum(x, 0.0)) * (_erfcx_large(x) - _TWO_OVER_SQRT_PI * lo)
    return tl.where(x < 0.5, 1.0 - tl.erf(x), large)


@jit
def erfc(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.where(_is_nan(w), w, _erfc(w, 0.0)).to(x.dtype)


@jit
def erfcx(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.where(_is_nan(w), w, _erfcx(w)).to(x.dtype)


@jit
def normcdf(arg0):
    """(1 + erf(x / sqrt 2)) / 2 = erfc(-x / sqrt 2) / 2, -x / sqrt 2 carried in two parts."""
    x = _float(arg0)
    w = -_wide(x)
    high = w * _INV_SQRT2_HI
    low = tl.fma(w, _INV_SQRT2_HI, -high) + w * _INV_SQRT2_LO
    low = tl.where(_finite(high), low, 0.0)
    return tl.where(_is_nan(w), w, 0.5 * _erfc(high, low)).to(x.dtype)


@jit
def _erfinv_guess(log_rest):
    """A first guess at y with 1 - erf(y)^2 = e^log_rest (Winitzki's approximation,
    a few parts in 1000)."""
    t = 2.0 / (_PI * 0.147) + 0.5 * log_rest
    return tl.sqrt(tl.sqrt(t * t - log_rest * (1.0 / 0.147)) - t)


@jit
def _erfinv_small(a):
    """erfinv(a) for a in [0, 1/2] (float64): Halley's method on erf(y) - a."""
    y = _erfinv_guess(tl.log((1.0 - a) * (1.0 + a)))
    for _ in tl.static_range(3):
        d = (tl.erf(y) - a) / (_TWO_OVER_SQRT_PI * tl.exp(-y * y))
        y = y - d / (1.0 + y * d)
    return y


@jit
def _erfcinv_small(q):
    """erfcinv(q) for q in (0, 1/2] (float64): Newton's method on
    log erfc(y) - log q = log erfcx(y) - y^2 - log q, concave, so it converges from above."""
    y = _erfinv_guess(tl.log(q * (2.0 - q)))
    log_q = tl.log(q)
    for _ in tl.static_range(4):
        e = _erfcx(y)
        y = y + (tl.log(e) - y * y - log_q) * (_SQRT_PI_OVER_2 * e)
    return y


@jit
def _erfcinv(q):
    """erfcinv (float64): the tails from erfcx, the middle from erf (1 - q is exact there)."""
    tail = tl.where(q >= 1.5, 2.0 - q, q)
    r_tail = _erfcinv_small(tl.minimum(tl.maximum(tail, _MIN_SUBNORMAL), 0.5))
    r_tail = tl.where(q >= 1.5, -r_tail, r_tail)
    mid = 1.0 - q
    r_mid = _copysign(_erfinv_small(tl.minimum(tl.abs(mid), 0.5)), mid)
    r = tl.where((q > 0.5) & (q < 1.5), r_mid, r_tail)
    inside = (q > 0) & (q < 2.0)
    return tl.where(inside, r, tl.where(q == 0, _INF,
                                        tl.where(q == 2.0, -_INF, _NAN)))


@jit
def erfinv(arg0):
    x = _float(arg0)
    w = _wide(x)
    a = tl.abs(w)
    r = tl.where(a <= 0.5, _erfinv_small(tl.minimum(a, 0.5)),
                 _erfcinv_small(tl.minimum(tl.maximum(1.0 - a, _MIN_SUBNORMAL), 0.5)))
    r = tl.where(a < 1.0, r, tl.where(a == 1.0, _INF, _NAN))
    return _copysign(r, w).to(x.dtype)


@jit
def erfcinv(arg0):
    x = _float(arg0)
    return _erfcinv(_wide(x)).to(x.dtype)


@jit
def normcdfinv(arg0):
    x = _float(arg0)
    return (-_SQRT2 * _erfcinv(2.0 * _wide(x))).to(x.dtype)


# --- the gamma function ------------------------------------------------------------------


@jit
def _shift_to_10(x):
    """z = x + n >= 10 for x > 0 (n <= 10) and p = x (x + 1) ... (x + n - 1):
    Gamma(x) = Gamma(z) / p."""
    z = x
    p = x * 0.0 + 1.0
    for _ in tl.static_range(10):
        small = z < 10.0
        p = tl.where(small, p * z, p)
        z = tl.where(small, z + 1.0, z)
    return z, p


@jit
def _stirling_series(z):
    inv = 1.0 / z
    return inv * _poly(inv * inv, _STIRLING)


@jit
def _lgamma_positive(x):
    """log Gamma(x) for finite x > 0 (float64): Taylor series about 1 and 2 (its
    zeros) on [1/2, 5/2), else Stirling's series at z = x + n >= 10 less log p."""
    z, p = _shift_to_10(x)
    stirling = (z - 0.5) * tl.log(z) - z + _HALF_LOG_2PI + _stirling_series(z) - tl.log(p)
    z1 = x - 1.0
    z2 = x - 2.0
    near1 = z1 * _poly(z1, _LGAMMA_AT_1)
    near2 = z2 * _poly(z2, _LGAMMA_AT_2)
    return tl.where((x < 0.5) | (x >= 2.5), stirling, tl.where(x < 1.5, near1, near2))


@jit
def _gamma_positive(x):
    """Gamma(x) for finite x > 0 (float64): Stirling's formula at z = x + n >= 10,
    sqrt(2 pi) z^(z - 1/2) e^-z e^series = sqrt(2 pi) h^2 e^series with
    h = z^((z - 1/2) / 2) e^(-z/2) (which does not overflow early), over p."""
    z, p = _shift_to_10(x)
    z = tl.minimum(z, 200.0)  # Gamma overflows from 171.7
    h = tl.math.pow(z, 0.5 * (z - 0.5)) * tl.exp(-0.5 * z)
    return (_SQRT_2PI * h) * (h * tl.exp(_stirling_series(z))) / p


@jit
def _negated(x):
    """-x for finite x < 0 (exact, unlike 1 - x), 1 elsewhere."""
    return tl.where(_finite(x) & (x < 0), -x, 1.0)


@jit
def lgamma(arg0):
    """log |Gamma(x)|. Below 0 by Euler's reflection Gamma(x) Gamma(1 - x) = pi / sin(pi x),
    with Gamma(1 - x) = -x Gamma(-x) below -1 (-x is exact, 1 - x is not)."""
    x = _float(arg0)
    w = _wide(x)
    ordinary = _finite(w) & (w > 0)
    lg = _lgamma_positive(tl.where(ordinary, w, tl.where(w > -1.0, 1.0 - w, _negated(w))))
    lg = tl.where(w > -1.0, lg, lg + tl.log(_negated(w)))  # log |Gamma(1 - x)|
    lg = tl.where(ordinary, lg, tl.log(_PI / tl.abs(_sinpi(w))) - lg)
    return tl.where(tl.abs(w) == _INF, tl.abs(w), lg).to(x.dtype)


@jit
def tgamma(arg0):
    """Gamma(x). Below 0 by Euler's reflection, as -pi / (x sin(pi x) Gamma(-x)).
    NaN at the poles below 0 and at -inf."""
    x = _float(arg0)
    w = _wide(x)
    ordinary = _finite(w) & (w > 0)
    g = _gamma_positive(tl.where(ordinary, w, _negated(w)))
    r = tl.where(ordinary, g, -_PI / (_sinpi(w) * (w * g)))
    r = tl.where(tl.abs(w) < 1e-300, 1.0 / w, tl.where(w == _INF, w, r))  # 1/x - gamma + ...
    pole = (w < 0) & (tl.floor(w) == w)
    return tl.where(pole, _NAN, r).to(x.dtype)


# --- Bessel functions ----------------------------------------------------------------------


@jit
def _bessel_series(x):
    """J0, J1, Y0, Y1 for 0 < x < 5 (float64), by their power series."""
    q = 0.25 * x * x
    j0 = _poly(q, _J0_SERIES)
    j1 = 0.5 * x * _poly(q, _J1_SERIES)
    log_half = tl.log(x) - _LN2  # x / 2 would underflow for the least subnormal
    y0 = _TWO_OVER_PI * ((log_half + _EULER_GAMMA) * j0 + q * _poly(q, _Y0_SERIES))
    y1 = (-_TWO_OVER_PI / x + _TWO_OVER_PI * log_half * j1
          - (0.5 / _PI) * x * _poly(q, _Y1_SERIES))
    return j0, j1, y0, y1


@jit
def _bessel_miller(x):
    """J0, J1, Y0, Y1 for 5 <= x <= 20 (float64): Miller's backward recurrence
    J_(k-1) = (2k / x) J_k - J_(k+1) from a small J_N, normalised by
    J0 + 2 J2 + 2 J4 + ... = 1, and Neumann's series of Y0 and Y1 in the J_k."""
    f_next = x * 0.0
    f = f_next + 1e-30
    norm = f_next
    y0_sum = f_next
    y1_sum = f_next
    two_over_x = 2.0 / x
    for k in tl.static_range(_MILLER_N, 0, -1):
        if _MILLER_NORM[k] != 0.0:
            norm = norm + _MILLER_NORM[k] * f
        if _MILLER_Y0[k] != 0.0:
            y0_sum = y0_sum + _MILLER_Y0[k] * f
        if _MILLER_Y1[k] != 0.0:
            y1_sum = y1_sum + _MILLER_Y1[k] * f
        f, f_next = (two_over_x * k) * f - f_next, f
    norm = norm + f
    j0 = f / norm
    j1 = f_next / norm
    log_term = tl.log(0.5 * x) + _EULER_GAMMA
    y0 = _TWO_OVER_PI * (log_term * j0 + y0_sum / norm)
    y1 = -_TWO_OVER_PI * (j0 / x - log_term * j1 - y1_sum / norm)
    return j0, j1, y0, y1


@jit
def _bessel_hankel(x):
    """J0, J1, Y0, Y1 for x >= 20 (float64), by Hankel's asymptotic expansions:
    J_n = sqrt(2 / (pi x)) (P cos w - Q sin w), Y_n = sqrt(2 / (pi x)) (P sin w + Q cos w),
    w = x - (2n + 1) pi / 4, with cos w and sin w from cos x and sin x."""
    z = 1.0 / x
    z2 = z * z
    p0 = _poly(z2, _HANKEL_P[0])
    q0 = z * _poly(z2, _HANKEL_Q[0])
    p1 = _poly(z2, _HANKEL_P[1])
    q1 = z * _poly(z2, _HANKEL_Q[1])
    c = tl.cos(x)
    s = tl.sin(x)
    amp = tl.sqrt(z * (1.0 / _PI))  # sqrt(2 / (pi x)) / sqrt(2)
    j0 = amp * (p0 * (c + s) - q0 * (s - c))
    y0 = amp * (p0 * (s - c) + q0 * (c + s))
    j1 = amp * (p1 * (s - c) + q1 * (s + c))
    y1 = amp * (-p1 * (s + c) + q1 * (s - c))
    return j0, j1, y0, y1


@jit
def _bessel01(x):
    """J0(x), J1(x), Y0(x), Y1(x) for x >= 0 (float64); Y is -inf at 0, J and Y
    are 0 at +inf."""
    sj0, sj1, sy0, sy1 = _bessel_series(tl.minimum(tl.maximum(x, _MIN_SUBNORMAL), 5.0))
    mj0, mj1, my0, my1 = _bessel_miller(tl.minimum(tl.maximum(x, 5.0), 20.0))
    hj0, hj1, hy0, hy1 = _bessel_hankel(tl.where(x < _INF, tl.maximum(x, 20.0), 20.0))
    series = x < 5.0
    miller = x < 20.0
    j0 = tl.where(series, sj0, tl.where(miller, mj0, hj0))
    j1 = tl.where(series, sj1, tl.where(miller, mj1, hj1))
    y0 = tl.where(series, sy0, tl.where(miller, my0, hy0))
    y1 = tl.where(series, sy1, tl.where(miller, my1, hy1))
    inf = x == _INF
    zero = x == 0.0
    j0 = tl.where(inf, 0.0, tl.where(zero, 1.0, j0))
    j1 = tl.where(inf | zero, 0.0, j1)
    y0 = tl.where(inf, 0.0, tl.where(zero, -_INF, y0))
    y1 = tl.where(inf, 0.0, tl.where(zero, -_INF, y1))
    return j0, j1, y0, y1


@jit
def j0(arg0):
    x = _float(arg0)
    w = tl.abs(_wide(x))
    r, _, _, _ = _bessel01(w)
    return tl.where(_is_nan(w), w, r).to(x.dtype)


@jit
def j1(arg0):
    x = _float(arg0)
    w = _wide(x)
    _, r, _, _ = _bessel01(tl.abs(w))
    return tl.where(_is_nan(w), w, tl.where(_sign_set(w), -r, r)).to(x.dtype)  # odd


@jit
def y0(arg0):
    x = _float(arg0)
    w = _wide(x)
    _, _, r, _ = _bessel01(tl.abs(w))
    return tl.where(w >= 0, r, _NAN).to(x.dtype)


@jit
def y1(arg0):
    x = _float(arg0)
    w = _wide(x)
    _, _, _, r = _bessel01(tl.abs(w))
    return tl.where(w >= 0, r, _NAN).to(x.dtype)


@jit
def _jn(n, x):
    """J_n(x) for n >= 0, x >= 0 (float64): the forward recurrence from J0 and J1
    where n <= x (it is stable there), else Miller's backward recurrence from order
    max n + 24 + 8 cbrt(max n), rescaled against overflow and normalised by
    J0 + 2 J2 + 2 J4 + ... = 1; (x/2)^n / n! where x is below 1e-20."""
    j0, j1, _, _ = _bessel01(x)
    n_max = tl.max(n, axis=None)
    xs = tl.where(x > 0, x, 1.0)
    prev = j0
    cur = j1
    for k in range(1, n_max):
        live = k < n
        nxt = (2.0 * k / xs) * cur - prev
        prev = tl.where(live, cur, prev)
        cur = tl.where(live, nxt, cur)
    forward = tl.where(n == 0, j0, cur)
    xb = tl.maximum(x, 1e-20)
    start = n_max + 24 + (8.0 * tl.math.pow(n_max.to(tl.float64), 1.0 / 3.0)).to(tl.int32)
    f_next = x * 0.0
    f = f_next + 1e-300
    norm = f_next
    saved = f_next
    for k in range(start, 0, -1):
        saved = tl.where(k == n, f, saved)
        norm = tl.where(k % 2 == 0, norm + 2.0 * f, norm)
        f, f_next = (2.0 * k / xb) * f - f_next, f
        big = tl.abs(f) > 1e250
        f = tl.where(big, f * 1e-250, f)
        f_next = tl.where(big, f_next * 1e-250, f_next)
        norm = tl.where(big, norm * 1e-250, norm)
        saved = tl.where(big, saved * 1e-250, saved)
    saved = tl.where(n == 0, f, saved)
    backward = saved / (norm + f)
    nf = n.to(tl.float64)
    leading = tl.exp(nf * (tl.log(x) - _LN2) - _lgamma_positive(nf + 1.0))
    r = tl.where(nf <= x, forward, tl.where(x < 1e-20, leading, backward))
    r = tl.where(n == 0, j0, tl.where(n == 1, j1, r))
    return tl.where(x == 0, tl.where(n == 0, 1.0, 0.0), r)


@jit
def jn(arg0, arg1):
    """J_n(x) for an int32 order n."""
    n = _int32(arg0)
    x = _float(arg1)
    w = _wide(x)
    an = tl.abs(n)
    r = _jn(an, tl.abs(w))
    sign_flip = ((n < 0) != (w < 0))  # J_-n = (-1)^n J_n and J_n(-x) = (-1)^n J_n(x)
    r = tl.where(sign_flip & ((an & 1) != 0), -r, r)
    return tl.where(_is_nan(w), w, r).to(x.dtype)


@jit
def yn(arg0, arg1):
    """Y_n(x) for an int32 order n: the forward recurrence from Y0 and Y1."""
    n = _int32(arg0)
    x = _float(arg1)
    w = _wide(x)
    an = tl.abs(n)
    _, _, y0, y1 = _bessel01(tl.abs(w))
    xs = tl.where(w > 0, w, 1.0)
    prev = y0
    cur = y1
    for k in range(1, tl.max(an, axis=None)):
        live = k < an
        nxt = tl.where(tl.abs(cur) == _INF, cur, (2.0 * k / xs) * cur - prev)  # -inf stays
        prev = tl.where(live, cur, prev)
        cur = tl.where(live, nxt, cur)
    r = tl.where(an == 0, y0, cur)
    r = tl.where(w == 0, -_INF, r)
    r = tl.where((n < 0) & ((an & 1) != 0), -r, r)  # Y_-n = (-1)^n Y_n
    return tl.where(w >= 0, r, _NAN).to(x.dtype)


@jit
def _bessel_i(x, NU: tl.constexpr):
    """I0 or I1 of x >= 0 (float64): the power series below 20, the asymptotic
    expansion e^x / sqrt(2 pi x) (1 + ...) above (e^x applied in halves)."""
    xs = tl.minimum(x, 20.0)
    q = 0.25 * xs * xs
    if NU == 0:
        series = _poly(q, _I0_SERIES)
    else:
        series = 0.5 * xs * _poly(q, _I1_SERIES)
    xa = tl.maximum(x, 20.0)
    h = tl.exp(0.5 * xa)
    asymptotic = h * (h / tl.sqrt(2.0 * _PI * xa) * _poly(1.0 / xa, _I_ASYMPTOTIC[NU]))
    return tl.where(x < 20.0, series, asymptotic)


@jit
def cyl_bessel_i0(arg0):
    x = _float(arg0)
    w = tl.abs(_wide(x))
    return tl.where(_is_nan(w), w, _bessel_i(w, 0)).to(x.dtype)


@jit
def cyl_bessel_i1(arg0):
    x = _float(arg0)
    w = _wide(x)
    return tl.where(_is_nan(w), w, _copysign(_bessel_i(tl.abs(w), 1), w)).to(x.dtype)


# --- arithmetic in a chosen rounding mode ---------------------------------------------
#
# Each operation gives its float64 result s rounded to nearest, and whether the
# exact result lies below or above s (from the operation's exact error: TwoSum,
# or an fma residual); _rounded then moves s by one ulp where the mode asks, or
# _narrowed rounds s to float32 in the mode. Exact but for float64 results in the
# subnormal range (where a residual may round to 0) and float64 fma_r* (whose
# error's sign comes from a compensated sum).


@jit
def _rounded(s, below, above, MODE: tl.constexpr):
    """s, the exact result rounded to nearest, rounded instead toward zero ("rz"),
    down ("rd") or up ("ru") given where the exact result lies."""
    if MODE == "rn":
        return s
    if MODE == "rd":
        return tl.where(below, _next_down(s), s)
    if MODE == "ru":
        return tl.where(above, _next_up(s), s)
    return tl.where((s > 0) & below, _next_down(s), tl.where((s < 0) & above, _next_up(s), s))


@jit
def _narrowed(s, below, above, MODE: tl.constexpr):
    """A float32 rounding (in MODE) of the exact value that the float64 s rounds,
    given where that value lies relative to s. Where s is a float32 midpoint, the
    exact value decides the nearest."""
    f = s.to(tl.float32)
    g = f.to(tl.float64)
    f_below = (s < g) | ((s == g) & below)  # the exact value is below f
    f_above = (s > g) | ((s == g) & above)
    if MODE == "rn":
        lower = tl.where(s > g, f, _next_down(f))
        upper = tl.where(s > g, _next_up(f), f)
        mid = (lower.to(tl.float64) + upper.to(tl.float64)) * 0.5
        tie = (s == mid) & (s != g) & _finite(g)
        return tl.where(tie & above, upper, tl.where(tie & below, lower, f))
    return _rounded(f, f_below, f_above, MODE)


@jit
def _finish(s, err, like, MODE: tl.constexpr):
    """The result of an operation in `like`'s type: s is its float64 value rounded
    to nearest, err the sign of (exact - s)."""
    if like.dtype == tl.float64:
        return _rounded(s, err < 0, err > 0, MODE)
    return _narrowed(s, err < 0, err > 0, MODE).to(like.dtype)


@jit
def _two_sum_error(a, b, s):
    """The exact a + b - s for s = a + b rounded (Knuth's TwoSum)."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


@jit
def _add(arg0, arg1, MODE: tl.constexpr):
    x, y, like = _float2(arg0, arg1)
    a = _wide(x)
    b = _wide(y)
    s = a + b
    err = _two_sum_error(a, b, s)
    err = tl.where(~_finite(s) & _finite(a) & _finite(b), -s, err)
    return _finish(s, err, like, MODE)


@jit
def _mul(arg0, arg1, MODE: tl.constexpr):
    x, y, like = _float2(arg0, arg1)
    a = _wide(x)
    b = _wide(y)
    s = a * b
    err = tl.fma(a, b, -s)
    err = tl.where(~_finite(s) & _finite(a) & _finite(b), -s, err)
    return _finish(s, err, like, MODE)


@jit
def _div(arg0, arg1, MODE: tl.constexpr):
    x, y, like = _float2(arg0, arg1)
    a = _wide(x)
    b = _wide(y)
    s = a / b
    err = tl.fma(-s, b, a) * tl.where(b < 0, -1.0, 1.0)  # (a - s b) / b has the sign of the error
    err = tl.where(~_finite(s) & _finite(a) & _finite(b) & (b != 0), -s, err)
    return _finish(s, err, like, MODE)


@jit
def _sqrt(arg0, MODE: tl.constexpr):
    x = _float(arg0)
    a = _wide(x)
    s = tl.sqrt(a)
    return _finish(s, tl.fma(-s, s, a), x, MODE)


@jit
def _fma(arg0, arg1, arg2, MODE: tl.constexpr):
    """a b + c in MODE. The error's sign comes from a b = p + e (exact) and TwoSums;
    for float32 arguments the sum's error is exact, for float64 ones its sign is
    taken from a compensated sum of the three parts."""
    x, y, like = _float2(arg0, arg1)
    z = _float(arg2)
    a = _wide(x)
    b = _wide(y)
    c = _wide(z)
    s = tl.fma(a, b, c)
    p = _product(a, b)
    p_err = tl.fma(a, b, -p)
    t = p + c
    t_err = _two_sum_error(p, c, t)
    d = t - s
    err = d + (t_err + p_err)
    ok = _finite(a) & _finite(b) & _finite(c)
    err = tl.where(~_finite(s) & ok, -s, err)
    return _finish(s, err, like + z, MODE)


@jit
def add_rn(arg0, arg1):
    return _add(arg0, arg1, "rn")


@jit
def add_rz(arg0, arg1):
    return _add(arg0, arg1, "rz")


@jit
def add_rd(arg0, arg1):
    return _add(arg0, arg1, "rd")


@jit
def add_ru(arg0, arg1):
    return _add(arg0, arg1, "ru")


@jit
def sub_rn(arg0, arg1):
    return _add(arg0, -tl.to_tensor(arg1), "rn")


@jit
def sub_rz(arg0, arg1):
    return _add(arg0, -tl.to_tensor(arg1), "rz")


@jit
def sub_rd(arg0, arg1):
    return _add(arg0, -tl.to_tensor(arg1), "rd")


@jit
def sub_ru(arg0, arg1):
    return _add(arg0, -tl.to_tensor(arg1), "ru")


@jit
def mul_rn(arg0, arg1):
    return _mul(arg0, arg1, "rn")


@jit
def mul_rz(arg0, arg1):
    return _mul(arg0, arg1, "rz")


@jit
def mul_rd(arg0, arg1):
    return _mul(arg0, arg1, "rd")


@jit
def mul_ru(arg0, arg1):
    return _mul(arg0, arg1, "ru")


@jit
def div_rz(arg0, arg1):
    return _div(arg0, arg1, "rz")


@jit
def div_rd(arg0, arg1):
    return _div(arg0, arg1, "rd")


@jit
def div_ru(arg0, arg1):
    return _div(arg0, arg1, "ru")


@jit
def rcp_rn(arg0):
    return _div(1.0, _float(arg0), "rn")


@jit
def rcp_rz(arg0):
    return _div(1.0, _float(arg0), "rz")


@jit
def rcp_rd(arg0):
    return _div(1.0, _float(arg0), "rd")


@jit
def rcp_ru(arg0):
    return _div(1.0, _float(arg0), "ru")


@jit
def sqrt_rz(arg0):
    return _sqrt(arg0, "rz")


@jit
def sqrt_rd(arg0):
    return _sqrt(arg0, "rd")


@jit
def sqrt_ru(arg0):
    return _sqrt(arg0, "ru")


@jit
def fma_rn(arg0, arg1, arg2):
    return _fma(arg0, arg1, arg2, "rn")


@jit
def fma_rz(arg0, arg1, arg2):
    return _fma(arg0, arg1, arg2, "rz")


@jit
def fma_rd(arg0, arg1, arg2):
    return _fma(arg0, arg1, arg2, "rd")


@jit
def fma_ru(arg0, arg1, arg2):
    return _fma(arg0, arg1, arg2, "ru")


# --- conversions ----------------------------------------------------------------------


@jit
def _int64_parts(x):
    """A 64-bit integer as float64: the sum rounded to nearest of its exact high
    and low 32-bit parts, and that rounding's error."""
    high = (x >> 32).to(tl.float64) * 4294967296.0  # >> is arithmetic for int64, logical for uint64
    low = (x & 0xFFFFFFFF).to(tl.float64)
    s = high + low
    return s, _two_sum_error(high, low, s)


@jit
def _from_int64(arg0, DST: tl.constexpr, SIGNED: tl.constexpr, MODE: tl.constexpr):
    x = tl.to_tensor(arg0)
    if SIGNED:
        x = x.to(tl.int64)
    else:
        x = x.to(tl.uint64)
    s, err = _int64_parts(x)
    if DST == "fp64":
        return _rounded(s, err < 0, err > 0, MODE)
    return _narrowed(s, err < 0, err > 0, MODE)


@jit
def _from_int32(arg0, SIGNED: tl.constexpr, MODE: tl.constexpr):
    x = tl.to_tensor(arg0)
    if SIGNED:
        w = x.to(tl.int32).to(tl.float64)
    else:
        w = x.to(tl.uint32).to(tl.float64)
    return _narrowed(w, False, False, MODE)  # every 32-bit integer is a float64


@jit
def _double2float(arg0, MODE: tl.constexpr):
    w = _wide(_float(arg0))
    return _narrowed(w, False, False, MODE)  # w is the exact value


@jit
def _float_to_int(arg0, DST: tl.constexpr, MODE: tl.constexpr):
    return _to_int(_round_mode(_native(_float(arg0)), MODE), DST)


@jit
def double2float_rn(arg0):
    return _double2float(arg0, "rn")


@jit
def double2float_rz(arg0):
    return _double2float(arg0, "rz")


@jit
def double2float_rd(arg0):
    return _double2float(arg0, "rd")


@jit
def double2float_ru(arg0):
    return _double2float(arg0, "ru")


@jit
def double2int_rn(arg0):
    return _float_to_int(arg0, "int32", "rn")


@jit
def double2int_rz(arg0):
    return _float_to_int(arg0, "int32", "rz")


@jit
def double2int_rd(arg0):
    return _float_to_int(arg0, "int32", "rd")


@jit
def double2int_ru(arg0):
    return _float_to_int(arg0, "int32", "ru")


@jit
def double2uint_rn(arg0):
    return _float_to_int(arg0, "uint32", "rn")


@jit
def double2uint_rz(arg0):
    return _float_to_int(arg0, "uint32", "rz")


@jit
def double2uint_rd(arg0):
    return _float_to_int(arg0, "uint32", "rd")


@jit
def double2uint_ru(arg0):
    return _float_to_int(arg0, "uint32", "ru")


@jit
def float2int_rn(arg0):
    return _float_to_int(arg0, "int32", "rn")


@jit
def float2int_rz(arg0):
    return _float_to_int(arg0, "int32", "rz")


@jit
def float2int_rd(arg0):
    return _float_to_int(arg0, "int32", "rd")


@jit
def float2int_ru(arg0):
    return _float_to_int(arg0, "int32", "ru")


@jit
def float2uint_rn(arg0):
    return _float_to_int(arg0, "uint32", "rn")


@jit
def float2uint_rz(arg0):
    return _float_to_int(arg0, "uint32", "rz")


@jit
def float2uint_rd(arg0):
    return _float_to_int(arg0, "uint32", "rd")


@jit
def float2uint_ru(arg0):
    return _float_to_int(arg0, "uint32", "ru")


@jit
def float2ll_rn(arg0):
    return _float_to_int(arg0, "int64", "rn")


@jit
def float2ll_rz(arg0):
    return _float_to_int(arg0, "int64", "rz")


@jit
def float2ll_rd(arg0):
    return _float_to_int(arg0, "int64", "rd")


@jit
def float2ll_ru(arg0):
    return _float_to_int(arg0, "int64", "ru")


@jit
def float2ull_rn(arg0):
    return _float_to_int(arg0, "uint64", "rn")


@jit
def float2ull_rz(arg0):
    return _float_to_int(arg0, "uint64", "rz")


@jit
def float2ull_rd(arg0):
    return _float_to_int(arg0, "uint64", "rd")


@jit
def float2ull_ru(arg0):
    return _float_to_int(arg0, "uint64", "ru")


@jit
def double2ll_rn(arg0):
    return _float_to_int(arg0, "int64", "rn")


@jit
def double2ll_rz(arg0):
    return _float_to_int(arg0, "int64", "rz")


@jit
def double2ll_rd(arg0):
    return _float_to_int(arg0, "int64", "rd")


@jit
def double2ll_ru(arg0):
    return _float_to_int(arg0, "int64", "ru")


@jit
def double2ull_rn(arg0):
    return _float_to_int(arg0, "uint64", "rn")


@jit
def double2ull_rz(arg0):
    return _float_to_int(arg0, "uint64", "rz")


@jit
def double2ull_rd(arg0):
    return _float_to_int(arg0, "uint64", "rd")


@jit
def double2ull_ru(arg0):
    return _float_to_int(arg0, "uint64", "ru")


@jit
def int2double_rn(arg0):
    return tl.to_tensor(arg0).to(tl.int32).to(tl.float64)


@jit
def uint2double_rn(arg0):
    return tl.to_tensor(arg0).to(tl.uint32).to(tl.float64)


@jit
def int2float_rn(arg0):
    return _from_int32(arg0, True, "rn")


@jit
def int2float_rz(arg0):
    return _from_int32(arg0, True, "rz")


@jit
def int2float_rd(arg0):
    return _from_int32(arg0, True, "rd")


@jit
def int2float_ru(arg0):
    return _from_int32(arg0, True, "ru")


@jit
def uint2float_rn(arg0):
    return _from_int32(arg0, False, "rn")


@jit
def uint2float_rz(arg0):
    return _from_int32(arg0, False, "rz")


@jit
def uint2float_rd(arg0):
    return _from_int32(arg0, False, "rd")


@jit
def uint2float_ru(arg0):
    return _from_int32(arg0, False, "ru")


@jit
def ll2float_rn(arg0):
    return _from_int64(arg0, "fp32", True, "rn")


@jit
def ll2float_rz(arg0):
    return _from_int64(arg0, "fp32", True, "rz")


@jit
def ll2float_rd(arg0):
    return _from_int64(arg0, "fp32", True, "rd")


@jit
def ll2float_ru(arg0):
    return _from_int64(arg0, "fp32", True, "ru")


@jit
def ull2float_rn(arg0):
    return _from_int64(arg0, "fp32", False, "rn")


@jit
def ull2float_rz(arg0):
    return _from_int64(arg0, "fp32", False, "rz")


@jit
def ull2float_rd(arg0):
    return _from_int64(arg0, "fp32", False, "rd")


@jit
def ull2float_ru(arg0):
    return _from_int64(arg0, "fp32", False, "ru")


@jit
def ll2double_rn(arg0):
    return _from_int64(arg0, "fp64", True, "rn")


@jit
def ll2double_rz(arg0):
    return _from_int64(arg0, "fp64", True, "rz")


@jit
def ll2double_rd(arg0):
    return _from_int64(arg0, "fp64", True, "rd")


@jit
def ll2double_ru(arg0):
    return _from_int64(arg0, "fp64", True, "ru")


@jit
def ull2double_rn(arg0):
    return _from_int64(arg0, "fp64", False, "rn")


@jit
def ull2double_rz(arg0):
    return _from_int64(arg0, "fp64", False, "rz")


@jit
def ull2double_rd(arg0):
    return _from_int64(arg0, "fp64", False, "rd")


@jit
def ull2double_ru(arg0):
    return _from_int64(arg0, "fp64", False, "ru")


@jit
def hiloint2double(arg0, arg1):
    """The float64 whose high word is arg0 and low word arg1."""
    high = tl.to_tensor(arg0).to(tl.int32).to(tl.int64) << 32
    low = tl.to_tensor(arg1).to(tl.int32).to(tl.uint32, bitcast=True).to(tl.int64)
    return (high | low).to(tl.float64, bitcast=True)


@jit
def double2loint(arg0):
    b = _wide(_float(arg0)).to(tl.int64, bitcast=True)
    return (b & 0xFFFFFFFF).to(tl.uint32).to(tl.int32, bitcast=True)


@jit
def double2hiint(arg0):
    b = _wide(_float(arg0)).to(tl.int64, bitcast=True)
    return (b >> 32).to(tl.int32)


@jit
def int_as_float(arg0):
    return tl.to_tensor(arg0).to(tl.int32).to(tl.float32, bitcast=True)


@jit
def uint_as_float(arg0):
    return tl.to_tensor(arg0).to(tl.uint32).to(tl.float32, bitcast=True)


@jit
def float_as_int(arg0):
    return _float(arg0).to(tl.float32).to(tl.int32, bitcast=True)


@jit
def float_as_uint(arg0):
    """The bits of a float32, as an int32 (Triton's libdevice declares so)."""
    return _float(arg0).to(tl.float32).to(tl.int32, bitcast=True)


@jit
def longlong_as_double(arg0):
    return tl.to_tensor(arg0).to(tl.int64).to(tl.float64, bitcast=True)


@jit
def double_as_longlong(arg0):
    return _wide(_float(arg0)).to(tl.int64, bitcast=True)


# --- integer functions ---------------------------------------------------------------


@jit
def _popcount(u):
    """The set bits of an unsigned integer, counted in parallel in fields of 2, 4, 8 bits."""
    if u.dtype.primitive_bitwidth == 64:
        u = u - ((u >> 1) & 0x5555555555555555)
        u = (u & 0x3333333333333333) + ((u >> 2) & 0x3333333333333333)
        u = (u + (u >> 4)) & 0x0F0F0F0F0F0F0F0F
        return ((u * 0x0101010101010101) >> 56).to(tl.int32)
    u = u - ((u >> 1) & 0x55555555)
    u = (u & 0x33333333) + ((u >> 2) & 0x33333333)
    u = (u + (u >> 4)) & 0x0F0F0F0F
    return ((u * 0x01010101) >> 24).to(tl.int32)


@jit
def popc(arg0):
    """The number of set bits (libdevice's popc and popcll), as an int32."""
    return _popcount(_unsigned(_integer(arg0)))


@jit
def clz(arg0):
    """The number of leading zero bits (clz and clzll), as an int32: every bit
    below the highest set one is set, and the rest counted."""
    u = _unsigned(_integer(arg0))
    WIDTH: tl.constexpr = u.dtype.primitive_bitwidth
    STEPS: tl.constexpr = 6 if WIDTH == 64 else 5
    for i in tl.static_range(STEPS):
        u = u | (u >> (1 << i))
    return WIDTH - _popcount(u)


@jit
def ffs(arg0):
    """The position (from 1) of the lowest set bit, 0 for 0 (ffs and ffsll), as an int32."""
    u = _unsigned(_integer(arg0))
    lowest = u & (0 - u)
    return tl.where(u == 0, 0, _popcount(lowest - 1) + 1)


@jit
def brev(arg0):
    """The bits in reverse order (brev and brevll): swaps of ever larger fields."""
    x = _integer(arg0)
    u = _unsigned(x)
    if u.dtype.primitive_bitwidth == 64:
        u = ((u >> 1) & 0x5555555555555555) | ((u & 0x5555555555555555) << 1)
        u = ((u >> 2) & 0x3333333333333333) | ((u & 0x3333333333333333) << 2)
        u = ((u >> 4) & 0x0F0F0F0F0F0F0F0F) | ((u & 0x0F0F0F0F0F0F0F0F) << 4)
        u = ((u >> 8) & 0x00FF00FF00FF00FF) | ((u & 0x00FF00FF00FF00FF) << 8)
        u = ((u >> 16) & 0x0000FFFF0000FFFF) | ((u & 0x0000FFFF0000FFFF) << 16)
        u = (u >> 32) | (u << 32)
    else:
        u = ((u >> 1) & 0x55555555) | ((u & 0x55555555) << 1)
        u = ((u >> 2) & 0x33333333) | ((u & 0x33333333) << 2)
        u = ((u >> 4) & 0x0F0F0F0F) | ((u & 0x0F0F0F0F) << 4)
        u = ((u >> 8) & 0x00FF00FF) | ((u & 0x00FF00FF) << 8)
        u = (u >> 16) | (u << 16)
    return u.to(x.dtype, bitcast=True)


@jit
def byte_perm(arg0, arg1, arg2):
    """Bytes of the 64-bit {y, x} (x low) chosen by the low 3 bits of each of the
    selector's four low nibbles: result byte i is byte ((s >> 4i) & 7)."""
    x = _int32(arg0).to(tl.uint32, bitcast=True).to(tl.int64)
    y = _int32(arg1).to(tl.uint32, bitcast=True).to(tl.int64)
    s = _int32(arg2)
    v = (y << 32) | x
    r = v * 0
    for i in tl.static_range(4):
        pick = ((s >> (4 * i)) & 7).to(tl.int64)
        r = r | (((v >> (pick * 8)) & 0xFF) << (8 * i))
    return r.to(tl.int32)


@jit
def _pair(arg0, arg1):
    """Two integer arguments in their common type."""
    x = tl.to_tensor(arg0)
    y = tl.to_tensor(arg1)
    like = x + y
    tl.static_assert(like.dtype.is_int() and like.dtype.primitive_bitwidth >= 32,
                     "libdevice: expected 32- or 64-bit integer arguments")
    return x.to(like.dtype), y.to(like.dtype)


@jit
def mulhi(arg0, arg1):
    """The high half of the double-width product (mulhi, umulhi, mul64hi, umul64hi)."""
    x, y = _pair(arg0, arg1)
    if x.dtype == tl.int32:
        return ((x.to(tl.int64) * y.to(tl.int64)) >> 32).to(tl.int32)
    if x.dtype == tl.uint32:
        return ((x.to(tl.uint64) * y.to(tl.uint64)) >> 32).to(tl.uint32)
    ux = x.to(tl.uint64, bitcast=True)
    uy = y.to(tl.uint64, bitcast=True)
    high = tl.umulhi(ux, uy)
    if x.dtype == tl.uint64:
        return high
    # Signed: the unsigned high half less y where x < 0 and x where y < 0.
    high = high - tl.where(x < 0, uy, 0) - tl.where(y < 0, ux, 0)
    return high.to(tl.int64, bitcast=True)


@jit
def mul24(arg0, arg1):
    """The low 32 bits of the product of the low 24 bits of x and y (signed for
    int32, unsigned for uint32)."""
    x, y = _pair(arg0, arg1)
    if x.dtype == tl.uint32:
        return ((x & 0xFFFFFF) * (y & 0xFFFFFF)).to(tl.uint32)
    tl.static_assert(x.dtype == tl.int32, "libdevice.mul24: expected int32 or uint32 arguments")
    xs = ((x << 8) >> 8).to(tl.int64)
    ys = ((y << 8) >> 8).to(tl.int64)
    return (xs * ys).to(tl.int32)


@jit
def sad(arg0, arg1, arg2):
    """|x - y| + z (sad for int32 x and y, usad for uint32), modulo 2^32."""
    x, y = _pair(arg0, arg1)
    z = tl.to_tensor(arg2).to(tl.uint32, bitcast=True).to(tl.int64)
    if x.dtype == tl.uint32:
        d = tl.maximum(x, y) - tl.minimum(x, y)
        return d + z.to(tl.uint32)
    tl.static_assert(x.dtype == tl.int32, "libdevice.sad: expected int32 or uint32 arguments")
    d = tl.abs(x.to(tl.int64) - y.to(tl.int64))
    return (d + z).to(tl.int32)


@jit
def _average(arg0, arg1, ROUND_UP: tl.constexpr):
    x, y = _pair(arg0, arg1)
    tl.static_assert(x.dtype.primitive_bitwidth == 32,
                     "libdevice: hadd and rhadd take int32 or uint32 arguments")
    total = x.to(tl.int64) + y.to(tl.int64) + ROUND_UP
    return (total >> 1).to(x.dtype)


@jit
def hadd(arg0, arg1):
    """(x + y) >> 1 without overflow (hadd, uhadd)."""
    return _average(arg0, arg1, 0)


@jit
def rhadd(arg0, arg1):
    """(x + y + 1) >> 1 without overflow (rhadd, urhadd)."""
    return _average(arg0, arg1, 1)


# Every function Triton's libdevice has, in this module (the helpers above start with "_").
__all__ = [name for name, value in sorted(globals().items())
           if not name.startswith("_") and isinstance(value, type(abs))]
