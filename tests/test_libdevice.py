"""tl.extra.libdevice (tilec/language/extra/libdevice.py): every function of
Triton 3.6's CUDA libdevice, called in a kernel on the CPU backend and compared
with numpy, scipy, torch, or an exact reference computed with fractions; the
result types Triton gives; the ways a kernel can reach the functions."""

import inspect
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from scipy import special

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice
from tilec.language.extra.cuda.libdevice import erfc as renamed_erfc
from tilec.language.extra.cuda.libdevice import exp as renamed_exp

# The functions of triton/language/extra/cuda/libdevice.py in Triton 3.6.
TRITON_LIBDEVICE = """
clz popc byte_perm mulhi mul24 brev sad abs floor rcp64h rsqrt ceil trunc exp2 saturatef
fma_rn fma_rz fma_rd fma_ru fast_dividef div_rn div_rz div_rd div_ru rcp_rn rcp_rz rcp_rd
rcp_ru sqrt_rn sqrt_rz sqrt_rd sqrt_ru sqrt add_rn add_rz add_rd add_ru mul_rn mul_rz mul_rd
mul_ru double2float_rn double2float_rz double2float_rd double2float_ru double2int_rn
double2int_rz double2int_rd double2int_ru double2uint_rn double2uint_rz double2uint_rd
double2uint_ru int2double_rn uint2double_rn float2int_rn float2int_rz float2int_rd float2int_ru
float2uint_rn float2uint_rz float2uint_rd float2uint_ru int2float_rn int2float_rz int2float_rd
int2float_ru uint2float_rn uint2float_rz uint2float_rd uint2float_ru hiloint2double
double2loint double2hiint float2ll_rn float2ll_rz float2ll_rd float2ll_ru float2ull_rn
float2ull_rz float2ull_rd float2ull_ru double2ll_rn double2ll_rz double2ll_rd double2ll_ru
double2ull_rn double2ull_rz double2ull_rd double2ull_ru ll2float_rn ll2float_rz ll2float_rd
ll2float_ru ull2float_rn ull2float_rz ull2float_rd ull2float_ru ll2double_rn ll2double_rz
ll2double_rd ll2double_ru ull2double_rn ull2double_rz ull2double_rd ull2double_ru int_as_float
float_as_int uint_as_float float_as_uint longlong_as_double double_as_longlong fast_sinf
fast_cosf fast_log2f fast_logf fast_expf fast_tanf fast_exp10f fast_log10f fast_powf hadd
rhadd sub_rn sub_rz sub_rd sub_ru rsqrt_rn ffs rint llrint nearbyint isnan signbit copysign
finitef isinf nextafter sin cos sinpi cospi tan log2 exp exp10 cosh sinh tanh atan2 atan asin
acos log log10 log1p acosh asinh atanh expm1 hypot rhypot norm3d rnorm3d norm4d rnorm4d cbrt
rcbrt j0 j1 y0 y1 yn jn cyl_bessel_i0 cyl_bessel_i1 erf erfinv erfc erfcx erfcinv normcdfinv
normcdf lgamma ldexp scalbn fmod remainder fma pow tgamma round llround fdim ilogb logb
isfinited
""".split()

N = 37  # odd and below BLOCK: the mask matters
BLOCK = 64
F32, F64 = np.float32, np.float64
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


@tilec.jit
def call_kernel(out_ptr, a_ptr, b_ptr, c_ptr, d_ptr, n, FN: tl.constexpr, ARITY: tl.constexpr,
                BLOCK: tl.constexpr, AS_DOUBLE: tl.constexpr = False):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    c = tl.load(c_ptr + offs, mask=mask, other=1)
    d = tl.load(d_ptr + offs, mask=mask, other=1)
    fn = getattr(libdevice, FN)
    if ARITY == 1:
        r = fn(a)
    elif ARITY == 2:
        r = fn(a, b)
    elif ARITY == 3:
        r = fn(a, b, c)
    else:
        r = fn(a, b, c, d)
    if AS_DOUBLE:  # any result type, stored as float64
        tl.store(out_ptr + offs, r.to(tl.float64), mask=mask)
    else:
        tl.static_assert(r.dtype == out_ptr.dtype.element_ty, "not the result type Triton gives")
        tl.store(out_ptr + offs, r, mask=mask)


def call(fn, *args, out=None):
    """libdevice.`fn` of the arrays `args` in a kernel; the result has `out`'s
    dtype (default: the first argument's), which must be the function's."""
    out = np.zeros(args[0].shape, out or args[0].dtype)
    padded = list(args) + [args[0]] * (4 - len(args))
    call_kernel[(1,)](out, *padded, out.size, FN=fn, ARITY=len(args), BLOCK=BLOCK)
    return out


def uniform(rng, lo, hi, dtype, n=N):
    """Random values in (lo, hi), none of them zero."""
    x = rng.uniform(lo, hi, n)
    x = np.where(x == 0, hi / 2, x)
    return x.astype(dtype)


def close(got, want, dtype):
    """float64 results to 1e-12 (the functions are accurate to a few ulp, the
    references too); float32 ones to 2 ulp of a float64 reference."""
    got = torch.from_numpy(np.asarray(got, np.float64))
    want = torch.from_numpy(np.asarray(want, np.float64))
    if dtype == F64:
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-13, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, rtol=2.4e-7, atol=1e-37, equal_nan=True)


def c_round(x):
    """C's round: halves away from zero (|x| - floor(|x|) is exact, |x| + 0.5 is not)."""
    whole = np.floor(np.abs(x))
    with np.errstate(invalid="ignore"):
        return np.copysign(whole + (np.abs(x) - whole >= 0.5), x)


# name: (reference on float64, the domain's ends)
UNARY = {
    "abs": (np.abs, -10, 10), "acos": (np.arccos, -1, 1), "acosh": (np.arccosh, 1, 30),
    "asin": (np.arcsin, -1, 1), "asinh": (np.arcsinh, -30, 30), "atan": (np.arctan, -30, 30),
    "atanh": (np.arctanh, -1, 1), "cbrt": (np.cbrt, -100, 100), "ceil": (np.ceil, -10, 10),
    "cos": (np.cos, -10, 10), "cosh": (np.cosh, -20, 20),
    "cospi": (lambda x: np.cos(np.pi * x), -0.5, 0.5),
    "cyl_bessel_i0": (special.i0, -30, 30), "cyl_bessel_i1": (special.i1, -30, 30),
    "erf": (special.erf, -4, 4), "erfc": (special.erfc, -5, 9),
    "erfcinv": (special.erfcinv, 0, 2), "erfcx": (special.erfcx, -3, 30),
    "erfinv": (special.erfinv, -1, 1), "exp": (np.exp, -20, 20),
    "exp10": (lambda x: 10.0 ** x, -30, 30), "exp2": (np.exp2, -30, 30),
    "expm1": (np.expm1, -3, 3), "floor": (np.floor, -10, 10), "j0": (special.j0, -40, 40),
    "j1": (special.j1, -40, 40), "lgamma": (special.gammaln, -20, 40), "log": (np.log, 0, 100),
    "log10": (np.log10, 0, 100), "log1p": (np.log1p, -1, 3), "log2": (np.log2, 0, 100),
    "logb": (lambda x: np.frexp(x)[1] - 1.0, -100, 100), "nearbyint": (np.rint, -10, 10),
    "normcdf": (special.ndtr, -10, 10), "normcdfinv": (special.ndtri, 0, 1),
    "rcbrt": (lambda x: 1 / np.cbrt(x), -100, 100), "rint": (np.rint, -10, 10),
    "round": (c_round, -10, 10), "rsqrt": (lambda x: 1 / np.sqrt(x), 0, 100),
    "rsqrt_rn": (lambda x: 1 / np.sqrt(x), 0, 100),
    "saturatef": (lambda x: np.clip(x, 0, 1), -2, 2),
    "sin": (np.sin, -10, 10), "sinh": (np.sinh, -20, 20),
    "sinpi": (lambda x: np.sin(np.pi * x), -0.5, 0.5), "sqrt": (np.sqrt, 0, 100),
    "sqrt_rn": (np.sqrt, 0, 100), "tan": (np.tan, -1.5, 1.5), "tanh": (np.tanh, -5, 5),
    "tgamma": (special.gamma, -10, 30), "trunc": (np.trunc, -10, 10), "y0": (special.y0, 0, 40),
    "y1": (special.y1, 0, 40),
}


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype, rng):
    reference, lo, hi = UNARY[name]
    x = uniform(rng, lo, hi, dtype)
    close(call(name, x), reference(x.astype(F64)), dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_sinpi_cospi_reduce_exactly(dtype, rng):
    """Over many periods: the argument is reduced modulo 2 exactly; the zeros are exact."""
    x = np.concatenate([uniform(rng, -1e6, 1e6, dtype, 32), [0.5, 1.0, -2.5, 3.0, 2.0**60]])
    x = x.astype(dtype)
    r = np.fmod(x.astype(F64), 2.0)
    close(call("sinpi", x), np.where(r == np.round(r), 0.0, np.sin(np.pi * r)), dtype)
    close(call("cospi", x), np.where(r - 0.5 == np.round(r - 0.5), 0.0, np.cos(np.pi * r)), dtype)


@pytest.mark.parametrize("name", ["fast_sinf", "fast_cosf", "fast_tanf", "fast_expf",
                                  "fast_exp10f", "fast_logf", "fast_log2f", "fast_log10f"])
def test_fast_float32(name, rng):
    reference = {"fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan,
                 "fast_expf": np.exp, "fast_exp10f": lambda x: 10.0 ** x, "fast_logf": np.log,
                 "fast_log2f": np.log2, "fast_log10f": np.log10}[name]
    x = uniform(rng, 0.1, 1.5, F32)
    np.testing.assert_allclose(call(name, x), reference(x.astype(F64)), rtol=1e-5)


BINARY = {
    "atan2": (np.arctan2, -10, 10), "copysign": (np.copysign, -10, 10),
    "fdim": (lambda x, y: np.where(x > y, x - y, 0.0), -10, 10),
    "hypot": (np.hypot, -1e3, 1e3), "rhypot": (lambda x, y: 1 / np.hypot(x, y), -1e3, 1e3),
    "nextafter": (np.nextafter, -10, 10), "pow": (np.power, 0.1, 10),
    "fmod": (np.fmod, -1e3, 1e3), "div_rn": (np.divide, -10, 10),
}


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype, rng):
    reference, lo, hi = BINARY[name]
    x, y = uniform(rng, lo, hi, dtype), uniform(rng, lo, hi, dtype)
    got = call(name, x, y)
    if name == "nextafter":
        np.testing.assert_array_equal(got, np.nextafter(x, y))
    else:
        close(got, reference(x.astype(F64), y.astype(F64)), dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_fmod_and_remainder_are_exact(dtype, rng):
    x = np.concatenate([uniform(rng, -1e30, 1e30, dtype, 20), uniform(rng, -10, 10, dtype, 17)])
    y = np.concatenate([uniform(rng, -1e-20, 1e-20, dtype, 20), uniform(rng, -3, 3, dtype, 17)])
    np.testing.assert_array_equal(call("fmod", x, y), np.fmod(x, y))
    want = [math.remainder(float(a), float(b)) for a, b in zip(x, y)]
    np.testing.assert_array_equal(call("remainder", x, y), np.array(want, dtype))
    # Ties go to the even multiple.
    x = np.array([2.5, 3.5, -2.5, 5.0, 7.0, 1.0] * 6 + [0.0], dtype)
    y = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 3.0] * 6 + [1.0], dtype)
    want = [math.remainder(float(a), float(b)) for a, b in zip(x, y)]
    np.testing.assert_array_equal(call("remainder", x, y), np.array(want, dtype))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", ["norm3d", "rnorm3d", "norm4d", "rnorm4d"])
def test_norms(name, dtype, rng):
    args = [uniform(rng, -1e3, 1e3, dtype) for _ in range(3 if "3" in name else 4)]
    norm = np.sqrt(sum(a.astype(F64) ** 2 for a in args))
    close(call(name, *args), 1 / norm if name.startswith("r") else norm, dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_fast_powf_and_dividef(dtype, rng):
    x, y = uniform(rng, 0.5, 2, dtype), uniform(rng, -3, 3, dtype)
    np.testing.assert_allclose(call("fast_powf", x, y), np.power(x, y, dtype=F64), rtol=1e-5)
    np.testing.assert_allclose(call("fast_dividef", x, y), x.astype(F64) / y, rtol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_pow_of_an_integer_power(dtype, rng):
    x, n = uniform(rng, -3, 3, dtype), rng.integers(-8, 9, N).astype(np.int32)
    close(call("pow", x, n, out=dtype), np.power(x.astype(F64), n.astype(F64)), dtype)


@pytest.mark.parametrize("name", ["ldexp", "scalbn"])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_ldexp(name, dtype, rng):
    x = uniform(rng, -10, 10, dtype)
    limit = 1100 if dtype == F64 else 160
    n = rng.integers(-limit, limit, N).astype(np.int32)
    with np.errstate(over="ignore"):
        want = np.ldexp(x, n)
    np.testing.assert_array_equal(call(name, x, n), want)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_exponents_and_classes(dtype):
    x = np.array([1.0, -3.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 5e-324, 2.0**100,
                  np.finfo(dtype).tiny, np.finfo(dtype).max] * 3 + [0.75], dtype)
    finite = np.isfinite(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.frexp(x)[1] - 1
    ilogb = np.where(finite & (x != 0), exponent, np.where(np.isinf(x), INT32_MAX, INT32_MIN))
    np.testing.assert_array_equal(call("ilogb", x, out=np.int32), ilogb)
    logb = np.where(finite & (x != 0), exponent, np.where(x == 0, -np.inf, np.abs(x)))
    np.testing.assert_array_equal(call("logb", x), logb.astype(dtype))
    np.testing.assert_array_equal(call("isinf", x, out=np.bool_), np.isinf(x))
    np.testing.assert_array_equal(call("isnan", x, out=np.bool_), np.isnan(x))
    np.testing.assert_array_equal(call("signbit", x, out=np.int32), np.signbit(x))
    finite_fn = "finitef" if dtype == F32 else "isfinited"
    np.testing.assert_array_equal(call(finite_fn, x, out=np.bool_), finite)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_finitef_and_isfinited_store_to_bool(dtype):
    @tilec.jit
    def kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs, mask=mask)),
                 mask=mask)

    x = torch.tensor([1.0, -2.5, float("inf"), float("-inf"), float("nan"), 0.0, 1e30],
                     dtype=dtype)
    out = torch.zeros(x.shape, dtype=torch.bool)
    kernel[(1,)](x, out, x.numel(), FN="finitef" if dtype == torch.float32 else "isfinited",
                 BLOCK=8)
    assert out.tolist() == torch.isfinite(x).tolist()


@pytest.mark.parametrize("dtype", [F32, F64])
def test_libdevice_rint(dtype):
    x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, -0.0, 0.0, 1e20, -1e20,
                  2.0**52 + 1 if dtype == F64 else 2.0**23 + 1, 4503599627370495.5,
                  np.inf, -np.inf, np.nan, 7.0, -7.2, 123456.5] * 2, dtype)
    for name in ("rint", "nearbyint"):
        got = call(name, x)
        np.testing.assert_array_equal(got, np.rint(x))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.rint(x)))
    np.testing.assert_array_equal(call("round", x), c_round(x).astype(dtype))
    np.testing.assert_array_equal(call("trunc", x), np.trunc(x))
    for name, rounded_x in [("llrint", np.rint(x)), ("llround", c_round(x))]:
        ints = [0 if math.isnan(v) else min(max(int(np.clip(v, -1e30, 1e30)), -2**63), 2**63 - 1)
                for v in rounded_x]
        np.testing.assert_array_equal(call(name, x, out=np.int64), ints)


# --- the Bessel functions as Triton's conformance test checks them ------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name, reference", [
    ("j0", torch.special.bessel_j0), ("j1", torch.special.bessel_j1),
    ("y0", torch.special.bessel_y0), ("y1", torch.special.bessel_y1),
    ("cyl_bessel_i0", torch.special.i0), ("cyl_bessel_i1", torch.special.i1)])
def test_bessel_like_triton(name, reference, dtype):
    torch.manual_seed(0)
    x = torch.randn(128, dtype=dtype)
    out = torch.empty_like(x)
    call_kernel[(1,)](out, x, x, x, x, 128, FN=name, ARITY=1, BLOCK=128)
    torch.testing.assert_close(out, reference(x), equal_nan=True)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name, reference", [("jn", special.jv), ("yn", special.yv)])
def test_bessel_of_integer_order(name, reference, dtype, rng):
    n = rng.integers(-12, 13, N).astype(np.int32)
    n[:3] = [0, 1, 40]
    x = uniform(rng, -30 if name == "jn" else 0, 30, dtype)
    x[:4] = [2.5, 0.001, 3.0, 1e-25]
    with np.errstate(over="ignore"):  # Y_40(3) overflows float32
        want = reference(n.astype(F64), x.astype(F64)).astype(dtype)
    close(call(name, n, x, out=dtype), want, dtype)


# --- directed rounding -------------------------------------------------------------


def rounded(exact, dtype, mode):
    """A Fraction rounded to `dtype` toward nearest (even), zero, down or up."""
    near = dtype(float(exact))  # float() rounds correctly; float32 may then round twice
    if Fraction(float(near)) == exact:
        return near
    below = Fraction(float(near)) > exact
    lo = np.nextafter(near, dtype(-np.inf)) if below else near
    hi = near if below else np.nextafter(near, dtype(np.inf))
    if mode == "rd" or (mode == "rz" and exact > 0):
        return lo
    if mode == "ru" or mode == "rz":
        return hi
    d_lo, d_hi = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if int(np.array(lo).view(np.int64 if dtype == F64 else np.int32)) % 2 == 0 else hi


def exact_of(name, args):
    a = [Fraction(float(v)) for v in args]
    op = name.rsplit("_", 1)[0]
    return {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
            "div": lambda: a[0] / a[1], "rcp": lambda: 1 / a[0],
            "fma": lambda: a[0] * a[1] + a[2]}[op]()


def sqrt_rounded(x, dtype, mode):
    near = np.sqrt(x)  # correctly rounded
    square = Fraction(float(near)) ** 2
    if square == Fraction(float(x)) or mode == "rn":
        return near
    if (mode in ("rd", "rz")) == (square < Fraction(float(x))):
        return near
    return np.nextafter(near, dtype(np.inf) if mode == "ru" else dtype(0))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rcp", "fma", "sqrt"])
def test_rounding_modes(op, mode, dtype, rng):
    name = f"{op}_{mode}"
    arity = {"rcp": 1, "sqrt": 1, "fma": 3}.get(op, 2)
    args = [uniform(rng, 0 if op == "sqrt" else -10, 10, dtype) for _ in range(arity)]
    if op in ("add", "sub"):  # exponents far apart: the sum is inexact in float64 too
        args[1][:10] *= dtype(1e-12)
    got = call(name, *args)
    if op == "sqrt":
        want = [sqrt_rounded(x, dtype, mode) for x in args[0]]
    else:
        want = [rounded(exact_of(name, vals), dtype, mode) for vals in zip(*args)]
    np.testing.assert_array_equal(got, np.array(want, dtype))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_fma_rounds_once(dtype, rng):
    x, y, z = (uniform(rng, -10, 10, dtype) for _ in range(3))
    want = [rounded(exact_of("fma_rn", vals), dtype, "rn") for vals in zip(x, y, z)]
    np.testing.assert_array_equal(call("fma", x, y, z), np.array(want, dtype))


# --- conversions -------------------------------------------------------------------

INT_ROUNDINGS = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("source", ["float", "double"])
@pytest.mark.parametrize("target", ["int", "uint", "ll", "ull"])
def test_float_to_integer(target, source, mode, rng):
    dtype = F32 if source == "float" else F64
    x = uniform(rng, -1e3, 1e3, dtype)
    x[:6] = [2.5, -2.5, 0.5, 1e30, -1e30, 3.5]
    r = INT_ROUNDINGS[mode](x.astype(F64))
    bits, signed = {"int": (32, True), "uint": (32, False), "ll": (64, True),
                    "ull": (64, False)}[target]
    lo, hi = (-2**(bits - 1), 2**(bits - 1) - 1) if signed else (0, 2**bits - 1)
    want = [min(max(int(v), lo), hi) % 2**bits for v in r]  # saturated, then as bits
    result = np.int32 if bits == 32 else np.int64
    got = call(f"{source}2{target}_{mode}", x, out=result)
    np.testing.assert_array_equal(got.view(np.uint32 if bits == 32 else np.uint64), want)


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("source, target", [
    ("int", "float"), ("uint", "float"), ("ll", "float"), ("ull", "float"), ("ll", "double"),
    ("ull", "double"), ("double", "float")])
def test_to_float(source, target, mode, rng):
    name = f"{source}2{target}_{mode}"
    if source == "double":
        x = rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)
    else:
        dtype = {"int": np.int32, "uint": np.uint32, "ll": np.int64, "ull": np.uint64}[source]
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
        x[:4] = [info.min, info.max, 0, 16777217 if info.min < 0 else 33554431]
    out = F32 if target == "float" else F64
    want = [rounded(Fraction(int(v)) if source != "double" else Fraction(float(v)), out, mode)
            for v in x]
    np.testing.assert_array_equal(call(name, x, out=out), np.array(want, out))


def test_exact_integer_to_double(rng):
    i = rng.integers(INT32_MIN, INT32_MAX, N).astype(np.int32)
    np.testing.assert_array_equal(call("int2double_rn", i, out=F64), i.astype(F64))
    u = rng.integers(0, 2**32, N).astype(np.uint32)
    np.testing.assert_array_equal(call("uint2double_rn", u, out=F64), u.astype(F64))


def test_bit_reinterpretations(rng):
    f = uniform(rng, -1e3, 1e3, F32)
    d = uniform(rng, -1e3, 1e3, F64)
    np.testing.assert_array_equal(call("float_as_int", f, out=np.int32), f.view(np.int32))
    np.testing.assert_array_equal(call("float_as_uint", f, out=np.int32), f.view(np.int32))
    np.testing.assert_array_equal(call("int_as_float", f.view(np.int32), out=F32), f)
    np.testing.assert_array_equal(call("uint_as_float", f.view(np.uint32), out=F32), f)
    np.testing.assert_array_equal(call("double_as_longlong", d, out=np.int64), d.view(np.int64))
    np.testing.assert_array_equal(call("longlong_as_double", d.view(np.int64), out=F64), d)
    words = d.view(np.int32).reshape(-1, 2)  # little-endian: low word first
    np.testing.assert_array_equal(call("double2loint", d, out=np.int32), words[:, 0])
    np.testing.assert_array_equal(call("double2hiint", d, out=np.int32), words[:, 1])
    np.testing.assert_array_equal(
        call("hiloint2double", words[:, 1].copy(), words[:, 0].copy(), out=F64), d)
    high = (d.view(np.int64) >> 32) << 32
    rcp = ((1 / high.view(F64)).view(np.int64) >> 32) << 32
    np.testing.assert_array_equal(call("rcp64h", d), rcp.view(F64))
    np.testing.assert_allclose(call("rcp64h", d), 1 / d, rtol=2e-6)


# --- integer functions -------------------------------------------------------------


def python_ints(x):
    return [int(v) for v in x]


def wrap(values, dtype):
    bits = np.iinfo(dtype).bits
    return np.array([v % 2**bits for v in values], np.uint64).astype(
        np.uint32 if bits == 32 else np.uint64).view(dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bit_counts(dtype, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:4] = [0, -1, 1, info.min]
    bits = info.bits
    u = [v % 2**bits for v in python_ints(x)]
    np.testing.assert_array_equal(call("popc", x, out=np.int32), [bin(v).count("1") for v in u])
    np.testing.assert_array_equal(call("clz", x, out=np.int32), [bits - v.bit_length() for v in u])
    np.testing.assert_array_equal(call("ffs", x, out=np.int32), [(v & -v).bit_length() for v in u])
    brev = [int(format(v, f"0{bits}b")[::-1], 2) for v in u]
    np.testing.assert_array_equal(call("brev", x), wrap(brev, dtype))
    np.testing.assert_array_equal(call("abs", x), np.abs(x))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_mulhi(dtype, rng):
    info = np.iinfo(dtype)
    x, y = (rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True) for _ in range(2))
    x[:2], y[:2] = info.min, info.max
    want = [(a * b) >> info.bits for a, b in zip(python_ints(x), python_ints(y))]
    np.testing.assert_array_equal(call("mulhi", x, y), wrap(want, dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_32_bit_integer_functions(dtype, rng):
    info = np.iinfo(dtype)
    x, y = (rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True) for _ in range(2))
    z = rng.integers(0, 2**32, N, dtype=np.uint32)
    a, b = python_ints(x), python_ints(y)

    def low24(v):
        v &= 0xFFFFFF
        return v - (1 << 24) if info.min < 0 and v & 0x800000 else v

    np.testing.assert_array_equal(call("mul24", x, y),
                                  wrap([low24(p) * low24(q) for p, q in zip(a, b)], dtype))
    np.testing.assert_array_equal(call("sad", x, y, z),
                                  wrap([builtin_abs(p - q) + int(r) for p, q, r in zip(a, b, z)],
                                       dtype))
    np.testing.assert_array_equal(call("hadd", x, y), wrap([(p + q) >> 1 for p, q in zip(a, b)],
                                                           dtype))
    np.testing.assert_array_equal(call("rhadd", x, y),
                                  wrap([(p + q + 1) >> 1 for p, q in zip(a, b)], dtype))


builtin_abs = abs


def test_byte_perm(rng):
    x, y = (rng.integers(INT32_MIN, INT32_MAX, N, dtype=np.int32) for _ in range(2))
    s = rng.integers(0, 2**16, N).astype(np.int32)
    want = []
    for a, b, sel in zip(python_ints(x), python_ints(y), python_ints(s)):
        v = (b % 2**32) << 32 | (a % 2**32)
        want.append(sum(((v >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4)))
    np.testing.assert_array_equal(call("byte_perm", x, y, s), wrap(want, np.int32))


# --- every variant on every backend ----------------------------------------------

SIGNATURES = {  # the argument types of each libdevice variant, where not float32 and float64
    "abs": ["f32", "f64", "i32", "i64"], "clz": ["i32", "i64"], "popc": ["i32", "i64"],
    "ffs": ["i32", "i64"], "brev": ["i32", "i64"], "byte_perm": ["i32 i32 i32"],
    "mulhi": ["i32 i32", "u32 u32", "i64 i64", "u64 u64"], "mul24": ["i32 i32", "u32 u32"],
    "hadd": ["i32 i32", "u32 u32"], "rhadd": ["i32 i32", "u32 u32"],
    "sad": ["i32 i32 u32", "u32 u32 u32"], "jn": ["i32 f32", "i32 f64"], "yn": ["i32 f32", "i32 f64"],
    "ldexp": ["f32 i32", "f64 i32"], "scalbn": ["f32 i32", "f64 i32"],
    "pow": ["f32 f32", "f64 f64", "f32 i32", "f64 i32"], "hiloint2double": ["i32 i32"],
}
PREFIX_TYPES = [("int2", "i32"), ("int_as", "i32"), ("uint2", "u32"), ("uint_as", "u32"),
                ("ll2", "i64"), ("longlong_as", "i64"), ("ull2", "u64"), ("double", "f64"),
                ("float", "f32"), ("fast_", "f32"), ("rcp64h", "f64"), ("isfinited", "f64"),
                ("finitef", "f32"), ("saturatef", "f32"), ("rsqrt_rn", "f32")]
TYPES = {"f32": F32, "f64": F64, "i32": np.int32, "i64": np.int64, "u32": np.uint32,
         "u64": np.uint64}


def variants():
    for name in TRITON_LIBDEVICE:
        arity = len(inspect.signature(getattr(libdevice, name).fn).parameters)
        prefix = next((t for p, t in PREFIX_TYPES if name.startswith(p)), None)
        sigs = SIGNATURES.get(name) or ([" ".join([prefix] * arity)] if prefix else
                                        [" ".join([t] * arity) for t in ("f32", "f64")])
        yield from ((name, sig.split()) for sig in sigs)


def test_every_variant_on_every_backend(device):
    """Each variant runs on this backend (with the "ptx" one, also assembles for
    sm_80 and sm_90a); on a GPU, it agrees with the CPU backend."""
    rng = np.random.default_rng(7)
    for name, types in variants():
        args = [np.asarray(rng.integers(1, 20, N) if t[0] in "iu" else rng.uniform(0.55, 0.95, N),
                           TYPES[t]) for t in types]
        out = np.zeros(N)
        padded = args + [args[0]] * (4 - len(args))
        call_kernel[(1,)](out, *padded, N, FN=name, ARITY=len(args), BLOCK=BLOCK,
                          AS_DOUBLE=True)
        if device == "cuda":
            host = np.zeros(N)
            options = {"FN": name, "ARITY": len(args), "BLOCK": BLOCK, "AS_DOUBLE": True}
            tilec.runtime.launch.run_kernel(call_kernel, (host, *padded, N), options, (1,))
            np.testing.assert_allclose(out, host, rtol=1e-5, atol=1e-6, equal_nan=True,
                                       err_msg=f"{name}({', '.join(types)})")


# --- how kernels reach the functions ------------------------------------------------


def test_every_triton_function_is_here():
    assert len(TRITON_LIBDEVICE) == len(set(TRITON_LIBDEVICE)) == 197
    missing = [n for n in TRITON_LIBDEVICE if not hasattr(libdevice, n)]
    assert not missing
    assert sorted(libdevice.__all__) == sorted(TRITON_LIBDEVICE)
    for name in TRITON_LIBDEVICE:
        assert getattr(tl.extra.cuda.libdevice, name) is getattr(tl.extra.libdevice, name)
        # tl.math keeps its built-ins (compiled as "math.X") and re-exports the rest.
        assert hasattr(tl.math, name)
    assert tl.math.erfc is libdevice.erfc and tl.math.exp is not libdevice.exp


@tilec.jit
def import_styles_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.extra.libdevice.erfc(x), mask=mask)
    tl.store(out_ptr + n + offs, tl.extra.cuda.libdevice.erfc(x), mask=mask)
    tl.store(out_ptr + 2 * n + offs, renamed_erfc(x), mask=mask)
    tl.store(out_ptr + 3 * n + offs, tl.math.erfc(x), mask=mask)
    tl.store(out_ptr + 4 * n + offs, renamed_exp(x) + tl.extra.libdevice.exp(x) - tl.math.exp(x),
             mask=mask)
    tl.store(out_ptr + 5 * n + offs, tl.extra.cuda.libdevice.tanh(x) + tl.math.lgamma(x),
             mask=mask)


def test_import_styles(rng):
    x = uniform(rng, 0.5, 3, F64)
    out = np.zeros(6 * N)
    import_styles_kernel[(1,)](x, out, N, BLOCK=BLOCK)
    for row in range(4):
        close(out[row * N:(row + 1) * N], special.erfc(x), F64)
    close(out[4 * N:5 * N], np.exp(x), F64)
    close(out[5 * N:], np.tanh(x) + special.gammaln(x), F64)


@tilec.jit
def scalar_unary_kernel(x_ptr, out_ptr, FN: tl.constexpr):
    tl.store(out_ptr, getattr(libdevice, FN)(tl.load(x_ptr)))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_of_a_scalar(name, dtype):
    reference, lo, hi = UNARY[name]
    x = np.array([lo + (hi - lo) * 0.3125], dtype)
    out = np.zeros(1, dtype)
    scalar_unary_kernel[(1,)](x, out, FN=name)
    close(out, reference(x.astype(F64)), dtype)


@tilec.jit
def scalar_kernel(x_ptr, out_ptr, n_ptr):
    x = tl.load(x_ptr)
    n = tl.load(n_ptr)
    tl.store(out_ptr, libdevice.erfc(x))
    tl.store(out_ptr + 1, libdevice.j0(x) + libdevice.cyl_bessel_i1(x))
    tl.store(out_ptr + 2, libdevice.jn(n, x) + libdevice.yn(n, x))
    tl.store(out_ptr + 3, libdevice.fmod(x, 0.75) + libdevice.tgamma(x))
    tl.store(out_ptr + 4, libdevice.erfinv(0.5))  # a constant: computed as float32
    tl.store(out_ptr + 5, libdevice.popc(n).to(tl.float64) + libdevice.rint(x))


def test_scalars():
    x, n, out = np.array([1.75]), np.array([3], np.int32), np.zeros(6)
    scalar_kernel[(1,)](x, out, n)
    want = [special.erfc(1.75), special.j0(1.75) + special.i1(1.75),
            special.jv(3, 1.75) + special.yv(3, 1.75), math.fmod(1.75, 0.75) + special.gamma(1.75),
            np.float32(special.erfinv(0.5)), 2.0 + 2.0]
    close(out, want, F64)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computed_wider(dtype, rng):
    x = torch.from_numpy(uniform(rng, 0.5, 4, F32)).to(dtype)
    for name, reference in [("erfc", special.erfc), ("j0", special.j0), ("rint", np.rint),
                            ("lgamma", special.gammaln)]:
        out = torch.zeros_like(x)
        call_kernel[(1,)](out, x, x, x, x, N, FN=name, ARITY=1, BLOCK=BLOCK)
        want = torch.from_numpy(reference(x.double().numpy())).to(dtype)
        torch.testing.assert_close(out, want, rtol=0, atol=0)


@pytest.mark.parametrize("name, args, message", [
    ("erfc", [np.arange(N, dtype=np.int32)], "expected a floating-point argument"),
    ("popc", [np.ones(N, F32)], "expected a 32- or 64-bit integer argument"),
    ("mul24", [np.ones(N, np.int64)] * 2, "expected int32 or uint32 arguments")])
def test_wrong_argument_types_are_compile_errors(name, args, message):
    """The error names the library's check and the kernel's call that failed it."""
    with pytest.raises(tilec.CompilationError) as failure:
        call(name, *args, out=np.int32)
    text = str(failure.value)
    assert "libdevice.py:" in text and "error: static assertion failed: libdevice" in text
    assert message in text
    arity = "a" if len(args) == 1 else "a, b"
    assert "test_libdevice.py:" in text and f"r = fn({arity})" in text
    assert f"note: in the call to '{name}' here" in text
