"""One test per op of the kernel language, each checked against numpy (or torch).

Data is random and non-zero, sizes are odd and accesses are masked, so that a
wrong mask, a wrong promotion or an op that ignores its operand shows up.
"""

import math
import re

import numpy as np
import pytest

import tilec
import tilec.language as tl

from conftest import nonzero

pytestmark = pytest.mark.usefixtures("device")


def nonzero_int(rng, shape, dtype=np.int32, high=100):
    """Random non-zero integers in [-high, high] ([1, high] for unsigned types)."""
    x = rng.integers(1, high + 1, size=shape)
    if np.issubdtype(np.dtype(dtype), np.signedinteger):
        x = x * rng.choice([-1, 1], size=shape)
    return x.astype(dtype)


def full_range(rng, shape, dtype):
    """Random non-zero integers over the whole range of an integer dtype."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return np.where(x == 0, dtype(1), x).astype(dtype)


def c_div(a, b):
    """Integer division truncating toward zero, as in C (and Triton)."""
    if np.issubdtype(np.result_type(a, b), np.unsignedinteger):
        return a // b
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


def c_mod(a, b):
    """The remainder of c_div: it has the sign of the dividend."""
    return np.fmod(a, b)


def grid1(n, block):
    return (tilec.cdiv(n, block),)


# ----------------------------------------------------------------------------
# arithmetic
# ----------------------------------------------------------------------------

def assert_quotients(out, ref):
    """`/` on float32 divides as Triton does, within 2 ulp on the GPU
    (div.full.f32); the CPU backend rounds exactly. Other results are exact."""
    if np.asarray(ref).dtype == np.float32:
        np.testing.assert_allclose(out, ref, rtol=2.4e-7, atol=0)
    else:
        np.testing.assert_array_equal(out, ref)


@tilec.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int16, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%"])
def test_int_arithmetic(rng, op, dtype):
    n = 203
    if dtype == np.int32:
        x = nonzero_int(rng, n, dtype, high=1000)
        y = nonzero_int(rng, n, dtype, high=30)
    else:
        # the whole range: + - * wrap around
        x = full_range(rng, n, dtype)
        y = full_range(rng, n, dtype) if op in "+-*" else nonzero_int(rng, n, dtype, high=30)
        if np.issubdtype(dtype, np.signedinteger):
            x[x == np.iinfo(dtype).min] = 1  # MIN // -1 overflows
    ref = {
        "+": lambda: x + y,
        "-": lambda: x - y,
        "*": lambda: x * y,
        # int / int is a float32 division of the operands converted to float32
        "/": lambda: x.astype(np.float32) / y.astype(np.float32),
        "//": lambda: c_div(x, y),  # truncates toward zero, unlike Python
        "%": lambda: c_mod(x, y),  # has the sign of x, unlike Python
    }[op]()
    out = np.zeros(n, ref.dtype)
    binary_kernel[grid1(n, 64)](x, y, out, n, OP=op, BLOCK=64)
    assert_quotients(out, ref) if op == "/" else np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
def test_float_arithmetic(rng, op, dtype):
    n = 203
    x = nonzero(rng, n, dtype, high=50.0)
    y = nonzero(rng, n, dtype)
    ref = {"+": x + y, "-": x - y, "*": x * y, "/": x / y, "%": np.fmod(x, y)}[op]
    out = np.zeros(n, dtype)
    binary_kernel[grid1(n, 64)](x, y, out, n, OP=op, BLOCK=64)
    assert_quotients(out, ref) if op == "/" else np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_bfloat16_arithmetic(rng, op):
    torch = pytest.importorskip("torch")
    n = 203
    x = torch.from_numpy(nonzero(rng, n, high=50.0)).to(torch.bfloat16)
    y = torch.from_numpy(nonzero(rng, n)).to(torch.bfloat16)
    ref = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]  # rounded once to bf16
    out = torch.zeros(n, dtype=torch.bfloat16)
    binary_kernel[grid1(n, 64)](x, y, out, n, OP=op, BLOCK=64)
    assert torch.equal(out.view(torch.int16), ref.view(torch.int16))


@tilec.jit
def truediv_kernel(x_ptr, y_ptr, out_ptr, n, EXPECTED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = x / y
    tl.static_assert(z.dtype == EXPECTED)
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("xt,yt,expected,ref_t", [
    (np.int32, np.int32, tl.float32, np.float32),
    (np.int64, np.int64, tl.float32, np.float32),  # int / int is float32 whatever the width
    (np.uint8, np.uint16, tl.float32, np.float32),
    # / and % on float16 or bfloat16 compute in float32, as PTX has no fp16 division
    (np.float16, np.float16, tl.float32, np.float32),
    (np.float16, np.int32, tl.float32, np.float32),
    (np.float16, np.float32, tl.float32, np.float32),
    (np.float64, np.int32, tl.float64, np.float64),
])
def test_truediv_result_type(rng, xt, yt, expected, ref_t):
    n = 71

    def make(t):
        if np.issubdtype(t, np.integer):
            return nonzero_int(rng, n, t, high=100)
        return nonzero(rng, n, t)

    x, y = make(xt), make(yt)
    out = np.zeros(n, ref_t)
    truediv_kernel[grid1(n, 32)](x, y, out, n, EXPECTED=expected, BLOCK=32)
    assert_quotients(out, x.astype(ref_t) / y.astype(ref_t))


def test_bfloat16_division_is_float32(rng):
    torch = pytest.importorskip("torch")
    n = 71
    x = torch.from_numpy(nonzero(rng, n)).to(torch.bfloat16)
    y = torch.from_numpy(nonzero(rng, n)).to(torch.bfloat16)
    out = torch.zeros(n)
    truediv_kernel[grid1(n, 32)](x, y, out, n, EXPECTED=tl.float32, BLOCK=32)
    assert_quotients(out.numpy(), (x.float() / y.float()).numpy())


@tilec.jit
def rounded_division_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.math.div_rn(x, y), mask=m)
    tl.store(out_ptr + n + offs, tl.fdiv(x, y, ieee_rounding=True), mask=m)


def test_div_rn_and_ieee_fdiv_round_exactly(rng):
    n = 97
    x, y = nonzero(rng, n, high=50.0), nonzero(rng, n)
    out = np.zeros(2 * n, np.float32)
    rounded_division_kernel[(1,)](x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, np.concatenate([x / y, x / y]))


@tilec.jit
def fp16_mod_scalar_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    a = x % 0.75
    b = x / 3.0
    c = x * 3.0
    tl.static_assert(a.dtype == tl.float32)
    tl.static_assert(b.dtype == tl.float32)
    tl.static_assert(c.dtype == tl.float16)
    tl.store(out_ptr + offs, a, mask=m)
    tl.store(out_ptr + n + offs, b, mask=m)
    tl.store(out_ptr + 2 * n + offs, c, mask=m)


def test_float16_mod_and_div_by_scalar_are_float32(rng):
    n = 45
    x = nonzero(rng, n, np.float16, high=8.0)
    out = np.zeros(3 * n, np.float32)
    fp16_mod_scalar_kernel[grid1(n, 16)](x, out, n, BLOCK=16)
    xf = x.astype(np.float32)
    assert_quotients(out, np.concatenate([np.fmod(xf, np.float32(0.75)), xf / np.float32(3.0),
                                          (x * np.float16(3.0)).astype(np.float32)]))


@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_division_with_mixed_signedness_is_an_error(rng, op):
    # Triton refuses /, // and % between signed and unsigned integers
    x = full_range(rng, 16, np.uint32)
    y = nonzero_int(rng, 16, np.int32)
    out = np.zeros(16, np.float32 if op == "/" else np.uint32)
    with pytest.raises(tilec.CompilationError, match="signedness"):
        binary_kernel[(1,)](x, y, out, 16, OP=op, BLOCK=16)


@tilec.jit
def scalar_operand_kernel(x_ptr, out1_ptr, out2_ptr, s, n, OP: tl.constexpr,
                          BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "+":
        a, b = x + s, s + x
    elif OP == "-":
        a, b = x - s, s - x
    elif OP == "*":
        a, b = x * s, s * x
    elif OP == "/":
        a, b = x / s, s / x
    elif OP == "//":
        a, b = x // s, s // x
    elif OP == "%":
        a, b = x % s, s % x
    tl.store(out1_ptr + offs, a, mask=m)
    tl.store(out2_ptr + offs, b, mask=m)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%"])
def test_int32_tensor_with_runtime_scalar(rng, op):
    n = 77
    x = nonzero_int(rng, n, np.int32, high=500)
    s = -7
    sv = np.int32(s)
    refs = {
        "+": (x + sv, sv + x),
        "-": (x - sv, sv - x),
        "*": (x * sv, sv * x),
        "/": (x.astype(np.float32) / np.float32(s), np.float32(s) / x.astype(np.float32)),
        "//": (c_div(x, np.full(n, sv)), c_div(np.full(n, sv), x)),
        "%": (c_mod(x, sv), c_mod(np.full(n, sv), x)),
    }[op]
    out1, out2 = np.zeros(n, refs[0].dtype), np.zeros(n, refs[1].dtype)
    scalar_operand_kernel[grid1(n, 32)](x, out1, out2, s, n, OP=op, BLOCK=32)
    check = assert_quotients if op == "/" else np.testing.assert_array_equal
    check(out1, refs[0])
    check(out2, refs[1])


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
def test_float32_tensor_with_runtime_scalar(rng, op):
    n = 77
    x = nonzero(rng, n)
    s = 2.7  # a float argument is passed as float32
    f = np.float32(s)
    refs = {"+": (x + f, f + x), "-": (x - f, f - x), "*": (x * f, f * x),
            "/": (x / f, f / x), "%": (np.fmod(x, f), np.fmod(f, x))}[op]
    out1, out2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    scalar_operand_kernel[grid1(n, 32)](x, out1, out2, s, n, OP=op, BLOCK=32)
    check = assert_quotients if op == "/" else np.testing.assert_array_equal
    check(out1, refs[0])
    check(out2, refs[1])


@tilec.jit
def scalar_scalar_kernel(iout_ptr, fout_ptr, a, b):
    tl.store(iout_ptr + 0, a + b)
    tl.store(iout_ptr + 1, a - b)
    tl.store(iout_ptr + 2, a * b)
    tl.store(iout_ptr + 3, a // b)
    tl.store(iout_ptr + 4, a % b)
    tl.store(iout_ptr + 5, -a)
    tl.store(fout_ptr, a / b)


@pytest.mark.parametrize("a,b", [(-7, 2), (7, -2), (-7, -2), (23, 5)])
def test_scalar_scalar_int_arithmetic(a, b):
    iout = np.zeros(6, np.int32)
    fout = np.zeros(1, np.float32)
    scalar_scalar_kernel[(1,)](iout, fout, a, b)
    q = int(a / b)  # truncation toward zero
    np.testing.assert_array_equal(iout, [a + b, a - b, a * b, q, a - q * b, -a])
    assert fout[0] == np.float32(a) / np.float32(b)


@tilec.jit
def literal_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = tl.arange(0, 8)[None, :]
    y = tl.where(r == 0, x[:, None] // 3, 0)
    y = tl.where(r == 1, x[:, None] % 3, y)
    y = tl.where(r == 2, x[:, None] // -3, y)
    y = tl.where(r == 3, x[:, None] % -3, y)
    y = tl.where(r == 4, 100 // x[:, None], y)
    y = tl.where(r == 5, 100 % x[:, None], y)
    y = tl.where(r == 6, 2 * x[:, None] - 1, y)
    y = tl.where(r == 7, -x[:, None], y)
    tl.store(out_ptr + offs[:, None] * 8 + r, y, mask=m[:, None])


def test_int32_tensor_with_literals(rng):
    n = 45
    x = nonzero_int(rng, n, np.int32, high=200)
    out = np.zeros((n, 8), np.int32)
    literal_kernel[grid1(n, 16)](x, out, n, BLOCK=16)
    full = lambda v: np.full(n, v, np.int32)  # noqa: E731
    ref = np.stack([c_div(x, full(3)), c_mod(x, full(3)), c_div(x, full(-3)),
                    c_mod(x, full(-3)), c_div(full(100), x), c_mod(full(100), x),
                    2 * x - 1, -x], axis=1)
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "-":
        y = -x
    elif OP == "~":
        y = ~x
    elif OP == "+":
        y = +x
    tl.store(out_ptr + offs, y, mask=m)


@pytest.mark.parametrize("op,dtype", [("-", np.float32), ("-", np.int32), ("-", np.int8),
                                      ("+", np.float32), ("~", np.int32), ("~", np.uint32),
                                      ("~", np.int8)])
def test_unary_ops(rng, op, dtype):
    n = 99
    if np.issubdtype(dtype, np.integer):
        x = full_range(rng, n, dtype)
        if op == "-":
            x = np.where(x == np.iinfo(dtype).min, dtype(1), x).astype(dtype)
    else:
        x = nonzero(rng, n, dtype)
    out = np.zeros_like(x)
    unary_kernel[grid1(n, 32)](x, out, n, OP=op, BLOCK=32)
    ref = {"-": lambda: -x, "+": lambda: x, "~": lambda: ~x}[op]()
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def not_kernel(out_ptr, a, b, flag):
    tl.store(out_ptr + 0, (not flag).to(tl.int32))
    tl.store(out_ptr + 1, (not (a < b)).to(tl.int32))
    if not flag:
        tl.store(out_ptr + 2, 10)
    else:
        tl.store(out_ptr + 2, 20)
    if not (a > b) and flag:
        tl.store(out_ptr + 3, 30)


@pytest.mark.parametrize("a,b,flag", [(3, 5, True), (5, 3, True), (3, 5, False)])
def test_not_on_scalars(a, b, flag):
    out = np.full(4, -1, np.int32)
    not_kernel[(1,)](out, a, b, flag)
    expected = [int(not flag), int(not (a < b)), 10 if not flag else 20,
                30 if (not (a > b) and flag) else -1]
    np.testing.assert_array_equal(out, expected)


@tilec.jit
def not_tensor_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (not (x > 0)).to(tl.int32), mask=m)


def test_not_on_int1_tensor(rng):
    n = 37
    x = nonzero(rng, n)
    out = np.full(n, -1, np.int32)
    not_tensor_kernel[grid1(n, 16)](x, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, (x <= 0).astype(np.int32))


# ----------------------------------------------------------------------------
# comparisons and bitwise ops
# ----------------------------------------------------------------------------

@tilec.jit
def compare_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "<":
        c = x < y
    elif OP == "<=":
        c = x <= y
    elif OP == ">":
        c = x > y
    elif OP == ">=":
        c = x >= y
    elif OP == "==":
        c = x == y
    elif OP == "!=":
        c = x != y
    tl.static_assert(c.dtype == tl.int1)
    tl.store(out_ptr + offs, c.to(tl.int32), mask=m)


COMPARE_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint8, np.uint64,
                                   np.float32, np.float16])
@pytest.mark.parametrize("op", list(COMPARE_OPS))
def test_comparisons(rng, op, dtype):
    n = 131
    if np.issubdtype(dtype, np.unsignedinteger):
        half = dtype(2 ** (8 * np.dtype(dtype).itemsize - 1))
        x = rng.integers(0, 6, size=n).astype(dtype) + half - dtype(3)  # crosses the sign bit
    elif np.issubdtype(dtype, np.integer):
        x = nonzero_int(rng, n, dtype, high=4)
    else:
        x = (nonzero_int(rng, n, np.int32, high=4) * 0.5).astype(dtype)
    y = np.where(rng.random(n) < 0.3, x, rng.permutation(x)).astype(dtype)  # many ties
    out = np.full(n, -1, np.int32)
    compare_kernel[grid1(n, 64)](x, y, out, n, OP=op, BLOCK=64)
    np.testing.assert_array_equal(out, COMPARE_OPS[op](x, y).astype(np.int32))


@tilec.jit
def chained_compare_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (a < b < c).to(tl.int32), mask=m)


def test_chained_comparison(rng):
    n = 157
    a, b, c = (nonzero_int(rng, n, np.int32, high=3) for _ in range(3))
    out = np.full(n, -1, np.int32)
    chained_compare_kernel[grid1(n, 64)](a, b, c, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, ((a < b) & (b < c)).astype(np.int32))


@tilec.jit
def bitwise_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == ">> 5":
        z = x >> 5
    elif OP == "<< 3":
        z = x << 3
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint8, np.int64,
                                   np.uint64])
@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>", ">> 5", "<< 3"])
def test_bitwise(rng, op, dtype):
    n = 111
    bits = np.dtype(dtype).itemsize * 8
    x = full_range(rng, n, dtype)
    if op in ("<<", ">>"):
        y = rng.integers(1, bits, size=n).astype(dtype)
    else:
        y = full_range(rng, n, dtype)
    out = np.zeros(n, dtype)
    bitwise_kernel[grid1(n, 32)](x, y, out, n, OP=op, BLOCK=32)
    # numpy's >> is arithmetic for signed and logical for unsigned types, as in Triton
    ref = {"&": lambda: x & y, "|": lambda: x | y, "^": lambda: x ^ y,
           "<<": lambda: x << y, ">>": lambda: x >> y,
           ">> 5": lambda: x >> dtype(5), "<< 3": lambda: x << dtype(3)}[op]()
    np.testing.assert_array_equal(out, ref.astype(dtype))


@tilec.jit
def logical_mask_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    c = ((x > 0) & (x < 1.0)) | ~(x > -1.5) ^ (x == x)
    tl.store(out_ptr + offs, c.to(tl.int32), mask=m)


def test_bitwise_ops_on_int1(rng):
    n = 91
    x = nonzero(rng, n)
    out = np.full(n, -1, np.int32)
    logical_mask_kernel[grid1(n, 32)](x, out, n, BLOCK=32)
    ref = ((x > 0) & (x < 1.0)) | (~(x > -1.5) ^ (x == x))
    np.testing.assert_array_equal(out, ref.astype(np.int32))


# ----------------------------------------------------------------------------
# type promotion and casts
# ----------------------------------------------------------------------------

@tilec.jit
def promote_kernel(x_ptr, y_ptr, out_ptr, n, EXPECTED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = x + y
    tl.static_assert(z.dtype == EXPECTED)
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("xt,yt,expected,ref_t", [
    (np.float16, np.float32, tl.float32, np.float32),
    (np.float32, np.float64, tl.float64, np.float64),
    (np.int8, np.int32, tl.int32, np.int32),
    (np.int16, np.int8, tl.int16, np.int16),
    (np.uint32, np.int32, tl.uint32, np.uint32),  # same width: unsigned wins
    (np.uint8, np.int32, tl.int32, np.int32),  # wider signed wins
    (np.int32, np.float16, tl.float16, np.float16),
    (np.int64, np.int32, tl.int64, np.int64),
])
def test_tensor_tensor_promotion(rng, xt, yt, expected, ref_t):
    n = 75

    def make(t):
        if np.issubdtype(t, np.integer):
            return full_range(rng, n, t) if t != np.int32 else nonzero_int(rng, n, t, 1000)
        return nonzero(rng, n, t)

    x, y = make(xt), make(yt)
    out = np.zeros(n, ref_t)
    promote_kernel[grid1(n, 32)](x, y, out, n, EXPECTED=expected, BLOCK=32)
    with np.errstate(over="ignore"):
        ref = x.astype(ref_t) + y.astype(ref_t)
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def literal_promote_kernel(x_ptr, out_ptr, n, LIT: tl.constexpr, EXPECTED: tl.constexpr,
                           BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if LIT == "1":
        z = x + 1
    elif LIT == "1.5":
        z = x + 1.5
    elif LIT == "*3":
        z = x * 3
    tl.static_assert(z.dtype == EXPECTED)
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("xt,lit,expected,ref", [
    # an int32 tensor plus a Python float is float32
    (np.int32, "1.5", tl.float32, lambda x: x.astype(np.float32) + np.float32(1.5)),
    # a Python int does not widen the tensor: int8 + 1 stays int8 and wraps
    (np.int8, "1", tl.int8, lambda x: x + np.int8(1)),
    (np.uint8, "1", tl.uint8, lambda x: x + np.uint8(1)),
    (np.int8, "*3", tl.int8, lambda x: x * np.int8(3)),
    # a Python float does not widen a float16 tensor either
    (np.float16, "1.5", tl.float16, lambda x: x + np.float16(1.5)),
    (np.float32, "1", tl.float32, lambda x: x + np.float32(1)),
])
def test_tensor_literal_promotion(rng, xt, lit, expected, ref):
    n = 300
    if np.issubdtype(xt, np.integer):
        x = full_range(rng, n, xt)
        x[:3] = np.iinfo(xt).max  # must wrap
    else:
        x = nonzero(rng, n, xt)
    out = np.zeros(n, np.dtype(ref(x[:1]).dtype))
    literal_promote_kernel[grid1(n, 128)](x, out, n, LIT=lit, EXPECTED=expected, BLOCK=128)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, ref(x))


@tilec.jit
def scalar_promote_kernel(x_ptr, out_ptr, n, s, C: tl.constexpr, EXPECTED: tl.constexpr,
                          WITH_RUNTIME: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if WITH_RUNTIME:
        z = x + s  # a runtime scalar takes part in the promotion like a tensor
    else:
        z = x + C  # a constexpr behaves like a literal
    tl.static_assert(z.dtype == EXPECTED)
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("xt,s,runtime,expected,ref_t", [
    (np.int8, 3, True, tl.int32, np.int32),
    (np.int8, 3, False, tl.int8, np.int8),
    (np.float16, 0.5, True, tl.float32, np.float32),
    (np.float16, 0.5, False, tl.float16, np.float16),
    (np.int32, 0.5, True, tl.float32, np.float32),
])
def test_runtime_scalar_vs_constexpr_promotion(rng, xt, s, runtime, expected, ref_t):
    n = 130
    if np.issubdtype(xt, np.integer):
        x = full_range(rng, n, xt)
        x[:2] = np.iinfo(xt).max
    else:
        x = nonzero(rng, n, xt)
    out = np.zeros(n, ref_t)
    scalar_promote_kernel[grid1(n, 64)](x, out, n, s, C=s, EXPECTED=expected,
                                        WITH_RUNTIME=runtime, BLOCK=64)
    np.testing.assert_array_equal(out, x.astype(ref_t) + np.array(s).astype(ref_t))


@tilec.jit
def literal_compare_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (x < 1.5).to(tl.int32), mask=m)  # compares as float
    tl.store(out_ptr + n + offs, (x == 2).to(tl.int32), mask=m)
    tl.store(out_ptr + 2 * n + offs, (-0.5 >= x).to(tl.int32), mask=m)


def test_int_tensor_compared_with_literals(rng):
    n = 50
    x = nonzero_int(rng, n, np.int32, high=3)
    out = np.zeros(3 * n, np.int32)
    literal_compare_kernel[grid1(n, 32)](x, out, n, BLOCK=32)
    ref = np.concatenate([x < 1.5, x == 2, -0.5 >= x]).astype(np.int32)
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def cast_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BITCAST: tl.constexpr,
                USE_FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if USE_FN:
        y = tl.cast(x, DTYPE, bitcast=BITCAST)
    else:
        y = x.to(DTYPE, bitcast=BITCAST)
    tl.static_assert(y.dtype == DTYPE)
    tl.store(out_ptr + offs, y, mask=m)


def _f16_ties(rng, n):
    """float32 values exactly half way between two adjacent float16 values."""
    lo = nonzero(rng, n, np.float16)
    hi = np.nextafter(lo, np.float16(np.inf))
    return (lo.astype(np.float32) + hi.astype(np.float32)) / 2


def _f64_just_above_f16_ties(rng, n):
    """float64 values a hair above the midpoint between two float16 values whose lower
    one is even: rounding once gives the upper one, rounding via float32 the lower."""
    lo = nonzero(rng, n, np.float16)
    lo = (lo.view(np.uint16) & np.uint16(0xFFFE)).view(np.float16)
    hi = np.nextafter(lo, np.float16(np.inf) * np.sign(lo))
    lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
    return (lo64 + hi64) / 2 + (hi64 - lo64) * 2.0**-20


def _int_just_above_f32_ties(rng, n, dtype=np.int64):
    """64-bit integers a hair above the midpoint between two float32 values with an even
    lower one: rounding once goes up, rounding via float64 goes down."""
    shift = 37 if dtype == np.int64 else 40  # values in [2**60, 2**61) or [2**63, 2**64)
    k = (rng.integers(2**23, 2**24, size=n) & ~1).astype(dtype)  # even 24-bit mantissas
    # k << shift is exact in float32; 1 << (shift - 1) is half an ulp
    return (k << dtype(shift)) + dtype(1 << (shift - 1)) + dtype(1)


CAST_CASES = {
    # name: (make input, tl dtype, reference)
    "f32->i32": (lambda r, n: nonzero(r, n, high=300.0), tl.int32,
                 lambda x: np.trunc(x).astype(np.int32)),
    "f32->i8": (lambda r, n: nonzero(r, n, high=120.0), tl.int8,
                lambda x: np.trunc(x).astype(np.int8)),
    "f32->u8": (lambda r, n: np.abs(nonzero(r, n, high=250.0)), tl.uint8,
                lambda x: np.trunc(x).astype(np.uint8)),
    "f64->i64": (lambda r, n: nonzero(r, n, np.float64, high=1e12), tl.int64,
                 lambda x: np.trunc(x).astype(np.int64)),
    "f32->u32 big": (lambda r, n: r.uniform(2**31, 2**32 - 256, n).astype(np.float32),
                     tl.uint32, lambda x: x.astype(np.uint32)),
    "f64->u64 big": (lambda r, n: r.uniform(2**63, 2**64 - 4096, n), tl.uint64,
                     lambda x: x.astype(np.uint64)),
    "u64->f64 big": (lambda r, n: r.integers(2**63, 2**64 - 1, n, dtype=np.uint64,
                                             endpoint=True), tl.float64,
                     lambda x: x.astype(np.float64)),
    "u8->f32": (lambda r, n: full_range(r, n, np.uint8), tl.float32,
                lambda x: x.astype(np.float32)),
    "i32->f32": (lambda r, n: nonzero_int(r, n, np.int32, high=2**30), tl.float32,
                 lambda x: x.astype(np.float32)),
    "i64->f64": (lambda r, n: nonzero_int(r, n, np.int64, high=2**62), tl.float64,
                 lambda x: x.astype(np.float64)),
    "u32->f32": (lambda r, n: full_range(r, n, np.uint32), tl.float32,
                 lambda x: x.astype(np.float32)),
    "i8->f16": (lambda r, n: full_range(r, n, np.int8), tl.float16,
                lambda x: x.astype(np.float16)),
    "f32->f16": (lambda r, n: nonzero(r, n, high=1000.0), tl.float16,
                 lambda x: x.astype(np.float16)),
    "f32->f16 ties": (_f16_ties, tl.float16, lambda x: x.astype(np.float16)),
    "f32->f16 overflow": (lambda r, n: nonzero(r, n, low=6e4, high=1e5), tl.float16,
                          lambda x: x.astype(np.float16)),
    "f32->f16 subnormal": (lambda r, n: nonzero(r, n, low=1e-8, high=6e-5), tl.float16,
                           lambda x: x.astype(np.float16)),
    "f64->f16 single rounding": (_f64_just_above_f16_ties, tl.float16,
                                 lambda x: x.astype(np.float16)),
    "i64->f32 single rounding": (_int_just_above_f32_ties, tl.float32,
                                 lambda x: x.astype(np.float32)),
    "u64->f32 single rounding": (lambda r, n: _int_just_above_f32_ties(r, n, np.uint64),
                                 tl.float32, lambda x: x.astype(np.float32)),
    "f16->f32": (lambda r, n: nonzero(r, n, np.float16), tl.float32,
                 lambda x: x.astype(np.float32)),
    "f64->f32": (lambda r, n: nonzero(r, n, np.float64), tl.float32,
                 lambda x: x.astype(np.float32)),
    "f32->f64": (lambda r, n: nonzero(r, n), tl.float64, lambda x: x.astype(np.float64)),
    "i32->i8": (lambda r, n: full_range(r, n, np.int32), tl.int8,
                lambda x: x.astype(np.int8)),
    "i8->i32": (lambda r, n: full_range(r, n, np.int8), tl.int32,
                lambda x: x.astype(np.int32)),
    "u8->i32": (lambda r, n: full_range(r, n, np.uint8), tl.int32,
                lambda x: x.astype(np.int32)),
    "i8->u32": (lambda r, n: full_range(r, n, np.int8), tl.uint32,
                lambda x: x.astype(np.uint32)),  # sign-extends, then reinterprets
    "i32->i64": (lambda r, n: full_range(r, n, np.int32), tl.int64,
                 lambda x: x.astype(np.int64)),
    "u32->u64": (lambda r, n: full_range(r, n, np.uint32), tl.uint64,
                 lambda x: x.astype(np.uint64)),
    "i64->i16": (lambda r, n: full_range(r, n, np.int64), tl.int16,
                 lambda x: x.astype(np.int16)),
}


@pytest.mark.parametrize("use_fn", [False, True], ids=["to", "tl.cast"])
@pytest.mark.parametrize("case", list(CAST_CASES))
def test_cast(rng, case, use_fn):
    make, dtype, ref_fn = CAST_CASES[case]
    n = 257
    x = make(rng, n)
    with np.errstate(over="ignore"):
        ref = ref_fn(x)
    out = np.zeros(n, ref.dtype)
    cast_kernel[grid1(n, 64)](x, out, n, DTYPE=dtype, BITCAST=False, USE_FN=use_fn, BLOCK=64)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("src,dst,tl_dst", [
    (np.float32, np.int32, tl.int32), (np.int32, np.float32, tl.float32),
    (np.float16, np.int16, tl.int16), (np.float32, np.uint32, tl.uint32),
    (np.float64, np.int64, tl.int64), (np.int8, np.uint8, tl.uint8),
])
@pytest.mark.parametrize("use_fn", [False, True], ids=["to", "tl.cast"])
def test_bitcast(rng, src, dst, tl_dst, use_fn):
    n = 67
    if np.issubdtype(src, np.floating):
        x = nonzero(rng, n, src)
    else:
        # random bit patterns that are finite when read as floats
        x = nonzero(rng, n, dst).view(src) if np.issubdtype(dst, np.floating) \
            else full_range(rng, n, src)
    out = np.zeros(n, dst)
    cast_kernel[grid1(n, 32)](x, out, n, DTYPE=tl_dst, BITCAST=True, USE_FN=use_fn, BLOCK=32)
    np.testing.assert_array_equal(out, x.view(dst))


@pytest.mark.parametrize("src", [np.float32, np.int32, np.uint8, np.float16])
def test_cast_to_int1(rng, src):
    n = 101
    x = (nonzero(rng, n, src) if np.issubdtype(src, np.floating)
         else nonzero_int(rng, n, src, high=3))
    x[rng.random(n) < 0.3] = 0
    if np.issubdtype(src, np.floating):
        x[:2] = [0.25, -0.125]  # non-zero fractions are true, not truncated to 0
    out = np.zeros(n, np.bool_)
    cast_kernel[grid1(n, 32)](x, out, n, DTYPE=tl.int1, BITCAST=False, USE_FN=False, BLOCK=32)
    np.testing.assert_array_equal(out, x != 0)


def test_cast_float32_to_bfloat16_rounds_to_nearest_even(rng):
    torch = pytest.importorskip("torch")
    n = 300
    x = nonzero(rng, n, high=1000.0)
    # every third value lies exactly half way between two bfloat16 values
    bits = x.view(np.uint32)
    bits[::3] = (bits[::3] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    xt = torch.from_numpy(x)
    out = torch.zeros(n, dtype=torch.bfloat16)
    cast_kernel[grid1(n, 64)](xt, out, n, DTYPE=tl.bfloat16, BITCAST=False, USE_FN=False,
                              BLOCK=64)
    assert torch.equal(out.view(torch.int16), xt.to(torch.bfloat16).view(torch.int16))


def test_cast_bfloat16_to_float32(rng):
    torch = pytest.importorskip("torch")
    n = 99
    x = torch.from_numpy(nonzero(rng, n)).to(torch.bfloat16)
    out = torch.zeros(n, dtype=torch.float32)
    cast_kernel[grid1(n, 64)](x, out, n, DTYPE=tl.float32, BITCAST=False, USE_FN=True,
                              BLOCK=64)
    assert torch.equal(out, x.to(torch.float32))


# ----------------------------------------------------------------------------
# scalar kernel arguments
# ----------------------------------------------------------------------------

@tilec.jit
def scalar_args_kernel(x_ptr, out_ptr, n, i, f, flag, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = x * f + i
    if flag:
        y = -y
    tl.store(out_ptr + offs, y, mask=m)


@pytest.mark.parametrize("i,f,flag", [(3, 0.1, False), (-5, 2.5, True), (1, -0.3, True),
                                      (2**31 + 5, 0.5, False)])
def test_scalar_args(rng, i, f, flag):
    n = 53
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    k = scalar_args_kernel[grid1(n, 16)](x, out, n, i, f, flag, BLOCK=16)
    # float arguments are float32, int arguments i32 (or i64 when they do not fit)
    ref = x * np.float32(f) + np.float32(i)
    np.testing.assert_array_equal(out, -ref if flag else ref)
    if i == 1:
        assert k.spec[3] == ("constexpr", 1)  # an int equal to 1 is specialized
    else:
        assert k.spec[3][0] == "int"
    assert k.spec[5] == ("bool",)


@tilec.jit
def stride_one_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=m) + stride, mask=m)


@pytest.mark.parametrize("stride", [1, 2])
def test_int_arg_equal_to_one_is_constexpr(rng, stride):
    n = 41
    x = nonzero(rng, n * stride)
    out = np.zeros(n, np.float32)
    k = stride_one_kernel[grid1(n, 16)](x, out, n, stride, BLOCK=16)
    np.testing.assert_array_equal(out, x[::stride] + stride)
    assert (k.spec[3] == ("constexpr", 1)) == (stride == 1)


# ----------------------------------------------------------------------------
# element-wise functions
# ----------------------------------------------------------------------------

@tilec.jit
def where_kernel(x_ptr, y_ptr, out_ptr, n, CASE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if CASE == "tensors":
        z = tl.where(x > y, x, y)
    elif CASE == "scalar else":
        z = tl.where(x > 0, x, 0.0)
    elif CASE == "scalar then":
        z = tl.where(x > 0, -1, y)
    elif CASE == "both scalars":
        z = tl.where(x > y, 1.0, -2.0)
    elif CASE == "scalar cond":
        z = tl.where(n > 10, x, y)
    elif CASE == "int cond":
        z = tl.where((x > 0).to(tl.int32) * 7, x, y)  # non-zero means true
    tl.store(out_ptr + offs, z, mask=m)


@pytest.mark.parametrize("case,ref", [
    ("tensors", lambda x, y: np.where(x > y, x, y)),
    ("scalar else", lambda x, y: np.where(x > 0, x, 0)),
    ("scalar then", lambda x, y: np.where(x > 0, -1, y)),
    ("both scalars", lambda x, y: np.where(x > y, 1.0, -2.0)),
    ("scalar cond", lambda x, y: x),
    ("int cond", lambda x, y: np.where(x > 0, x, y)),
])
def test_where(rng, case, ref):
    n = 83
    x, y = nonzero(rng, n), nonzero(rng, n)
    out = np.zeros(n, np.float32)
    where_kernel[grid1(n, 32)](x, y, out, n, CASE=case, BLOCK=32)
    np.testing.assert_array_equal(out, ref(x, y).astype(np.float32))


@tilec.jit
def min_max_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.maximum(x, y), mask=m)
    tl.store(out_ptr + n + offs, tl.minimum(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.maximum(x, 1), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.minimum(x, -1), mask=m)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.float16])
def test_maximum_minimum(rng, dtype):
    n = 77
    if np.issubdtype(dtype, np.integer):
        x, y = full_range(rng, n, dtype), full_range(rng, n, dtype)
    else:
        x, y = nonzero(rng, n, dtype), nonzero(rng, n, dtype)
    out = np.zeros(4 * n, dtype)
    min_max_kernel[grid1(n, 32)](x, y, out, n, BLOCK=32)
    one, minus_one = np.array(1).astype(dtype), np.array(-1).astype(dtype)
    ref = np.concatenate([np.maximum(x, y), np.minimum(x, y), np.maximum(x, one),
                          np.minimum(x, minus_one)])
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def math_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "exp":
        y = tl.exp(x)
    elif OP == "exp2":
        y = tl.exp2(x)
    elif OP == "log":
        y = tl.log(x)
    elif OP == "log2":
        y = tl.log2(x)
    elif OP == "sqrt":
        y = tl.sqrt(x)
    elif OP == "rsqrt":
        y = tl.rsqrt(x)
    elif OP == "abs":
        y = tl.abs(x)
    elif OP == "sin":
        y = tl.sin(x)
    elif OP == "cos":
        y = tl.cos(x)
    elif OP == "floor":
        y = tl.floor(x)
    elif OP == "ceil":
        y = tl.ceil(x)
    elif OP == "erf":
        y = tl.erf(x)
    elif OP == "sigmoid":
        y = tl.sigmoid(x)
    tl.static_assert(y.dtype == x.dtype)
    tl.store(out_ptr + offs, y, mask=m)


_erf = np.vectorize(math.erf)

MATH_OPS = {
    # name: (reference in float64, input needs to be positive)
    "exp": (np.exp, False),
    "exp2": (np.exp2, False),
    "log": (np.log, True),
    "log2": (np.log2, True),
    "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True),
    "abs": (np.abs, False),
    "sin": (np.sin, False),
    "cos": (np.cos, False),
    "floor": (np.floor, False),
    "ceil": (np.ceil, False),
    "erf": (_erf, False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), False),
}


@pytest.mark.parametrize("op", list(MATH_OPS))
def test_math_float32(rng, op):
    fn, positive = MATH_OPS[op]
    n = 301
    x = nonzero(rng, n, low=0.01, high=6.0)
    if positive:
        x = np.abs(x)
    out = np.zeros(n, np.float32)
    math_kernel[grid1(n, 128)](x, out, n, OP=op, BLOCK=128)
    ref = fn(x.astype(np.float64))
    if op in ("abs", "floor", "ceil"):
        np.testing.assert_array_equal(out, ref.astype(np.float32))
    else:
        np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["log", "log2"])
def test_log_float32_over_every_binade_and_at_special_values(rng, op):
    fn, _ = MATH_OPS[op]
    tiny = np.finfo(np.float32).tiny
    special = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, tiny, tiny / 2, -tiny / 4,
                        1e-45, -1e-45, np.finfo(np.float32).max, 1.0, 2.0, 0.5, 1 - 2**-24,
                        1 + 2**-23], np.float32)
    wide = np.exp(rng.uniform(-103, 88.7, 2000)).astype(np.float32)  # subnormals to near max
    x = np.concatenate([special, wide, rng.uniform(0.6, 1.5, 997).astype(np.float32)])
    n = len(x)
    out = np.zeros(n, np.float32)
    math_kernel[grid1(n, 128)](x, out, n, OP=op, BLOCK=128)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = fn(x.astype(np.float64))
    # within 2 ulp of the exact result; zeros, negatives, inf and nan as numpy's
    np.testing.assert_allclose(out, ref, rtol=2.4e-7, atol=0, equal_nan=True)


@pytest.mark.parametrize("op", ["exp", "sqrt", "sin", "floor", "abs", "log", "cos", "erf", "exp2",
                                "log2"])
def test_math_float64(rng, op):
    fn, positive = MATH_OPS[op]
    n = 37
    x = nonzero(rng, n, np.float64, low=0.01, high=6.0)
    if positive:
        x = np.abs(x)
    out = np.zeros(n, np.float64)
    math_kernel[grid1(n, 16)](x, out, n, OP=op, BLOCK=16)
    np.testing.assert_allclose(out, fn(x), rtol=1e-14, atol=0)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "sigmoid", "floor", "abs"])
def test_math_float16(rng, op):
    fn, positive = MATH_OPS[op]
    n = 67
    x = nonzero(rng, n, np.float16, low=0.01, high=4.0)
    if positive:
        x = np.abs(x)
    out = np.zeros(n, np.float16)
    math_kernel[grid1(n, 32)](x, out, n, OP=op, BLOCK=32)
    # float16 results within an ulp of the exact value
    np.testing.assert_allclose(out.astype(np.float64), fn(x.astype(np.float64)),
                               rtol=1e-3, atol=1e-4)


@tilec.jit
def math2_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    if OP == "pow":
        z = tl.math.pow(x, y)
    elif OP == "atan2":
        z = tl.math.atan2(x, y)
    else:
        z = tl.math.tanh(x)
    tl.store(out_ptr + offs, z, mask=m)


MATH2_REFS = {"pow": np.power, "atan2": np.arctan2, "tanh": lambda x, y: np.tanh(x)}


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("op", list(MATH2_REFS))
def test_pow_atan2_tanh(rng, op, dtype, rtol):
    n = 203
    x = nonzero(rng, n, dtype, low=0.01, high=3.0)
    y = nonzero(rng, n, dtype, low=0.01, high=3.0)
    if op == "pow":  # negative bases with integer exponents, positive bases with any
        y = np.where(x < 0, np.round(y * 2), y).astype(dtype)
    out = np.zeros(n, dtype)
    math2_kernel[grid1(n, 64)](x, y, out, n, OP=op, BLOCK=64)
    ref = MATH2_REFS[op](x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol / 10)


def test_abs_int32(rng):
    n = 55
    x = nonzero_int(rng, n, np.int32, high=2**30)
    out = np.zeros(n, np.int32)
    math_kernel[grid1(n, 16)](x, out, n, OP="abs", BLOCK=16)
    np.testing.assert_array_equal(out, np.abs(x))


@tilec.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.fma(x, y, z), mask=m)


def test_fma_rounds_once():
    # x * y + z = (2**30 + 2**7) + 2**6 - 2**-40: just below the midpoint between two
    # float32 values, so it rounds down. Rounding x * y + z to float64 first gives the
    # midpoint exactly, which then rounds to even: up.
    x = np.array([8 + 2.0**-20] * 3, np.float32)
    y = np.array([8 - 2.0**-20] * 3, np.float32)
    z = np.array([2.0**30 + 2.0**7] * 3, np.float32)
    out = np.zeros(3, np.float32)
    fma_kernel[(1,)](x, y, z, out, 3, BLOCK=4)
    np.testing.assert_array_equal(out, z)


def test_fma(rng):
    n = 97
    x, y, z = nonzero(rng, n), nonzero(rng, n), nonzero(rng, n)
    out = np.zeros(n, np.float32)
    fma_kernel[grid1(n, 32)](x, y, z, out, n, BLOCK=32)
    ref = x.astype(np.float64) * y + z  # the product is exact in float64
    np.testing.assert_allclose(out, ref, rtol=1.2e-7, atol=1e-7)


@tilec.jit
def cdiv_kernel(x_ptr, out_ptr, n, d, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.cdiv(x, 4), mask=m)
    tl.store(out_ptr + n + offs, tl.cdiv(x, d), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.cdiv(n, d) + 0 * x, mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.cdiv(n, BLOCK) + 0 * x, mask=m)


def test_cdiv(rng):
    n, d = 61, 7
    x = nonzero_int(rng, n, np.int32, high=1000)
    x = np.abs(x)
    out = np.zeros(4 * n, np.int32)
    cdiv_kernel[grid1(n, 16)](x, out, n, d, BLOCK=16)
    ref = np.concatenate([-(-x // 4), -(-x // d), np.full(n, -(-n // d)),
                          np.full(n, -(-n // 16))])
    np.testing.assert_array_equal(out, ref)


# ----------------------------------------------------------------------------
# reductions and scans
# ----------------------------------------------------------------------------

@tilec.jit
def reduce_kernel(x_ptr, out_ptr, M, N, OP: tl.constexpr, AXIS: tl.constexpr,
                  KEEP: tl.constexpr, NEUTRAL: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=NEUTRAL)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    tl.static_assert(r.dtype == x.dtype)
    if KEEP:
        # keep_dims gives a 2-D result that broadcasts back over the tile
        tl.static_assert(len(r.shape) == 2)
        tl.store(out_ptr + rm[:, None] * BN + rn[None, :], tl.broadcast_to(r, (BM, BN)))
    elif AXIS == 0:
        tl.store(out_ptr + rn, r, mask=rn < N)
    elif AXIS == 1:
        tl.store(out_ptr + rm, r, mask=rm < M)
    else:
        tl.store(out_ptr, r)


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("op,dtype", [("sum", np.float32), ("sum", np.int32),
                                      ("max", np.float32), ("min", np.float32),
                                      ("max", np.int32), ("min", np.int32)])
def test_reduce_2d(rng, op, dtype, axis, keep):
    M, N, BM, BN = 13, 29, 16, 32
    if dtype == np.int32:
        x = nonzero_int(rng, (M, N), dtype, high=10**6)
        neutral = {"sum": 0, "max": -2**31, "min": 2**31 - 1}[op]
    else:
        x = nonzero(rng, (M, N), dtype)
        neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[op]
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[op](
        x.astype(np.float64) if op == "sum" else x, axis=axis, keepdims=keep)
    if keep:
        # the kernel stores the reduction broadcast over the whole block
        if axis == 0:
            ref = np.broadcast_to(ref, (BM, N))
        elif axis == 1:
            ref = np.broadcast_to(ref, (M, BN))
        else:
            ref = np.broadcast_to(ref, (BM, BN))
        out = np.zeros((BM, BN), dtype)
    else:
        ref = np.asarray(ref).reshape(-1)
        out = np.zeros(ref.shape, dtype)
    reduce_kernel[(1,)](x, out, M, N, OP=op, AXIS=axis, KEEP=keep, NEUTRAL=neutral,
                        BM=BM, BN=BN)
    if keep:
        out = out[:ref.shape[0], :ref.shape[1]]
    if dtype == np.float32 and op == "sum":
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(out, ref.astype(dtype))


@tilec.jit
def reduce_1d_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(x_ptr + r, mask=m, other=0.0)
    tl.store(out_ptr + 0, tl.sum(x))
    tl.store(out_ptr + 1, tl.max(tl.where(m, x, float("-inf")), axis=0))
    tl.store(out_ptr + 2, tl.min(tl.where(m, x, float("inf")), 0))
    tl.store(out_ptr + 3, x.sum(axis=0))  # the method form


def test_reduce_1d(rng):
    n = 301
    x = nonzero(rng, n)
    out = np.zeros(4, np.float32)
    reduce_1d_kernel[(1,)](x, out, n, BLOCK=512)
    s = x.astype(np.float64).sum()
    np.testing.assert_allclose(out, [s, x.max(), x.min(), s], rtol=1e-5)


@tilec.jit
def unsigned_reduce_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0)
    tl.store(out_ptr + 0, tl.max(x, axis=0))
    tl.store(out_ptr + 1, tl.min(tl.where(r < n, x, tl.full((BLOCK,), -1, x.dtype)), axis=0))
    tl.store(out_ptr + 2, tl.argmax(x, axis=0).to(tl.uint32))
    tl.store(out_ptr + 3, tl.sum(x, axis=0))  # wraps around


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_reduce_unsigned(rng, dtype):
    n = 100
    x = full_range(rng, n, dtype)
    x[7] = np.iinfo(dtype).max  # the maximum looks like -1 when read as signed
    out = np.zeros(4, dtype)
    unsigned_reduce_kernel[(1,)](x, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, [x.max(), x.min(), x.argmax(), x.sum(dtype=dtype)])


@tilec.jit
def small_int_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0)
    tl.store(out_ptr + 0, tl.sum(x, axis=0))  # int8 sums accumulate in int32
    tl.store(out_ptr + 1, tl.sum((x > 0) & (r < n), axis=0))  # counts the true values


def test_sum_of_int8_and_int1(rng):
    n = 200
    x = np.abs(full_range(rng, n, np.int8)).astype(np.int8)
    x[x < 0] = 127  # abs(-128)
    x[::3] *= -1
    out = np.zeros(2, np.int32)
    small_int_sum_kernel[(1,)](x, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, [x.astype(np.int32).sum(), (x > 0).sum()])


@tilec.jit
def argminmax_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    hi = tl.where(mask, x, float("-inf"))
    lo = tl.where(mask, x, float("inf"))
    amax1 = tl.argmax(hi, axis=1)
    amin1 = tl.argmin(lo, axis=1)
    amax0 = tl.argmax(hi, axis=0)
    amin0 = tl.argmin(lo, axis=0)
    tl.static_assert(amax1.dtype == tl.int32)
    tl.store(out_ptr + rm, amax1, mask=rm < M)
    tl.store(out_ptr + M + rm, amin1, mask=rm < M)
    tl.store(out_ptr + 2 * M + rn, amax0, mask=rn < N)
    tl.store(out_ptr + 2 * M + N + rn, amin0, mask=rn < N)


def test_argmax_argmin(rng):
    M, N = 11, 27
    x = nonzero(rng, (M, N))
    out = np.full(2 * M + 2 * N, -1, np.int32)
    argminmax_kernel[(1,)](x, out, M, N, BM=16, BN=32)
    ref = np.concatenate([x.argmax(1), x.argmin(1), x.argmax(0), x.argmin(0)])
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def argmax_1d_ties_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=-1000)
    tl.store(out_ptr, tl.argmax(x, axis=0))
    tl.store(out_ptr + 1, tl.argmin(tl.where(r < n, x, 1000), axis=0))


def test_argmax_1d_ties_pick_first(rng):
    n = 45
    x = nonzero_int(rng, n, np.int32, high=3)  # many ties
    out = np.zeros(2, np.int32)
    argmax_1d_ties_kernel[(1,)](x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, [x.argmax(), x.argmin()])


@tilec.jit
def cumsum_kernel(x_ptr, y_ptr, out1_ptr, out2_ptr, n, M, N, BLOCK: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0.0)
    tl.store(out1_ptr + r, tl.cumsum(x, axis=0), mask=r < n)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    y = tl.load(y_ptr + offs, mask=mask, other=0)
    c1 = tl.cumsum(y, axis=1)
    c0 = tl.cumsum(y, axis=0)
    tl.store(out2_ptr + offs, c1, mask=mask)
    tl.store(out2_ptr + M * N + offs, c0, mask=mask)
    tl.store(out2_ptr + 2 * M * N + offs, tl.cumsum(y, axis=1, reverse=True), mask=mask)


def test_cumsum(rng):
    n, M, N = 200, 7, 13
    x = nonzero(rng, n)
    y = nonzero_int(rng, (M, N), np.int32, high=1000)
    out1 = np.zeros(n, np.float32)
    out2 = np.zeros((3, M, N), np.int32)
    cumsum_kernel[(1,)](x, y, out1, out2, n, M, N, BLOCK=256, BM=8, BN=16)
    np.testing.assert_allclose(out1, np.cumsum(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out2[0], np.cumsum(y, axis=1))
    np.testing.assert_array_equal(out2[1], np.cumsum(y, axis=0))
    np.testing.assert_array_equal(out2[2], np.cumsum(y[:, ::-1], axis=1)[:, ::-1])


# ----------------------------------------------------------------------------
# shapes: indexing with None, reshape, transpose, broadcast, creation
# ----------------------------------------------------------------------------

@tilec.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm, mask=rm < M)
    y = tl.load(y_ptr + rn, mask=rn < N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], x[:, None] * y[None, :] - x[:, None],
             mask=mask)


def test_none_indexing_outer_product(rng):
    M, N = 9, 21
    x, y = nonzero(rng, M), nonzero(rng, N)
    out = np.zeros((M, N), np.float32)
    outer_kernel[(1,)](x, y, out, M, N, BM=16, BN=32)
    np.testing.assert_array_equal(out, x[:, None] * y[None, :] - x[:, None])


@tilec.jit
def reshape_kernel(x_ptr, out_ptr, sums_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    y = tl.reshape(x, (4, 16))
    tl.store(sums_ptr + tl.arange(0, 4), tl.sum(y, axis=1))
    z = tl.reshape(y, 2, 32)  # shape given as separate ints
    r2 = tl.arange(0, 2)[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(out_ptr + r2, z * 2)


def test_reshape(rng):
    x = nonzero_int(rng, 64, np.int32)
    out = np.zeros(64, np.int32)
    sums = np.zeros(4, np.int32)
    reshape_kernel[(1,)](x, out, sums)
    np.testing.assert_array_equal(sums, x.reshape(4, 16).sum(axis=1))
    np.testing.assert_array_equal(out, x * 2)


@tilec.jit
def transpose_kernel(x_ptr, out_ptr, M, N, HOW: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :],
                mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    if HOW == "trans":
        y = tl.trans(x)
    elif HOW == "permute":
        y = tl.permute(x, (1, 0))
    elif HOW == ".T":
        y = x.T
    elif HOW == "method":
        y = x.trans()
    # y is (BN, BM): out is the transposed (N, M) array
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], y,
             mask=(rn[:, None] < N) & (rm[None, :] < M))


@pytest.mark.parametrize("how", ["trans", "permute", ".T", "method"])
def test_transpose_2d(rng, how):
    M, N = 13, 27
    x = nonzero(rng, (M, N))
    out = np.zeros((N, M), np.float32)
    transpose_kernel[(1,)](x, out, M, N, HOW=how, BM=16, BN=32)
    np.testing.assert_array_equal(out, x.T)


@tilec.jit
def permute3d_kernel(x_ptr, out_ptr, HOW: tl.constexpr, A: tl.constexpr, B: tl.constexpr,
                     C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    if HOW == "permute":
        y = tl.permute(x, (2, 0, 1))
    else:
        y = tl.trans(x, 2, 0, 1)
    # y[c, a, b] = x[a, b, c]
    rc2 = tl.arange(0, C)[:, None, None]
    ra2 = tl.arange(0, A)[None, :, None]
    rb2 = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + rc2 * A * B + ra2 * B + rb2, y)


@tilec.jit
def trans3d_default_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr,
                           C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    y = tl.trans(x)  # swaps the last two dimensions: (A, C, B)
    rc2 = tl.arange(0, C)[None, :, None]
    rb2 = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + ra * C * B + rc2 * B + rb2, y)


def test_trans_3d_swaps_last_two_dims(rng):
    A, B, C = 2, 4, 8
    x = nonzero_int(rng, (A, B, C), np.int32)
    out = np.zeros((A, C, B), np.int32)
    trans3d_default_kernel[(1,)](x, out, A=A, B=B, C=C)
    np.testing.assert_array_equal(out, x.transpose(0, 2, 1))


@pytest.mark.parametrize("how", ["permute", "trans"])
def test_permute_3d(rng, how):
    A, B, C = 2, 4, 8
    x = nonzero_int(rng, (A, B, C), np.int32)
    out = np.zeros((C, A, B), np.int32)
    permute3d_kernel[(1,)](x, out, HOW=how, A=A, B=B, C=C)
    np.testing.assert_array_equal(out, x.transpose(2, 0, 1))


@tilec.jit
def broadcast_kernel(x_ptr, out_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rn, mask=rn < N, other=0.0)
    row = tl.broadcast_to(x[None, :], (BM, BN))
    col = tl.broadcast_to(tl.expand_dims(x, 1), (BN, BM))
    s = tl.broadcast_to(3.0, (BM, BN))  # a scalar broadcast to a tile
    offs = rm[:, None] * BN + rn[None, :]
    tl.store(out_ptr + offs, row + s)
    offs_t = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
    tl.store(out_ptr + BM * BN + offs_t, col)
    e0 = tl.expand_dims(x, 0)  # (1, BN)
    tl.store(out_ptr + 2 * BM * BN + rn[None, :], e0 * 2)
    e2 = tl.expand_dims(x, (0, 2))  # (1, BN, 1)
    tl.store(out_ptr + 2 * BM * BN + BN + rn[None, :, None], e2 * 3)
    e3 = tl.expand_dims(x, -1)  # (BN, 1)
    tl.store(out_ptr + 2 * BM * BN + 2 * BN + rn[:, None], e3 * 4)
    x2 = tl.broadcast_to(x[None, :], (2, BN))
    x3 = x2[:, None, :] + tl.zeros((2, 3 + 1, BN), tl.float32)  # (2, 4, BN)
    r3 = (tl.arange(0, 2)[:, None, None] * 4 + tl.arange(0, 4)[None, :, None]) * BN
    tl.store(out_ptr + 2 * BM * BN + 3 * BN + r3 + rn[None, None, :], x3)


def test_broadcast_to_and_expand_dims(rng):
    N, BM, BN = 13, 8, 16
    x = nonzero(rng, N)
    xp = np.zeros(BN, np.float32)
    xp[:N] = x
    out = np.zeros(2 * BM * BN + 3 * BN + 8 * BN, np.float32)
    broadcast_kernel[(1,)](x, out, N, BM=BM, BN=BN)
    np.testing.assert_array_equal(out[:BM * BN].reshape(BM, BN),
                                  np.broadcast_to(xp + 3, (BM, BN)))
    np.testing.assert_array_equal(out[BM * BN:2 * BM * BN].reshape(BN, BM),
                                  np.broadcast_to(xp[:, None], (BN, BM)))
    np.testing.assert_array_equal(out[2 * BM * BN:2 * BM * BN + BN], xp * 2)
    np.testing.assert_array_equal(out[2 * BM * BN + BN:2 * BM * BN + 2 * BN], xp * 3)
    np.testing.assert_array_equal(out[2 * BM * BN + 2 * BN:2 * BM * BN + 3 * BN], xp * 4)
    np.testing.assert_array_equal(out[2 * BM * BN + 3 * BN:].reshape(8, BN),
                                  np.broadcast_to(xp, (8, BN)))


@tilec.jit
def creation_kernel(x_ptr, f_ptr, i8_ptr, i_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    z = tl.zeros((BLOCK,), dtype=tl.float32)
    zl = tl.zeros_like(x)
    tl.static_assert(zl.dtype == tl.float16)
    full = tl.full((BLOCK,), -2.5, tl.float32)
    tl.store(f_ptr + r, z + 1.0)
    tl.store(f_ptr + BLOCK + r, zl.to(tl.float32) - 1.0)
    tl.store(f_ptr + 2 * BLOCK + r, full)
    f8 = tl.full((BLOCK,), 127, tl.int8)
    tl.static_assert(f8.dtype == tl.int8)
    tl.store(i8_ptr + r, f8 + 1)  # stays int8 and wraps
    tl.store(i_ptr + r, tl.arange(16, 16 + BLOCK))
    tl.store(i_ptr + BLOCK + r, tl.zeros([BLOCK], tl.int32) + tl.arange(3, 3 + BLOCK))
    big = tl.full((BLOCK,), 2**40 + 3, tl.int64)
    tl.store(i_ptr + 2 * BLOCK + r, (big >> 40) + (big & 0xFF))


def test_zeros_full_zeros_like_arange():
    B = 32
    x = np.ones(B, np.float16)
    f = np.full(3 * B, 99, np.float32)
    i8 = np.zeros(B, np.int8)
    i = np.zeros(3 * B, np.int32)
    creation_kernel[(1,)](x, f, i8, i, BLOCK=B)
    np.testing.assert_array_equal(f, np.repeat([1.0, -1.0, -2.5], B))
    np.testing.assert_array_equal(i8, np.full(B, -128, np.int8))
    np.testing.assert_array_equal(i, np.concatenate([np.arange(16, 16 + B),
                                                     np.arange(3, 3 + B), np.full(B, 4)]))


# ----------------------------------------------------------------------------
# program ids, loads and stores
# ----------------------------------------------------------------------------

@tilec.jit
def grid_kernel(out_ptr):
    p0 = tl.program_id(axis=0)
    p1 = tl.program_id(axis=1)
    p2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(axis=1)
    n2 = tl.num_programs(2)
    idx = (p2 * n1 + p1) * n0 + p0
    tl.store(out_ptr + 2 * idx, p0 + 10 * p1 + 100 * p2)
    tl.store(out_ptr + 2 * idx + 1, n0 + 10 * n1 + 100 * n2)


def test_program_id_and_num_programs_3d_grid():
    G = (3, 5, 2)
    out = np.full((G[2], G[1], G[0], 2), -1, np.int32)
    grid_kernel[G](out)
    p2, p1, p0 = np.meshgrid(np.arange(G[2]), np.arange(G[1]), np.arange(G[0]),
                             indexing="ij")
    np.testing.assert_array_equal(out[..., 0], p0 + 10 * p1 + 100 * p2)
    np.testing.assert_array_equal(out[..., 1], G[0] + 10 * G[1] + 100 * G[2])


@tilec.jit
def masked_2d_load_kernel(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr,
                          BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    lower = rm[:, None] >= rn[None, :]
    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :], mask=inside & lower, other=-7.0)
    # the output is padded to whole blocks, so the whole block can be stored
    out_stride = tl.num_programs(1) * BN
    tl.store(out_ptr + rm[:, None] * out_stride + rn[None, :], x)


def test_load_with_2d_mask_and_scalar_other(rng):
    M, N, BM, BN = 19, 23, 8, 16
    x = nonzero(rng, (M, N))
    gm, gn = tilec.cdiv(M, BM), tilec.cdiv(N, BN)
    out = np.zeros((gm * BM, gn * BN), np.float32)
    masked_2d_load_kernel[(gm, gn)](x, out, M, N, N, BM=BM, BN=BN)
    ref = np.full(out.shape, -7.0, np.float32)
    ref[:M, :N] = np.where(np.tri(M, N, dtype=bool), x, -7.0)
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def store_scalar_kernel(f_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(f_ptr + offs, 3.5, mask=m)
    tl.store(i_ptr + offs, 7, mask=m & (offs % 2 == 0))


def test_store_scalar_broadcast_over_block():
    n = 45
    f = np.full(n + 3, -1.0, np.float32)
    i = np.full(n + 3, -1, np.int16)
    store_scalar_kernel[grid1(n, 16)](f, i, n, BLOCK=16)
    np.testing.assert_array_equal(f, [3.5] * n + [-1.0] * 3)
    np.testing.assert_array_equal(i, [7 if k % 2 == 0 and k < n else -1 for k in range(n + 3)])


@tilec.jit
def store_convert_kernel(x_ptr, i_ptr, h_ptr, f_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(i_ptr + offs, x, mask=m)  # float32 -> int32 truncates toward zero
    tl.store(h_ptr + offs, x, mask=m)  # float32 -> float16 rounds to nearest even
    tl.store(f_ptr + offs, offs, mask=m)  # int32 -> float32


def test_store_converts_to_the_element_type(rng):
    n = 77
    x = nonzero(rng, n, high=100.0)
    i = np.zeros(n, np.int32)
    h = np.zeros(n, np.float16)
    f = np.zeros(n, np.float32)
    store_convert_kernel[grid1(n, 32)](x, i, h, f, n, BLOCK=32)
    np.testing.assert_array_equal(i, np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(f, np.arange(n, dtype=np.float32))


@tilec.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.uint8, np.uint16,
                                   np.uint64, np.float16, np.float64, np.bool_])
def test_load_store_dtypes(rng, dtype):
    n = 37
    if dtype == np.bool_:
        x = rng.random(n) < 0.5
    elif np.issubdtype(dtype, np.integer):
        x = full_range(rng, n, dtype)
    else:
        x = nonzero(rng, n, dtype, high=1e3)
    sentinel = np.ones(1, dtype) if dtype != np.bool_ else np.array([True])
    out = np.zeros(n + 4, dtype)
    out[n:] = sentinel
    copy_kernel[grid1(n, 16)](x, out, n, BLOCK=16)
    np.testing.assert_array_equal(out[:n], x)
    np.testing.assert_array_equal(out[n:], np.repeat(sentinel, 4))  # nothing past the mask


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_load_store_float_special_values(rng, dtype):
    info = np.finfo(dtype)
    x = np.array([-0.0, np.inf, -np.inf, info.tiny, -info.tiny / 4, info.smallest_subnormal,
                  info.max, -info.max, np.nan, 1.0], dtype)
    out = np.zeros(len(x) + 2, dtype)
    copy_kernel[(1,)](x, out, len(x), BLOCK=16)
    np.testing.assert_array_equal(out[:len(x)].view(f"u{x.itemsize}")[:-2],
                                  x.view(f"u{x.itemsize}")[:-2])  # bit for bit
    assert np.isnan(out[len(x) - 2]) and out[len(x) - 1] == 1.0
    out2 = np.zeros(len(x), dtype)
    unary_kernel[(1,)](x, out2, len(x), OP="-", BLOCK=16)
    np.testing.assert_array_equal(np.signbit(out2[:-2]), ~np.signbit(x[:-2]))
    np.testing.assert_array_equal(out2[:-2], -x[:-2])


@tilec.jit
def bool_select_kernel(c_ptr, x_ptr, out_ptr, flags_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    c = tl.load(c_ptr + offs, mask=m, other=False)
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(c, x, -x), mask=m)
    tl.store(flags_ptr + offs, x > 0, mask=m)


def test_bool_buffers(rng):
    n = 51
    c = rng.random(n) < 0.5
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    flags = np.zeros(n, np.bool_)
    bool_select_kernel[grid1(n, 16)](c, x, out, flags, n, BLOCK=16)
    np.testing.assert_array_equal(out, np.where(c, x, -x))
    np.testing.assert_array_equal(flags, x > 0)


@tilec.jit
def other_tensor_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    x = tl.load(x_ptr + offs, mask=offs < n, other=y * 10)  # `other` may be a tensor
    tl.store(out_ptr + offs, x)


def test_load_with_tensor_other(rng):
    n = 11
    x, y = nonzero(rng, n), nonzero(rng, 16)
    out = np.zeros(16, np.float32)
    other_tensor_kernel[(1,)](x, y, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([x, y[n:] * 10]))


@tilec.jit
def scalar_pointer_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    first = tl.load(x_ptr)
    third = tl.load((x_ptr + 5) - 3)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * first + third, mask=offs < n)
    tl.store(out_ptr + n, first - third)


def test_load_scalar_pointer(rng):
    n = 23
    x = nonzero(rng, n)
    out = np.zeros(n + 1, np.float32)
    scalar_pointer_kernel[(1,)](x, out, n, BLOCK=32)
    np.testing.assert_array_equal(out[:n], x * x[0] + x[2])
    assert out[n] == x[0] - x[2]


@tilec.jit
def scalar_mask_kernel(x_ptr, out_ptr, n):
    i = tl.program_id(0)
    v = tl.load(x_ptr + i, mask=i < n, other=-1.0)
    tl.store(out_ptr + i, v * 2)
    tl.store(out_ptr + 100, v, mask=i == 3)


def test_scalar_load_store_with_scalar_mask(rng):
    n = 5
    x = nonzero(rng, n)
    out = np.zeros(101, np.float32)
    scalar_mask_kernel[(8,)](x, out, n)
    np.testing.assert_array_equal(out[:8], np.concatenate([x * 2, [-2.0] * 3]))
    assert out[100] == x[3]


@tilec.jit
def optional_ptr_kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr = 32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x, mask=m)


@pytest.mark.parametrize("with_bias", [False, True])
def test_none_pointer_argument_and_constexpr_default(rng, with_bias):
    n = 70
    x, b = nonzero(rng, n), nonzero(rng, n)
    out = np.zeros(n, np.float32)
    optional_ptr_kernel[grid1(n, 32)](x, b if with_bias else None, out, n)
    np.testing.assert_array_equal(out, x + b if with_bias else x)


@tilec.jit
def pointer_increment_kernel(x_ptr, out_ptr, M, N, stride, BN: tl.constexpr):
    rn = tl.arange(0, BN)
    acc = tl.zeros((BN,), tl.float32)
    for _ in range(M):
        acc += tl.load(x_ptr + rn, mask=rn < N, other=0.0)
        x_ptr += stride
    tl.store(out_ptr + rn, acc, mask=rn < N)


def test_pointer_increment_in_loop(rng):
    M, N = 17, 29
    x = nonzero(rng, (M, 40))[:, :N]
    out = np.zeros(N, np.float32)
    pointer_increment_kernel[(1,)](x, out, M, N, 40, BN=32)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-6)


@tilec.jit
def int64_offsets_kernel(x_ptr, out_ptr, n, big, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    wide = offs.to(tl.int64) * big  # well past 2**31
    tl.static_assert(wide.dtype == tl.int64)
    idx = wide // big
    m = idx < n
    x = tl.load(x_ptr + idx, mask=m)
    tl.store(out_ptr + idx, x + 1, mask=m)
    tl.store(out_ptr + n + idx, (wide % 1000).to(tl.int32), mask=m)


def test_int64_offsets(rng):
    n, big = 70, 3_000_000_019
    x = nonzero_int(rng, n, np.int64, high=2**40)
    out = np.zeros(2 * n, np.int64)
    k = int64_offsets_kernel[grid1(n, 32)](x, out, n, big, BLOCK=32)
    assert k.spec[3][:2] == ("int", "i64")
    np.testing.assert_array_equal(out[:n], x + 1)
    np.testing.assert_array_equal(out[n:], (np.arange(n, dtype=np.int64) * big) % 1000)


@tilec.jit
def hints_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, cache_modifier=".cg", eviction_policy="evict_last")
    tl.store(out_ptr + offs, x * 2, mask=m, eviction_policy="evict_first")


def test_multiple_of_max_contiguous_leave_values_alone(rng):
    n = 83
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    hints_kernel[grid1(n, 32)](x, out, n, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2)


@tilec.jit
def mask_le_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs <= n, other=-1.0))
    tl.store(out_ptr + BLOCK + offs, tl.load(x_ptr + offs, mask=n > offs, other=-1.0))


def test_masks_of_runs_compared_with_a_multiple_of_16(rng):
    """offs <= 16 is true for 17 elements: a vector of 4 may not share one mask."""
    x = nonzero(rng, 64)
    out = np.zeros(128, np.float32)
    mask_le_kernel[(1,)](x, out, 16, BLOCK=64)
    expect = np.where(np.arange(64) <= 16, x, -1.0)
    np.testing.assert_array_equal(out[:64], expect)
    np.testing.assert_array_equal(out[64:], np.where(np.arange(64) < 16, x, -1.0))


@tilec.jit
def bad_hint_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] + tl.arange(0, BLOCK)[None, :]
    offs = tl.multiple_of(offs, (BLOCK, BLOCK, BLOCK))
    tl.store(out_ptr + offs, offs)


def test_a_hint_for_the_wrong_number_of_dims_names_the_line():
    out = np.zeros(64, np.int32)
    with pytest.raises(tilec.CompilationError, match="multiple_of: 3 values for a value of 2 dims"):
        bad_hint_kernel[(1,)](out, BLOCK=4)


@tilec.jit
def strided_2d_kernel(x_ptr, out_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], x * 3 - 1, mask=mask)


@pytest.mark.parametrize("view", ["step", "transposed"])
def test_non_contiguous_numpy_view(rng, view):
    base = nonzero(rng, (40, 61))
    x = base[3::2, 5::3] if view == "step" else base[2:35].T
    M, N = x.shape
    out = np.zeros((M, N), np.float32)
    grid = (tilec.cdiv(M, 8), tilec.cdiv(N, 16))
    strided_2d_kernel[grid](x, out, M, N, x.strides[0] // 4, x.strides[1] // 4, BM=8, BN=16)
    np.testing.assert_array_equal(out, x * 3 - 1)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    base = torch.rand(30, 50, generator=g) + 0.5
    x = base[1::2, ::3]  # a non-contiguous view
    M, N = x.shape
    out = torch.zeros(M, N)
    grid = (tilec.cdiv(M, 8), tilec.cdiv(N, 16))
    strided_2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), BM=8, BN=16)
    assert torch.equal(out, x * 3 - 1)
    for dtype in (torch.int16, torch.int64, torch.float16, torch.bool, torch.uint8):
        xi = torch.randint(0, 100, (37,), generator=g).to(dtype)
        yi = torch.zeros(37, dtype=dtype)
        copy_kernel[grid1(37, 16)](xi, yi, 37, BLOCK=16)
        assert torch.equal(xi, yi), dtype


# ----------------------------------------------------------------------------
# tl.dot
# ----------------------------------------------------------------------------

@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, CASE: tl.constexpr, EXPECTED: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if CASE == "default":
        c = tl.dot(a, b)
    elif CASE == "ieee":
        c = tl.dot(a, b, input_precision="ieee")
    elif CASE == "acc":
        c = tl.dot(a, b, acc=tl.load(c_ptrs, mask=c_mask, other=0))
    elif CASE == "out_f16":
        c = tl.dot(a, b, out_dtype=tl.float16)
    elif CASE == "out_f32":
        c = tl.dot(a, b, out_dtype=tl.float32)
    elif CASE == "out_i8":  # int8 products are int32 whatever out_dtype says, as in Triton
        c = tl.dot(a, b, out_dtype=tl.int8)
    elif CASE == "trans":
        c = tl.dot(a, tl.trans(tl.trans(b)))
    tl.static_assert(c.dtype == EXPECTED)
    tl.store(c_ptrs, c, mask=c_mask)


def run_dot(a, b, c, case, expected, blocks=(32, 32, 32)):
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = blocks
    dot_kernel[(1,)](a, b, c, M, N, K, CASE=case, EXPECTED=expected, BM=BM, BN=BN, BK=BK)


@pytest.mark.parametrize("case", ["default", "ieee", "out_f32", "acc", "trans"])
def test_dot_fp16_inputs(rng, case):
    M, N, K = 21, 19, 27
    a, b = nonzero(rng, (M, K), np.float16), nonzero(rng, (K, N), np.float16)
    c = nonzero(rng, (M, N)) if case == "acc" else np.zeros((M, N), np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if case == "acc":
        ref = ref + c
    run_dot(a, b, c, case, tl.float32)
    # fp16 products are exact in fp32: only the fp32 accumulation rounds
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_dot_fp16_out_dtype_fp16(rng):
    M, N, K = 17, 23, 20
    a, b = nonzero(rng, (M, K), np.float16), nonzero(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    run_dot(a, b, c, "out_f16", tl.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=5e-3, atol=2e-2)


@tilec.jit
def fp16_accumulator_loop_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc=acc, out_dtype=tl.float16)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_dot_loop_with_an_fp16_accumulator(rng):
    """A K loop carrying an fp16 accumulator (on the GPU the tensor cores
    accumulate in fp16, as Triton's do, rounding more often than this reference:
    about ten fp16 ulps of the partial sums' size are allowed)."""
    BM, BN, BK, K = 64, 64, 32, 128
    a, b = nonzero(rng, (BM, K), np.float16), nonzero(rng, (K, BN), np.float16)
    c = np.zeros((BM, BN), np.float16)
    fp16_accumulator_loop_kernel[(1,)](a, b, c, K, BM=BM, BN=BN, BK=BK)
    ref = np.zeros((BM, BN), np.float16)
    for k in range(0, K, BK):
        part = a[:, k:k + BK].astype(np.float64) @ b[k:k + BK].astype(np.float64)
        ref = (ref.astype(np.float64) + part).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=4e-3, atol=0.15)


@pytest.mark.parametrize("case", ["default", "acc"])
def test_dot_bf16_inputs(rng, case):
    torch = pytest.importorskip("torch")
    M, N, K = 18, 31, 25
    a = torch.from_numpy(nonzero(rng, (M, K))).to(torch.bfloat16)
    b = torch.from_numpy(nonzero(rng, (K, N))).to(torch.bfloat16)
    c0 = torch.from_numpy(nonzero(rng, (M, N)))
    c = c0.clone() if case == "acc" else torch.zeros(M, N)
    dot_kernel[(1,)](a, b, c, M, N, K, CASE=case, EXPECTED=tl.float32, BM=32, BN=32, BK=32)
    ref = a.double() @ b.double()
    if case == "acc":
        ref = ref + c0.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["default", "acc", "out_i8"])
def test_dot_int8_inputs(rng, case):
    M, N, K = 23, 17, 40
    a, b = full_range(rng, (M, K), np.int8), full_range(rng, (K, N), np.int8)
    c = (nonzero_int(rng, (M, N), np.int32, high=10**6) if case == "acc"
         else np.zeros((M, N), np.int32))
    ref = a.astype(np.int32) @ b.astype(np.int32)
    if case == "acc":
        ref = ref + c
    run_dot(a, b, c, case, tl.int32, blocks=(32, 32, 64))
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("blocks", [(1, 32, 32), (32, 2, 16), (8, 8, 8), (16, 16, 1)])
def test_dot_small_tiles(rng, dtype, blocks):
    """Tiles smaller than the tensor cores take (a row, two columns, K of 1) run on
    the CUDA cores, as Triton's interpreter runs them."""
    M, N, K = blocks
    if dtype == "int8":
        a, b = full_range(rng, (M, K), np.int8), full_range(rng, (K, N), np.int8)
        c = np.zeros((M, N), np.int32)
        run_dot(a, b, c, "default", tl.int32, blocks=blocks)
        np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
        return
    a, b = nonzero(rng, (M, K)).astype(dtype), nonzero(rng, (K, N)).astype(dtype)
    c = np.zeros((M, N), np.float32)
    run_dot(a, b, c, "ieee" if dtype == "float32" else "default", tl.float32, blocks=blocks)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def _round_mantissa(x, bits, mode):
    """float32 values rounded to `bits` mantissa bits (tf32 keeps 10)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    if mode == "nearest":  # ties away from zero, as cvt.rna.tf32.f32
        u = u + (1 << (drop - 1))
    u = u & ~np.uint64((1 << drop) - 1)
    return u.astype(np.uint32).view(np.float32)


def test_dot_fp32_ieee_vs_tf32(rng):
    M, N, K = 32, 32, 32
    a, b = nonzero(rng, (M, K)), nonzero(rng, (K, N))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    c_ieee = np.zeros((M, N), np.float32)
    c_tf32 = np.zeros((M, N), np.float32)
    run_dot(a, b, c_ieee, "ieee", tl.float32)
    run_dot(a, b, c_tf32, "default", tl.float32)
    # ieee: a plain fp32 dot product
    np.testing.assert_allclose(c_ieee, exact, rtol=1e-5, atol=1e-5)
    # default: inputs rounded to tf32 (10 mantissa bits), so clearly not exact fp32...
    assert np.abs(c_tf32.astype(np.float64) - exact).max() > 1e-3
    np.testing.assert_allclose(c_tf32, exact, rtol=2e-2, atol=3e-2)
    # ...but the exact product of the tf32-rounded inputs (rounded to nearest or truncated)
    errors = []
    for mode in ("nearest", "truncate"):
        ref = (_round_mantissa(a, 10, mode).astype(np.float64)
               @ _round_mantissa(b, 10, mode).astype(np.float64))
        errors.append(np.abs(c_tf32 - ref).max())
    assert min(errors) < 1e-4, errors


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
@pytest.mark.parametrize("blocks,warps", [((16, 16, 32), 1), ((64, 32, 32), 2),
                                          ((32, 64, 64), 4), ((128, 64, 32), 8),
                                          ((16, 128, 32), 4), ((64, 256, 32), 8),
                                          ((256, 32, 16), 4)])
def test_dot_tile_shapes_and_warps(rng, dtype, blocks, warps):
    """Every tile shape and warp count the tensor-core path splits differently."""
    torch = pytest.importorskip("torch")
    BM, BN, BK = blocks
    M, N, K = BM - 3, BN - 5, BK - 1
    if dtype == "int8":
        a, b = full_range(rng, (M, K), np.int8), full_range(rng, (K, N), np.int8)
        c = np.zeros((M, N), np.int32)
        dot_kernel[(1,)](a, b, c, M, N, K, CASE="default", EXPECTED=tl.int32, BM=BM, BN=BN,
                         BK=BK, num_warps=warps)
        np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
        return
    tdt = getattr(torch, dtype)
    a = torch.from_numpy(nonzero(rng, (M, K))).to(tdt)
    b = torch.from_numpy(nonzero(rng, (K, N))).to(tdt)
    c = torch.zeros(M, N)
    dot_kernel[(1,)](a, b, c, M, N, K, CASE="default", EXPECTED=tl.float32, BM=BM, BN=BN,
                     BK=BK, num_warps=warps)
    if dtype == "float32":  # tf32 inputs, rounded to nearest even as the CPU backend does
        a = torch.from_numpy(_round_mantissa_even(a.numpy(), 10))
        b = torch.from_numpy(_round_mantissa_even(b.numpy(), 10))
    ref = a.double() @ b.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def _round_mantissa_even(x, bits):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    u = u + ((1 << (drop - 1)) - 1) + ((u >> drop) & 1)
    u = u & ~np.uint64((1 << drop) - 1)
    return u.astype(np.uint32).view(np.float32)


@tilec.jit
def looped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("warps", [4, 8])
def test_looped_matmul_fp16(rng, warps):
    M, N, K = 150, 130, 200
    a, b = nonzero(rng, (M, K), np.float16), nonzero(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    looped_matmul_kernel[(tilec.cdiv(M, 64), tilec.cdiv(N, 64))](
        a, b, c, M, N, K, BM=64, BN=64, BK=32, num_warps=warps)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-2)


@tilec.jit
def pointer_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pointer_matmul_pipelined(rng, stages, dtype):
    """The loop Triton's tutorial writes: loads software-pipelined at num_stages."""
    torch = pytest.importorskip("torch")
    M, N, K = 128, 192, 160
    tdt = getattr(torch, dtype)
    a = torch.from_numpy(nonzero(rng, (M, K))).to(tdt)
    b = torch.from_numpy(nonzero(rng, (K, N))).to(tdt)
    c = torch.zeros(M, N)
    pointer_matmul_kernel[(M // 64, N // 64)](a, b, c, M, N, K, K, N, N, BM=64, BN=64, BK=32,
                                              num_stages=stages, num_warps=4)
    ref = a.double() @ b.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)


@tilec.jit
def tutorial_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                           stride_bn, stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("stages", [1, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("K", [200, 77])
def test_tutorial_matmul_with_a_k_tail(rng, stages, dtype, K):
    """Triton's tutorial loop: the K tail masked with the induction variable
    (pipelined on the GPU, the mask computed again for each stage copied)."""
    torch = pytest.importorskip("torch")
    M, N = 128, 192
    tdt = getattr(torch, dtype)
    a = torch.from_numpy(nonzero(rng, (M, K))).to(tdt)
    b = torch.from_numpy(nonzero(rng, (K, N))).to(tdt)
    c = torch.zeros(M, N)
    tutorial_matmul_kernel[(M // 64, N // 64)](a, b, c, M, N, K, *a.stride(), *b.stride(),
                                               *c.stride(), BM=64, BN=64, BK=32,
                                               num_stages=stages, num_warps=4)
    ref = a.double() @ b.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("stages", [1, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("K", [200, 77])
def test_tutorial_matmul_of_tf32_and_int8(rng, stages, dtype, K):
    """The same loop on fp32 (tf32 by default) and int8 operands: on sm_90a
    tf32 runs on wgmma from K-major tiles copied ahead, int8 on mma.sync."""
    torch = pytest.importorskip("torch")
    M, N = 128, 192
    if dtype == "int8":
        a = torch.from_numpy(full_range(rng, (M, K), np.int8))
        b = torch.from_numpy(full_range(rng, (K, N), np.int8))
    else:
        a, b = torch.from_numpy(nonzero(rng, (M, K))), torch.from_numpy(nonzero(rng, (K, N)))
    c = torch.zeros(M, N)
    tutorial_matmul_kernel[(M // 64, N // 64)](a, b, c, M, N, K, *a.stride(), *b.stride(),
                                               *c.stride(), BM=64, BN=64, BK=32,
                                               num_stages=stages, num_warps=4)
    ref = a.double() @ b.double()
    if dtype == "int8":  # int32 products summed exactly (below 2^24: exact in fp32)
        np.testing.assert_array_equal(c.numpy(), ref.numpy())
    else:  # tf32 keeps 10 bits of each operand's mantissa
        np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=2e-2, atol=5e-2)


@tilec.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BB: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr):
    rb = tl.arange(0, BB)[:, None, None]
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rb * M * K + rm[None, :, None] * K + rk[None, None, :],
                mask=(rm[None, :, None] < M) & (rk[None, None, :] < K), other=0.0)
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn[None, None, :],
                mask=(rk[None, :, None] < K) & (rn[None, None, :] < N), other=0.0)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rb * M * N + rm[None, :, None] * N + rn[None, None, :], c,
             mask=(rm[None, :, None] < M) & (rn[None, None, :] < N))


def test_batched_3d_dot(rng):
    B, M, N, K = 2, 13, 19, 21
    a, b = nonzero(rng, (B, M, K)), nonzero(rng, (B, K, N))
    c = np.zeros((B, M, N), np.float32)
    batched_dot_kernel[(1,)](a, b, c, M, N, K, BB=B, BM=16, BN=32, BK=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@tilec.jit
def dot_4d_kernel(a_ptr, b_ptr, c_ptr, P: tl.constexpr, Q: tl.constexpr, M: tl.constexpr,
                  N: tl.constexpr, K: tl.constexpr):
    rp = tl.arange(0, P)[:, None, None, None]
    rq = tl.arange(0, Q)[None, :, None, None]
    rm = tl.arange(0, M)[None, None, :, None]
    rn = tl.arange(0, N)[None, None, None, :]
    rka = tl.arange(0, K)[None, None, None, :]
    rkb = tl.arange(0, K)[None, None, :, None]
    a = tl.load(a_ptr + (rp * Q + rq) * M * K + rm * K + rka)
    b = tl.load(b_ptr + (rp * Q + rq) * K * N + rkb * N + rn)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + (rp * Q + rq) * M * N + rm * N + rn, c)


def test_dot_with_two_batch_dims(rng):
    """tl.dot on 4-D tensors: every leading dim is a batch dim, as in Triton."""
    P, Q, M, N, K = 2, 2, 16, 32, 16
    a, b = nonzero(rng, (P, Q, M, K)), nonzero(rng, (P, Q, K, N))
    c = np.zeros((P, Q, M, N), np.float32)
    dot_4d_kernel[(1,)](a, b, c, P=P, Q=Q, M=M, N=N, K=K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------
# control flow
# ----------------------------------------------------------------------------

@tilec.jit
def constant_to_kernel(out_ptr, lo, hi, MODE: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)  # a constant's tensor methods: it becomes an int32 scalar first
    for i in range(lo, hi):
        acc += i
    if MODE == "int64":
        tl.store(out_ptr, acc)
    else:
        raise ValueError("unknown mode")  # never reached: MODE rules this branch out


def test_tensor_methods_of_a_constant_and_an_unreached_raise():
    out = np.zeros(1, np.int64)
    lo = 2**35
    constant_to_kernel[(1,)](out, lo, lo + 20, MODE="int64")
    assert out[0] == sum(range(lo, lo + 20))


@tilec.jit
def static_range_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(STEPS):
        if i % 2 == 0:  # i is a constexpr: this `if` is resolved while unrolling
            acc += x * i
        else:
            acc -= x
    for j in tl.static_range(1, 7, 3):  # 1, 4
        acc += j
    tl.store(out_ptr + offs, acc, mask=m)


def test_static_range_unrolls_with_constexpr_index(rng):
    n = 27
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    static_range_kernel[(1,)](x, out, n, BLOCK=32, STEPS=5)
    ref = np.zeros(n, np.float32)
    for i in range(5):
        ref = ref + x * np.float32(i) if i % 2 == 0 else ref - x
    np.testing.assert_allclose(out, ref + 1 + 4, rtol=1e-6)


@tilec.jit
def range_kernel(out_ptr, start, stop, step, n):
    total = 0
    count = 0
    for i in range(start, stop, step):
        total += i
        count += 1
    down = 0
    for i in range(n, 0, -1):
        down = down * 3 + i
    tl.store(out_ptr + 0, total)
    tl.store(out_ptr + 1, count)
    tl.store(out_ptr + 2, down)


@pytest.mark.parametrize("start,stop,step,n", [(0, 10, 1, 4), (3, 20, 4, 1), (10, -5, -3, 6),
                                               (5, 5, 2, 0), (7, 2, 1, 3)])
def test_for_loop_runtime_bounds(start, stop, step, n):
    out = np.zeros(3, np.int32)
    range_kernel[(1,)](out, start, stop, step, n)
    down = 0
    for i in range(n, 0, -1):
        down = down * 3 + i
    r = list(range(start, stop, step))
    np.testing.assert_array_equal(out, [sum(r), len(r), down])


@tilec.jit
def tl_range_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, 2, num_stages=2):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_tl_range(rng):
    n, B = 7, 16
    x = nonzero(rng, (n, B))
    out = np.zeros(B, np.float32)
    tl_range_kernel[(1,)](x, out, n, BLOCK=B)
    np.testing.assert_allclose(out, x[0::2].astype(np.float64).sum(axis=0), rtol=1e-6)


@tilec.jit
def range_i64_kernel(out_ptr, start, n):
    for i in range(start, start + n):  # i is int64: start does not fit in 32 bits
        tl.store(out_ptr + (i - start), i % 1000)


def test_for_loop_int64_induction_variable():
    start, n = 5_000_000_123, 9
    out = np.zeros(n, np.int64)
    range_i64_kernel[(1,)](out, start, n)
    np.testing.assert_array_equal(out, np.arange(start, start + n) % 1000)


@tilec.jit
def if_in_loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in range(n):
        if i % 3 == 0:
            acc += x
        elif i % 3 == 1:
            acc = acc * 2
        else:
            acc -= i
    tl.store(out_ptr + offs, acc)


def test_runtime_if_inside_loop(rng):
    n = 11
    x = nonzero_int(rng, 16, np.int32)
    out = np.zeros(16, np.int32)
    if_in_loop_kernel[(1,)](x, out, n, BLOCK=16)
    acc = np.zeros(16, np.int32)
    for i in range(n):
        acc = acc + x if i % 3 == 0 else acc * 2 if i % 3 == 1 else acc - i
    np.testing.assert_array_equal(out, acc)


@tilec.jit
def nested_loops_kernel(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    outer = tl.zeros((BLOCK,), tl.int32)
    for i in range(M):
        inner = x
        for j in range(i, N):
            inner = inner * 2 - j
        outer = outer + inner + i
    tl.store(out_ptr + offs, outer)


def test_nested_loops_with_loop_carried_tensors(rng):
    M, N = 3, 5
    x = nonzero_int(rng, 16, np.int32)
    out = np.zeros(16, np.int32)
    nested_loops_kernel[(1,)](x, out, M, N, BLOCK=16)
    outer = np.zeros(16, np.int64)
    for i in range(M):
        inner = x.astype(np.int64)
        for j in range(i, N):
            inner = inner * 2 - j
        outer = outer + inner + i
    np.testing.assert_array_equal(out, outer)


@tilec.jit
def while_tensor_kernel(x_ptr, out_ptr, steps_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.abs(tl.load(x_ptr + offs, mask=m, other=1.0))
    steps = 0
    while tl.max(x, axis=0) < limit:
        x = x * 1.5
        steps += 1
    tl.store(out_ptr + offs, x, mask=m)
    tl.store(steps_ptr, steps)


def test_while_loop_with_tensor_state(rng):
    n = 20
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    steps = np.zeros(1, np.int32)
    while_tensor_kernel[(1,)](x, out, steps, n, 100.0, BLOCK=32)
    ref = np.abs(x)
    k = 0
    while ref.max() < np.float32(100.0):
        ref = ref * np.float32(1.5)
        k += 1
    np.testing.assert_array_equal(out, ref)
    assert steps[0] == k


@tilec.jit
def constexpr_if_kernel(x_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if MODE == "square":
        y = x * x
    elif MODE == "neg":
        y = -x
    else:
        y = x.to(tl.int32)  # only this branch produces an int tensor
    tl.store(out_ptr + offs, y, mask=m)


@pytest.mark.parametrize("mode", ["square", "neg", "int"])
def test_constexpr_if(rng, mode):
    n = 30
    x = nonzero(rng, n, high=9.0)
    out = np.zeros(n, np.float32)
    k = constexpr_if_kernel[(1,)](x, out, n, MODE=mode, BLOCK=32)
    ref = {"square": x * x, "neg": -x, "int": np.trunc(x)}[mode]
    np.testing.assert_array_equal(out, ref)
    assert k.spec[-2] == ("constexpr", mode)


@tilec.jit
def runtime_if_kernel(x_ptr, out_ptr, n, threshold, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    s = tl.sum(x, axis=0)
    if s > threshold:
        y = x * 2.0
        z = tl.full((BLOCK,), 1, tl.int32)
    else:
        y = x - 1.0
        z = offs
    tl.store(out_ptr + offs, y + z, mask=m)


def test_runtime_if_else_yields_tensors(rng):
    n, B = 150, 16
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    runtime_if_kernel[grid1(n, B)](x, out, n, 0.0, BLOCK=B)
    ref = np.zeros(n, np.float32)
    for p in range(tilec.cdiv(n, B)):
        sl = slice(p * B, min(n, (p + 1) * B))
        if x[sl].astype(np.float64).sum() > 0:
            ref[sl] = x[sl] * 2 + 1
        else:
            ref[sl] = x[sl] - 1 + np.arange(sl.start, sl.stop)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


@tilec.jit
def early_return_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if pid % 2 == 1:
        return
    tl.store(x_ptr + offs, x * 10, mask=m)


def test_early_return_under_runtime_if(rng):
    n, B = 100, 16
    x = nonzero(rng, n)
    orig = x.copy()
    early_return_kernel[grid1(n, B)](x, n, BLOCK=B)
    ref = orig.copy()
    for p in range(0, tilec.cdiv(n, B), 2):
        ref[p * B:(p + 1) * B] *= 10
    np.testing.assert_array_equal(x, ref)


@tilec.jit
def _sum_and_diff(a, b):
    return a + b, a - b


@tilec.jit
def _stats(x, y, K: tl.constexpr):
    s, d = _sum_and_diff(x, y)
    return s * K, d, tl.max(d, axis=0)


@tilec.jit
def tuple_helper_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    s, d, mx = _stats(x, y, 3)
    t = _sum_and_diff(s, d)
    tl.store(out_ptr + offs, s, mask=m)
    tl.store(out_ptr + n + offs, d, mask=m)
    tl.store(out_ptr + 2 * n + offs, t[0] + t[1], mask=m)
    tl.store(out_ptr + 3 * n, mx)


def test_jit_helpers_returning_tuples(rng):
    n = 25
    x, y = nonzero(rng, n), nonzero(rng, n)
    out = np.zeros(3 * n + 1, np.float32)
    tuple_helper_kernel[(1,)](x, y, out, n, BLOCK=32)
    s, d = (x + y) * 3, x - y
    np.testing.assert_array_equal(out[:n], s)
    np.testing.assert_array_equal(out[n:2 * n], d)
    np.testing.assert_array_equal(out[2 * n:3 * n], (s + d) + (s - d))
    # padded lanes hold 0 - 0 = 0, which is below max(d) only if some d > 0
    assert out[3 * n] == max(d.max(), 0.0)


@tilec.jit
def _clip(x, limit, SCALE: tl.constexpr = 2):
    if limit > 0:
        return tl.minimum(x, limit) * SCALE
    return x


@tilec.jit
def helper_return_kernel(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, _clip(x, limit), mask=m)
    tl.store(out_ptr + n + offs, _clip(x, limit, SCALE=3), mask=m)


@pytest.mark.parametrize("limit", [0.5, -1.0])
def test_jit_helper_with_return_under_if_and_default_arg(rng, limit):
    n = 21
    x = nonzero(rng, n)
    out = np.zeros(2 * n, np.float32)
    helper_return_kernel[(1,)](x, out, n, limit, BLOCK=32)
    lim = np.float32(limit)
    ref = [np.minimum(x, lim) * 2, np.minimum(x, lim) * 3] if limit > 0 else [x, x]
    np.testing.assert_array_equal(out, np.concatenate(ref))


SCALE = tl.constexpr(3)
OFFSET = 5
HALF = 0.5


@tilec.jit
def globals_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.static_assert(SCALE == 3)
    tl.store(out_ptr + offs, x * SCALE + OFFSET, mask=m)
    tl.store(out_ptr + n + offs, tl.full((BLOCK,), SCALE * OFFSET, tl.int32) + HALF, mask=m)


def test_constexpr_globals(rng):
    n = 19
    x = nonzero_int(rng, n, np.int32)
    out = np.zeros(2 * n, np.float32)
    globals_kernel[(1,)](x, out, n, BLOCK=32)
    np.testing.assert_array_equal(out, np.concatenate([x * 3 + 5, np.full(n, 15.5)]))


@tilec.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs)


def test_static_assert():
    x = np.zeros(32, np.int32)
    static_assert_kernel[(1,)](x, BLOCK=32)
    np.testing.assert_array_equal(x, np.arange(32))
    with pytest.raises(tilec.CompilationError, match="BLOCK must be a multiple of 16"):
        static_assert_kernel[(1,)](x, BLOCK=8)


@tilec.jit
def device_assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")
    tl.store(x_ptr + offs, x * 2, mask=offs < n)


@pytest.mark.cpu_only
def test_device_assert(rng):
    n = 40
    x = np.abs(nonzero(rng, n))
    ref = x * 2
    device_assert_kernel[grid1(n, 16)](x, n, BLOCK=16)
    np.testing.assert_array_equal(x, ref)
    x[33] = -1.0
    with pytest.raises(tilec.KernelError, match="x must be positive"):
        device_assert_kernel[grid1(n, 16)](x, n, BLOCK=16)


# ----------------------------------------------------------------------------
# block pointers
# ----------------------------------------------------------------------------

@tilec.jit
def block_ptr_kernel(x_ptr, out_ptr, rowsum_ptr, M, N, stride_xm, stride_om,
                     BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    x_blk = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_xm, 1),
                              offsets=(pid * BM, 0), block_shape=(BM, BN), order=(1, 0))
    o_blk = tl.make_block_ptr(base=out_ptr, shape=(M, N), strides=(stride_om, 1),
                              offsets=(pid * BM, 0), block_shape=(BM, BN), order=(1, 0))
    acc = tl.zeros((BM,), tl.float32)
    for _ in range(0, N, BN):
        x = tl.load(x_blk, boundary_check=(0, 1), padding_option="zero")
        acc += tl.sum(x, axis=1)
        tl.store(o_blk, x * 2 + 1, boundary_check=(0, 1))
        x_blk = tl.advance(x_blk, (0, BN))
        o_blk = tl.advance(o_blk, [0, BN])
    rows = pid * BM + tl.arange(0, BM)
    tl.store(rowsum_ptr + rows, acc, mask=rows < M)


def test_block_pointers_on_odd_2d_array(rng):
    M, N, BM, BN = 37, 53, 16, 16
    base = nonzero(rng, (M, N + 7))
    x = base[:, :N]  # a row stride larger than N
    out = np.full((M, N + 3), 99.0, np.float32)
    rowsum = np.zeros(M, np.float32)
    block_ptr_kernel[(tilec.cdiv(M, BM),)](x, out, rowsum, M, N, N + 7, N + 3, BM=BM, BN=BN)
    np.testing.assert_array_equal(out[:, :N], x * 2 + 1)
    np.testing.assert_array_equal(out[:, N:], 99.0)  # the boundary check keeps them
    np.testing.assert_allclose(rowsum, x.astype(np.float64).sum(axis=1), rtol=1e-5)


@tilec.jit
def block_ptr_col_major_kernel(x_ptr, out_ptr, M, N, stride_xn, BM: tl.constexpr,
                               BN: tl.constexpr):
    # x is column-major: element (i, j) at i + j * stride_xn
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_blk = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(1, stride_xn),
                              offsets=(pid_m * BM, pid_n * BN), block_shape=(BM, BN),
                              order=(0, 1))
    o_blk = tl.make_block_ptr(out_ptr, shape=(N, M), strides=(M, 1),
                              offsets=(pid_n * BN, pid_m * BM), block_shape=(BN, BM),
                              order=(1, 0))
    x = tl.load(x_blk, boundary_check=(0, 1))
    tl.store(o_blk, tl.trans(x) - 1.0, boundary_check=(1, 0))


def test_block_pointers_on_transposed_view(rng):
    base = nonzero(rng, (45, 30))
    x = base.T  # (30, 45), column-major
    M, N = x.shape
    out = np.zeros((N, M), np.float32)
    grid = (tilec.cdiv(M, 16), tilec.cdiv(N, 32))
    block_ptr_col_major_kernel[grid](x, out, M, N, x.strides[1] // 4, BM=16, BN=32)
    np.testing.assert_array_equal(out, x.T - 1)


@tilec.jit
def block_ptr_padding_kernel(x_ptr, out_ptr, M, N, PAD: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    x_blk = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    x = tl.load(x_blk, boundary_check=(0, 1), padding_option=PAD)
    r = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + r, x)  # the whole block, padding included


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_block_pointer_padding(rng, pad):
    M, N = 11, 13
    x = nonzero(rng, (M, N))
    out = np.full((16, 16), 5.0, np.float32)
    block_ptr_padding_kernel[(1,)](x, out, M, N, PAD=pad, BM=16, BN=16)
    ref = np.full((16, 16), 0.0 if pad == "zero" else np.nan, np.float32)
    ref[:M, :N] = x
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def block_ptr_remade_in_loops_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0) * BM
    x_blk = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (row, 0), (BM, BN), (1, 0))
    for j in range(0, N, BN):
        if j % (3 * BN) == 0:  # made again: the if gives back every part of it
            x_blk = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (row, j), (BM, BN), (1, 0))
        o_blk = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (row, j), (BM, BN), (1, 0))
        tl.store(o_blk, tl.load(x_blk, boundary_check=(0, 1)) + 1, boundary_check=(0, 1))
        x_blk = tl.advance(x_blk, (0, BN))
    o_blk = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (row, 0), (BM, BN), (1, 0))
    n = 0
    while n < N:
        if n % (2 * BN) == 0:
            o_blk = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (row, n), (BM, BN), (1, 0))
        v = tl.load(o_blk, boundary_check=(0, 1))
        tl.store(o_blk, v * 2, boundary_check=(0, 1))
        o_blk = tl.advance(o_blk, (0, BN))
        n += BN


def test_block_pointers_made_again_in_loops(rng):
    """A block pointer an if inside a for makes again, and one a while loop
    carries through an if: each if and loop gives back all of its registers."""
    M, N = 13, 100
    x = nonzero(rng, (M, N))
    out = np.zeros((M, N), np.float32)
    block_ptr_remade_in_loops_kernel[(tilec.cdiv(M, 8),)](x, out, M, N, BM=8, BN=16)
    np.testing.assert_allclose(out, (x + 1) * 2, rtol=1e-6)


# ----------------------------------------------------------------------------
# `import triton` through tilec.compat
# ----------------------------------------------------------------------------

def test_compat_triton_alias(rng, monkeypatch):
    import sys

    import tilec.compat

    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # install() adds its finder
    tilec.compat.install()
    import triton
    import triton.language as tl2

    assert triton.jit is tilec.jit and tl2 is tl
    assert triton.__version__ == tilec.compat.TRITON_VERSION  # what libraries check

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl2.constexpr):
        offs = tl2.program_id(0) * BLOCK + tl2.arange(0, BLOCK)
        m = offs < n
        x = tl2.load(x_ptr + offs, mask=m)
        tl2.store(out_ptr + offs, tl2.exp(x) * 2, mask=m)

    n = 45
    x = nonzero(rng, n)
    out = np.zeros(n, np.float32)
    scale_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2, rtol=2e-6)


# --- atomics


@tilec.jit
def atomic_bins_kernel(x_ptr, bins_ptr, old_ptr, n, NBINS: tl.constexpr, KIND: tl.constexpr,
                       BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    target = bins_ptr + offs % NBINS
    if KIND == "add":
        old = tl.atomic_add(target, x, mask=m)
    elif KIND == "max":
        old = tl.atomic_max(target, x, mask=m)
    elif KIND == "min":
        old = tl.atomic_min(target, x, mask=m)
    elif KIND == "and":
        old = tl.atomic_and(target, x, mask=m)
    elif KIND == "or":
        old = tl.atomic_or(target, x, mask=m)
    else:
        old = tl.atomic_xor(target, x, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


def _reduce_into(kind, bins, x):
    out = bins.copy()
    ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    ufunc.at(out, np.arange(len(x)) % len(bins), x)
    return out


@pytest.mark.parametrize("kind,dtype", [
    ("add", np.int32), ("add", np.uint32), ("add", np.int64), ("add", np.float32),
    ("add", np.float64), ("max", np.int32), ("max", np.uint32), ("max", np.float32),
    ("max", np.int64), ("min", np.int32), ("min", np.float32), ("min", np.float64),
    ("and", np.int32), ("or", np.uint32), ("xor", np.int64)])
def test_atomics_many_programs_into_few_bins(rng, kind, dtype):
    """1000 elements from 8 programs updating 7 bins: every update lands once."""
    n, nbins = 1000, 7
    if np.issubdtype(dtype, np.floating):
        x = (rng.standard_normal(n) * 4).astype(dtype)
        bins = (rng.standard_normal(nbins) * 4).astype(dtype)
        if kind == "add":  # exact in any order: small integers
            x, bins = np.round(x).astype(dtype), np.round(bins).astype(dtype)
    elif kind in ("and", "or", "xor"):
        x = full_range(rng, n, dtype)
        bins = full_range(rng, nbins, dtype)
    else:
        x = nonzero_int(rng, n, dtype, high=1000)
        bins = nonzero_int(rng, nbins, dtype, high=1000)
    out, old = bins.copy(), np.zeros(n, dtype)
    atomic_bins_kernel[(tilec.cdiv(n, 128),)](x, out, old, n, NBINS=nbins, KIND=kind, BLOCK=128)
    np.testing.assert_array_equal(out, _reduce_into(kind, bins, x))
    # each old value is the bin's value before that update: a bin's own initial value
    # is one of them (where a first update happened), and all are bin values in range
    if kind in ("max", "min"):
        for b in range(nbins):
            olds = old[np.arange(n) % nbins == b]
            assert (olds <= out[b]).all() if kind == "max" else (olds >= out[b]).all()


@tilec.jit
def atomic_fp16_add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs % 3, tl.load(x_ptr + offs, mask=m), mask=m)


def test_atomic_add_fp16(rng):
    n = 300
    x = rng.integers(-4, 5, size=n).astype(np.float16)  # sums stay exact in fp16
    out = np.zeros(3, np.float16)
    atomic_fp16_add_kernel[(tilec.cdiv(n, 64),)](x, out, n, BLOCK=64)
    ref = np.zeros(3, np.float64)
    np.add.at(ref, np.arange(n) % 3, x.astype(np.float64))
    np.testing.assert_array_equal(out, ref.astype(np.float16))


@tilec.jit
def ticket_kernel(counter_ptr, out_ptr):
    t = tl.atomic_add(counter_ptr, 1)  # a scalar atomic: once per program
    tl.store(out_ptr + tl.program_id(0), t)


def test_scalar_atomic_add_hands_out_tickets():
    counter, out = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    ticket_kernel[(37,)](counter, out)
    assert counter[0] == 37
    np.testing.assert_array_equal(np.sort(out), np.arange(37))


@tilec.jit
def xchg_kernel(ptr, vals_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_xchg(ptr + offs, tl.load(vals_ptr + offs, mask=m), mask=m)
    tl.store(old_ptr + offs, old, mask=m)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64, np.float64])
def test_atomic_xchg_returns_the_old_values(rng, dtype):
    n = 37
    start, vals = nonzero(rng, n).astype(dtype), nonzero(rng, n).astype(dtype) + 3
    buf, old = start.copy(), np.zeros(n, dtype)
    xchg_kernel[(1,)](buf, vals, old, n, BLOCK=64)
    np.testing.assert_array_equal(buf, vals)
    np.testing.assert_array_equal(old, start)


@tilec.jit
def cas_kernel(ptr, cmp_ptr, vals_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(ptr + offs, tl.load(cmp_ptr + offs), tl.load(vals_ptr + offs))
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float32, np.float16])
def test_atomic_cas_swaps_where_equal(rng, dtype):
    n = 32
    start = np.arange(n).astype(dtype)
    cmp = np.where(np.arange(n) % 3 == 0, start, start + 1).astype(dtype)
    vals = (np.arange(n) + 100).astype(dtype)
    buf, old = start.copy(), np.zeros(n, dtype)
    cas_kernel[(1,)](buf, cmp, vals, old, BLOCK=n)
    np.testing.assert_array_equal(buf, np.where(np.arange(n) % 3 == 0, vals, start))
    np.testing.assert_array_equal(old, start)


@tilec.jit
def locked_increment_kernel(lock_ptr, count_ptr, log_ptr, BLOCK: tl.constexpr):
    """A spin lock around a plain read-modify-write, as Triton's layer-norm
    backward guards its partial sums."""
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    c = tl.load(count_ptr)
    offs = tl.arange(0, BLOCK)
    tl.store(log_ptr + c * BLOCK + offs, tl.load(log_ptr + c * BLOCK + offs) + c + offs)
    tl.store(count_ptr, c + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock_with_atomic_cas_and_xchg():
    programs, block = 40, 32
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    log = np.zeros(programs * block, np.int32)
    locked_increment_kernel[(programs,)](lock, count, log, BLOCK=block)
    assert count[0] == programs and lock[0] == 0
    ref = (np.arange(programs)[:, None] + np.arange(block)[None, :]).ravel()
    np.testing.assert_array_equal(log, ref)


@tilec.jit
def atomic_sem_kernel(ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_add(ptr + tl.arange(0, 16), 1, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("sem,scope", [("relaxed", "gpu"), ("acquire", "cta"),
                                       ("release", "sys"), ("acq_rel", "gpu")])
def test_atomic_sem_and_scope(sem, scope):
    buf = np.zeros(16, np.int32)
    atomic_sem_kernel[(3,)](buf, SEM=sem, SCOPE=scope)
    np.testing.assert_array_equal(buf, np.full(16, 3))


@tilec.jit
def atomic_copy_kernel(src_ptr, dst_ptr, n, LOAD_SEM: tl.constexpr, STORE_SEM: tl.constexpr,
                       BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.atomic_load(src_ptr + offs, mask=m, sem=LOAD_SEM, scope="gpu")
    (dst_ptr + offs).atomic_store(x, mask=m, sem=STORE_SEM)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint32, np.int64,
                                   np.float16, np.float32, np.float64, np.bool_])
@pytest.mark.parametrize("load_sem,store_sem", [("acquire", "release"), ("relaxed", "relaxed")])
def test_atomic_load_and_store_copy_masked(rng, dtype, load_sem, store_sem):
    n = 101
    src = full_range(rng, n, dtype) if np.issubdtype(dtype, np.integer) else (
        rng.standard_normal(n) > 0 if dtype == np.bool_ else nonzero(rng, n).astype(dtype))
    dst = np.zeros(n + 5, dtype)
    if dtype != np.bool_:
        dst[n:] = 7  # past the mask: untouched
    atomic_copy_kernel[(tilec.cdiv(n, 32),)](src, dst, n, LOAD_SEM=load_sem,
                                             STORE_SEM=store_sem, BLOCK=32)
    np.testing.assert_array_equal(dst[:n], src)
    if dtype != np.bool_:
        np.testing.assert_array_equal(dst[n:], 7)


@tilec.jit
def flag_handoff_kernel(data_ptr, flag_ptr, out_ptr, BLOCK: tl.constexpr, POLL: tl.constexpr):
    """Program 0 publishes a block and raises a flag with a release store; the
    others wait for the flag with an acquire load (or tl.atomic_poll), then read."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data_ptr + offs, offs * 3 + 1)
        tl.atomic_store(flag_ptr, 1)
    else:
        if POLL:
            tl.atomic_poll(flag_ptr, 1)
        else:
            while tl.atomic_load(flag_ptr) == 0:
                pass
        tl.store(out_ptr + pid * BLOCK + offs, tl.load(data_ptr + offs))


@pytest.mark.parametrize("poll", [False, True])
def test_release_store_acquire_load_hand_off(poll):
    programs, block = 6, 64
    data, flag = np.zeros(block, np.int32), np.zeros(1, np.int32)
    out = np.zeros(programs * block, np.int32)
    flag_handoff_kernel[(programs,)](data, flag, out, BLOCK=block, POLL=poll)
    assert flag[0] == 1
    ref = np.arange(block) * 3 + 1
    np.testing.assert_array_equal(out.reshape(programs, block)[1:], np.tile(ref, (programs - 1, 1)))


@tilec.jit
def poll_timeout_kernel(ptr, seen_ptr, expected, timeout, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    seen = tl.atomic_poll(ptr + offs, expected, sem="relaxed", scope="gpu", timeout_ns=timeout)
    tl.store(seen_ptr + offs, seen)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint64])
def test_atomic_poll_times_out_where_the_value_never_comes(dtype):
    block = 64
    buf = np.where(np.arange(block) % 3 == 0, 5, 4).astype(dtype)
    seen = np.zeros(block, np.bool_)
    poll_timeout_kernel[(1,)](buf, seen, 5, 20000, BLOCK=block)
    np.testing.assert_array_equal(seen, np.arange(block) % 3 == 0)
    poll_timeout_kernel[(1,)](buf, seen, 5, 0, BLOCK=block)  # each is read at least once
    np.testing.assert_array_equal(seen, np.arange(block) % 3 == 0)


@tilec.jit
def atomic_misuse_kernel(p, q, CASE: tl.constexpr):
    if CASE == 0:
        tl.atomic_load(p, sem="release")
    elif CASE == 1:
        tl.atomic_store(p, 1.0, sem="acquire")
    elif CASE == 2:
        tl.atomic_poll(p, 1)
    else:
        tl.atomic_poll(q, 1, timeout_ns=-1)


@pytest.mark.parametrize("case,message", [
    (0, "sem must be one of 'acquire', 'relaxed', got 'release'"),
    (1, "sem must be one of 'release', 'relaxed', got 'acquire'"),
    (2, "tl.atomic_poll() takes 16-, 32- or 64-bit integer elements, not f32"),
    (3, "atomic_poll timeout_ns must be non-negative"),
])
def test_atomic_load_store_poll_errors(case, message):
    with pytest.raises(tilec.CompilationError, match=re.escape(message)):
        atomic_misuse_kernel[(1,)](np.zeros(4, np.float32), np.zeros(4, np.int32), CASE=case)


# --- small names of triton.language


@tilec.jit
def logical_methods_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    (out_ptr + offs).store(a.logical_and(b > 0), mask=m)
    (out_ptr + n + offs).store((a > 1).logical_or(b != 0), mask=m)
    tl.store(out_ptr + 2 * n + offs, offs.cdiv(3) == 1, mask=m)


def test_logical_and_or_and_other_tensor_methods(rng):
    n = 37
    a = rng.integers(-2, 3, size=n).astype(np.int32)
    b = rng.integers(-2, 3, size=n).astype(np.int32)
    out = np.zeros(3 * n, np.bool_)
    logical_methods_kernel[(1,)](a, b, out, n, BLOCK=64)
    np.testing.assert_array_equal(out[:n], (a != 0) & (b > 0))
    np.testing.assert_array_equal(out[n:2 * n], (a > 1) | (b != 0))
    np.testing.assert_array_equal(out[2 * n:], (np.arange(n) + 2) // 3 == 1)


def _swizzle_reference(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    group = ij // (size_g * size_j)
    off_i = group * size_g
    g = min(size_i - off_i, size_g)
    ij %= size_g * size_j
    return off_i + ij % g, ij // g


@tilec.jit
def swizzle_kernel(out_ptr, size_i, size_j, size_g):
    i = tl.program_id(0)
    j = tl.program_id(1)
    new_i, new_j = tl.swizzle2d(i, j, size_i, size_j, size_g)
    tl.store(out_ptr + (i * size_j + j) * 2, new_i)
    tl.store(out_ptr + (i * size_j + j) * 2 + 1, new_j)


def test_swizzle2d_groups_rows():
    size_i, size_j, size_g = 7, 5, 3
    out = np.zeros(size_i * size_j * 2, np.int32)
    swizzle_kernel[(size_i, size_j)](out, size_i, size_j, size_g)
    ref = [c for i in range(size_i) for j in range(size_j)
           for c in _swizzle_reference(i, j, size_i, size_j, size_g)]
    np.testing.assert_array_equal(out, ref)
    pairs = {tuple(p) for p in out.reshape(-1, 2)}
    assert len(pairs) == size_i * size_j  # a permutation of the grid


@tilec.jit
def small_names_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.assume(BLOCK > 0)
    z = tl.add(tl.mul(x, y), tl.sub(x, 2))
    row = tl.unsqueeze(z, 0)  # (1, BLOCK)
    back = tl.squeeze(row, 0)
    m = tl.maximum(back, y, propagate_nan=tl.PropagateNan.ALL)
    tl.static_assert(tl.TRITON_MAX_TENSOR_NUMEL == 1048576)
    tl.store(out_ptr + offs, tl.core.where(m > 0, m, 0.0))


def test_add_sub_mul_squeeze_unsqueeze_assume_propagate_nan(rng):
    x, y = nonzero(rng, 64), nonzero(rng, 64)
    y[3] = np.nan
    out = np.zeros(64, np.float32)
    small_names_kernel[(1,)](x, y, out, BLOCK=64)
    z = x * y + (x - 2)
    ref = np.maximum(z, y)  # numpy's maximum propagates NaN
    np.testing.assert_allclose(out, np.where(ref > 0, ref, 0.0), rtol=1e-6)
    assert np.isnan(out[3]) or out[3] == 0  # NaN > 0 is false: where gives 0


# --- tensor descriptors


@tilec.jit
def descriptor_copy_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    tile = src.load([pm * BM, pn * BN])
    tl.static_assert(src.block_shape == (BM, BN))
    dst.store([pm * BM, pn * BN], tile * 2 + 1)


def test_tensor_descriptor_load_and_store_clip_at_the_edges(rng):
    M, N = 37, 53
    x, y = nonzero(rng, (M, N)), np.zeros((M, N), np.float32)
    guard = np.zeros((M + 8, N), np.float32)  # nothing is written past the tensor
    guard[:M] = y
    y = guard[:M]
    descriptor_copy_kernel[(tilec.cdiv(M, 16), tilec.cdiv(N, 32))](x, y, M, N, BM=16, BN=32)
    np.testing.assert_array_equal(y, x * 2 + 1)
    assert (guard[M:] == 0).all()


@tilec.jit
def descriptor_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load_tensor_descriptor(a_desc, [pm * BM, k * BK])
        b = b_desc.load([k * BK, pn * BN])
        acc = tl.dot(a, b, acc)
    tl.store_tensor_descriptor(c_desc, [pm * BM, pn * BN], acc)


def test_matmul_through_tensor_descriptors(rng):
    torch = pytest.importorskip("torch")
    M, N, K = 96, 80, 72
    a = torch.from_numpy(nonzero(rng, (M, K))).half()
    b = torch.from_numpy(nonzero(rng, (K, N))).half()
    c = torch.zeros(M, N)
    descriptor_matmul_kernel[(tilec.cdiv(M, 64), tilec.cdiv(N, 32))](a, b, c, M, N, K, BM=64,
                                                                      BN=32, BK=32)
    np.testing.assert_allclose(c.numpy(), (a.double() @ b.double()).numpy(), rtol=1e-5,
                               atol=1e-4)


@tilec.jit
def descriptor_fields_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                             PAD: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                     padding_option=PAD)
    # shape and strides are the runtime values given; dtype is the element type
    tl.store(out_ptr + tl.arange(0, 4), tl.join(tl.join(desc.shape[0], desc.shape[1]),
                                                tl.join(desc.strides[0], desc.strides[1])
                                                ).reshape(4).to(tl.float32))
    tile = desc.load([M - 2, 0])  # rows past M are padding
    tl.static_assert(tile.dtype == desc.dtype)
    tl.store(out_ptr + 4 + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], tile)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_tensor_descriptor_fields_and_padding(rng, pad):
    M, N = 13, 8
    x = nonzero(rng, (M, N))
    out = np.zeros(4 + 4 * N, np.float32)
    descriptor_fields_kernel[(1,)](x, out, M, N, BM=4, BN=N, PAD=pad)
    np.testing.assert_array_equal(out[:4], [M, N, N, 1])
    tile = out[4:].reshape(4, N)
    np.testing.assert_array_equal(tile[:2], x[M - 2:])
    assert (np.isnan(tile[2:]) if pad == "nan" else tile[2:] == 0).all()


@tilec.jit
def descriptor_rows_kernel(x_ptr, idx_ptr, out_ptr, y_ptr, col, X, Y, R: tl.constexpr,
                           BY: tl.constexpr):
    idx = tl.load(idx_ptr + tl.arange(0, R))
    src = tl.make_tensor_descriptor(x_ptr, [X, Y], [Y, 1], [1, BY])
    rows = src.gather(idx, col)  # rows idx[i], columns col .. col+BY-1; zeros outside
    tl.store(out_ptr + tl.arange(0, R)[:, None] * BY + tl.arange(0, BY)[None, :], rows)
    dst = tl.make_tensor_descriptor(y_ptr, [X, Y], [Y, 1], [1, BY])
    dst.scatter(rows + 1, idx, col)


def test_tensor_descriptor_gather_and_scatter_rows(rng):
    X, Y, R, BY, col = 37, 45, 8, 16, 36  # the last 7 columns of each tile are outside
    x = nonzero(rng, (X, Y))
    idx = rng.permutation(X)[:R].astype(np.int32)
    out = np.zeros((R, BY), np.float32)
    y = np.zeros((X, Y), np.float32)
    descriptor_rows_kernel[(1,)](x, idx, out, y, col, X, Y, R=R, BY=BY)
    ref = np.zeros((R, BY), np.float32)
    ref[:, :Y - col] = x[idx, col:]
    np.testing.assert_array_equal(out, ref)
    ref_y = np.zeros((X, Y), np.float32)
    ref_y[idx, col:] = x[idx, col:] + 1
    np.testing.assert_array_equal(y, ref_y)


@tilec.jit
def descriptor_reduce_kernel(y_ptr, x_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                             KIND: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    rm, rn = m + tl.arange(0, BM)[:, None], n + tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + rm * N + rn, mask=(rm < M) & (rn < N), other=0)
    desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    if KIND == "add":
        desc.atomic_add([m, n], x)
    elif KIND == "min":
        desc.atomic_min([m, n], x)
    elif KIND == "max":
        desc.atomic_max([m, n], x)
    elif KIND == "and":
        desc.atomic_and([m, n], x)
    elif KIND == "or":
        desc.atomic_or([m, n], x)
    else:
        desc.atomic_xor([m, n], x)


@pytest.mark.parametrize("kind,dtype", [("add", np.float32), ("add", np.float16),
                                        ("add", np.int32), ("min", np.float16),
                                        ("max", np.float16), ("min", np.int64),
                                        ("max", np.uint32), ("and", np.int64),
                                        ("or", np.int32), ("xor", np.uint64)])
def test_tensor_descriptor_reductions(rng, kind, dtype):
    """desc.atomic_add/min/max/and/or/xor: every tile combined into the tensor,
    twice over (each program's tile is reduced by two programs), edges clipped."""
    M, N, BM, BN = 37, 45, 8, 16  # partial tiles along both dims
    if np.issubdtype(dtype, np.floating):
        x, y = nonzero(rng, (M, N), dtype), nonzero(rng, (M, N), dtype)
        if kind == "add":  # sums exact in every order
            x, y = np.round(x * 4).astype(dtype) / 4, np.round(y * 4).astype(dtype) / 4
    else:
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        x, y = (rng.integers(lo, hi, (M, N)).astype(dtype) for _ in range(2))
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    out = y.copy()
    descriptor_reduce_kernel[grid](out, x, M, N, BM=BM, BN=BN, KIND=kind)
    descriptor_reduce_kernel[grid](out, x, M, N, BM=BM, BN=BN, KIND=kind)
    op = {"add": lambda a, b: a + b + b, "min": np.minimum, "max": np.maximum,
          "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": lambda a, b: a ^ b ^ b}[kind]
    np.testing.assert_array_equal(out, op(y, x))


@pytest.mark.parametrize("kind,dtype", [("min", "fp32"), ("add", "i64"), ("xor", "fp16")])
def test_tensor_descriptor_reductions_refuse_what_tma_cannot_do(kind, dtype):
    sig = {"y_ptr": "*" + dtype, "x_ptr": "*" + dtype, "M": "i32", "N": "i32"}
    with pytest.raises(tilec.CompilationError, match=f"desc.atomic_{kind}\\(\\) does not take"):
        tilec.compile(descriptor_reduce_kernel, signature=sig,
                      constexprs={"BM": 8, "BN": 16, "KIND": kind}, target="cpu")


@tilec.jit
def block_ptr_element_type_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    bp = tl.make_block_ptr(src_ptr, (N,), (1,), (0,), (BLOCK,), (0,))
    v = tl.load(bp, boundary_check=(0,)).to(bp.dtype.element_ty)
    tl.store(dst_ptr + tl.arange(0, BLOCK), v, mask=tl.arange(0, BLOCK) < N)


def test_block_pointer_dtype_element_ty(rng):
    x = nonzero(rng, 13).astype(np.float16)
    y = np.zeros(13, np.float16)
    block_ptr_element_type_kernel[(1,)](x, y, 13, BLOCK=16)
    np.testing.assert_array_equal(y, x)


# --- join, split, interleave, cat


@tilec.jit
def join_split_kernel(a_ptr, b_ptr, joined_ptr, a2_ptr, b2_ptr, inter_ptr, cat_ptr,
                      N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)  # (N, 2)
    tl.store(joined_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    x, y = tl.split(j)
    tl.store(a2_ptr + offs, x)
    tl.store(b2_ptr + offs, y)
    tl.store(inter_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))
    tl.store(cat_ptr + tl.arange(0, 2 * N), tl.cat(a, b, can_reorder=True))


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.float16, np.int64])
def test_join_split_interleave_cat(rng, dtype):
    n = 64
    if np.issubdtype(dtype, np.floating):
        a = nonzero(rng, n).astype(dtype)
        b = (-nonzero(rng, n)).astype(dtype)
        a[0], b[1], a[2] = np.nan, -0.0, np.inf  # split keeps every bit
    else:
        a, b = full_range(rng, n, dtype), full_range(rng, n, dtype)
    outs = [np.zeros(2 * n, dtype), np.zeros(n, dtype), np.zeros(n, dtype),
            np.zeros(2 * n, dtype), np.zeros(2 * n, dtype)]
    join_split_kernel[(1,)](a, b, *outs, N=n)
    joined, a2, b2, inter, cat = outs
    same = lambda x, y: np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))  # noqa: E731
    same(joined, np.stack([a, b], axis=1).ravel())
    same(a2, a)
    same(b2, b)
    same(inter, np.stack([a, b], axis=1).ravel())
    same(cat, np.concatenate([a, b]))


@tilec.jit
def split_2d_kernel(x_ptr, lo_ptr, hi_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None, None] * N * 2 + rn[None, :, None] * 2 +
                tl.arange(0, 2)[None, None, :])
    lo, hi = x.split()
    tl.store(lo_ptr + rm[:, None] * N + rn[None, :], lo)
    tl.store(hi_ptr + rm[:, None] * N + rn[None, :], hi)


def test_split_of_a_3d_tensor(rng):
    x = nonzero(rng, (8, 16, 2))
    lo, hi = np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float32)
    split_2d_kernel[(1,)](x, lo, hi, M=8, N=16)
    np.testing.assert_array_equal(lo, x[..., 0])
    np.testing.assert_array_equal(hi, x[..., 1])


@tilec.jit
def flip_cat_kernel(x_ptr, f0_ptr, f1_ptr, c1_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(f0_ptr + rm[:, None] * N + rn[None, :], tl.flip(x, 0))
    tl.store(f1_ptr + rm[:, None] * N + rn[None, :], x.flip())  # the last dim
    c = tl.cat(x, x * 2, dim=1)  # (M, 2N)
    tl.store(c1_ptr + rm[:, None] * 2 * N + tl.arange(0, 2 * N)[None, :], c)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float16])
def test_flip_and_cat_along_a_dim(rng, dtype):
    M, N = 8, 16
    x = (nonzero(rng, (M, N)) * 10).astype(dtype)
    f0, f1 = np.zeros_like(x), np.zeros_like(x)
    c1 = np.zeros((M, 2 * N), dtype)
    flip_cat_kernel[(1,)](x, f0, f1, c1, M=M, N=N)
    np.testing.assert_array_equal(f0, x[::-1])
    np.testing.assert_array_equal(f1, x[:, ::-1])
    np.testing.assert_array_equal(c1, np.concatenate([x, (x * 2).astype(dtype)], axis=1))


@tilec.jit
def many_dims_kernel(x_ptr, r_ptr, f_ptr, M: tl.constexpr, N: tl.constexpr,
                     BITS: tl.constexpr):
    # (M, N) viewed as M x 2 x 2 ... x 2, scaled and viewed back; and flipped
    # along N (tl.flip reshapes into one dim of 2 per bit of N).
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.reshape(x, (M, ) + (2, ) * BITS) * 3
    tl.store(r_ptr + offs, tl.reshape(y, (M, N)))
    tl.store(f_ptr + offs, tl.flip(x, 1))


@pytest.mark.parametrize("M,N", [(2, 256), (4, 1024)])
def test_tensors_of_more_than_eight_dims(rng, M, N):
    x = (nonzero(rng, (M, N)) * 10).astype(np.float32)
    r, f = np.zeros_like(x), np.zeros_like(x)
    many_dims_kernel[(1,)](x, r, f, M=M, N=N, BITS=N.bit_length() - 1)
    np.testing.assert_array_equal(r, x * 3)
    np.testing.assert_array_equal(f, x[:, ::-1])


@tilec.jit
def where_pointers_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # int64 addresses become pointers, one is chosen, and it is stored back
    # into an int64 buffer (a pointer stored as an integer).
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.pointer_type(tl.int32))
    b = tl.load(b_ptr + offs, mask=mask).to(tl.pointer_type(tl.int32))
    tl.store(out_ptr + offs, tl.where(tl.load(cond_ptr + offs, mask=mask), a, b), mask=mask)


def test_pointers_stored_into_an_integer_buffer(rng):
    n = 1000
    cond = rng.random(n) < 0.5
    a = rng.integers(1, 2**40, n, dtype=np.int64)
    b = rng.integers(1, 2**40, n, dtype=np.int64)
    out = np.zeros(n, np.int64)
    where_pointers_kernel[(1,)](cond, a, b, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out, np.where(cond, a, b))


@tilec.jit
def half_dot_onto_loaded_kernel(x_ptr, y_ptr, z_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr,
                                K: tl.constexpr):
    # An fp16 dot into an fp16 accumulator that starts as a loaded row
    # broadcast down the rows (one word in several register pairs), and a tile
    # that is read again after it fed an accumulator.
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :])
    y = tl.load(y_ptr + rk[:, None] * N + rn[None, :])
    row = tl.load(z_ptr + rn)[None, :]
    z = tl.dot(x, y, tl.broadcast_to(row, (M, N)), out_dtype=tl.float16)
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    w = tl.dot(x, y, c, out_dtype=tl.float16)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], w + c)


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (32, 32, 32), (64, 64, 64)])
def test_fp16_dot_onto_a_broadcast_row_and_a_tile_read_again(rng, M, N, K):
    x = (nonzero(rng, (M, K)) / 4).astype(np.float16)
    y = (nonzero(rng, (K, N)) / 4).astype(np.float16)
    z = nonzero(rng, (M, N)).astype(np.float16)
    c = nonzero(rng, (M, N)).astype(np.float16)
    xy = x.astype(np.float32) @ y.astype(np.float32)
    want_z = xy + z[0].astype(np.float32)[None, :]
    want_c = xy + 2 * c.astype(np.float32)
    half_dot_onto_loaded_kernel[(1,)](x, y, z, c, M=M, N=N, K=K)
    np.testing.assert_allclose(z.astype(np.float32), want_z, rtol=1e-2, atol=2e-2)
    np.testing.assert_allclose(c.astype(np.float32), want_c, rtol=1e-2, atol=2e-2)


# --- tl.reduce with a @jit combine function, xor_sum, reduce_or


@tilec.jit
def _add_combine(a, b):
    return a + b


@tilec.jit
def _argmax_combine(v0, i0, v1, i1):
    take1 = (v1 > v0) | ((v1 == v0) & (i1 < i0))  # the first index of the maximum
    return tl.where(take1, v1, v0), tl.where(take1, i1, i0)


@tilec.jit
def generic_reduce_kernel(x_ptr, i_ptr, sum_ptr, max_ptr, arg_ptr, xor_ptr, or_ptr, all_ptr,
                          M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    bits = tl.load(i_ptr + rm[:, None] * N + rn[None, :])
    tl.store(sum_ptr + rm, tl.reduce(x, 1, _add_combine))
    idx = tl.broadcast_to(rn[None, :], (M, N))
    best, where = tl.reduce((x, idx), 1, _argmax_combine)
    tl.store(max_ptr + rm, best)
    tl.store(arg_ptr + rm, where)
    tl.store(xor_ptr + rn, tl.xor_sum(bits, axis=0))
    tl.store(or_ptr + rn, tl.reduce_or(bits, 0))
    tl.store(all_ptr, tl.xor_sum(bits))


def test_reduce_with_a_combine_function_and_bitwise_reductions(rng):
    M, N = 16, 32
    x = np.round(nonzero(rng, (M, N)) * 4).astype(np.float32)  # ties for argmax; exact sums
    x[3, 5] = x[3, 9] = 99.0
    bits = full_range(rng, (M, N), np.int32)
    outs = [np.zeros(M, np.float32), np.zeros(M, np.float32), np.zeros(M, np.int32),
            np.zeros(N, np.int32), np.zeros(N, np.int32), np.zeros(1, np.int32)]
    generic_reduce_kernel[(1,)](x, bits, *outs, M=M, N=N)
    s, mx, arg, xr, orr, allx = outs
    np.testing.assert_array_equal(s, x.sum(axis=1))
    np.testing.assert_array_equal(mx, x.max(axis=1))
    np.testing.assert_array_equal(arg, x.argmax(axis=1))
    assert arg[3] == 5
    np.testing.assert_array_equal(xr, np.bitwise_xor.reduce(bits, axis=0))
    np.testing.assert_array_equal(orr, np.bitwise_or.reduce(bits, axis=0))
    assert allx[0] == np.bitwise_xor.reduce(bits.ravel())


@tilec.jit
def gather_histogram_kernel(src_ptr, idx_ptr, out_ptr, data_ptr, hist_ptr, n,
                            M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                            BINS: tl.constexpr, BLOCK: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    src = tl.load(src_ptr + rm[:, None] * N + rn[None, :])          # (M, N)
    idx = tl.load(idx_ptr + rk[:, None] * N + rn[None, :])          # (K, N), rows of src
    tl.store(out_ptr + rk[:, None] * N + rn[None, :], tl.gather(src, idx, 0))
    offs = tl.arange(0, BLOCK)
    data = tl.load(data_ptr + offs, mask=offs < n, other=0)
    tl.store(hist_ptr + tl.arange(0, BINS), tl.histogram(data, BINS, mask=offs < n))


def test_gather_and_histogram(rng):
    M, N, K, BINS, n = 16, 8, 32, 16, 200
    src = nonzero(rng, (M, N))
    src[2, 3] = -0.0
    idx = rng.integers(0, M, size=(K, N)).astype(np.int32)
    data = rng.integers(-3, BINS + 3, size=n).astype(np.int32)  # some outside the bins
    out, hist = np.zeros((K, N), np.float32), np.zeros(BINS, np.int32)
    gather_histogram_kernel[(1,)](src, idx, out, data, hist, n, M=M, N=N, K=K, BINS=BINS,
                                  BLOCK=256)
    np.testing.assert_array_equal(out.view(np.uint32), np.take_along_axis(src, idx, 0).view(np.uint32))
    np.testing.assert_array_equal(hist, np.bincount(data[(data >= 0) & (data < BINS)],
                                                    minlength=BINS))


@tilec.jit
def gather_rows_hist_kernel(src_ptr, idx_ptr, out_ptr, vals_ptr, hist_ptr, N: tl.constexpr,
                            BINS: tl.constexpr):
    row = tl.program_id(0)
    offs = row * N + tl.arange(0, N)
    src = tl.load(src_ptr + offs)[None, :]                          # (1, N)
    idx = tl.load(idx_ptr + offs).to(tl.int64)[None, :]             # (1, N), along axis 1
    tl.store(out_ptr + offs[None, :], tl.gather(src, idx, 1))
    h = tl.histogram(tl.load(vals_ptr + offs), BINS)
    tl.atomic_add(hist_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float64])
def test_gather_along_rows_and_histogram_across_programs(rng, dtype):
    rows, n, bins = 5, 1024, 64
    src = (rng.standard_normal((rows, n)) * 50).astype(dtype)
    idx = rng.integers(0, n, size=(rows, n)).astype(np.int32)
    vals = rng.integers(0, 256, size=(rows, n)).astype(np.uint8)  # many outside the bins
    out, hist = np.zeros_like(src), np.zeros(bins, np.int32)
    gather_rows_hist_kernel[(rows,)](src, idx, out, vals, hist, N=n, BINS=bins)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, 1))
    np.testing.assert_array_equal(hist, np.bincount(vals[vals < bins], minlength=bins))


@tilec.jit
def cumsum_shapes_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr,
                         REV: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=AXIS, reverse=REV))


@pytest.mark.parametrize("shape", [(1, 4096), (8, 256), (64, 32), (4, 16)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("rev", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64, np.int8])
def test_cumsum_lines_of_every_length(rng, shape, axis, rev, dtype):
    """Lines shorter and longer than a warp and a block: runs per thread, lanes
    and warps along the line (the GPU's scan), in both directions."""
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-100, 100, size=shape).astype(dtype)
    else:
        x = nonzero(rng, shape).astype(dtype)
    out = np.zeros_like(x)
    cumsum_shapes_kernel[(1,)](x, out, R=shape[0], C=shape[1], AXIS=axis, REV=rev)
    flipped = np.flip(x, axis) if rev else x
    ref = np.cumsum(flipped.astype(np.float64 if dtype == np.float32 else dtype), axis=axis,
                    dtype=np.float64 if dtype == np.float32 else dtype)
    ref = np.flip(ref, axis) if rev else ref
    if dtype == np.float32:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(out, ref)


# --- associative_scan and cumprod


@tilec.jit
def _max_and_index(v1, i1, v2, i2):
    take = (v2 > v1) | ((v2 == v1) & (i2 > i1))  # the larger; on a tie, the later index
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@tilec.jit
def running_argmax_kernel(x_ptr, vout_ptr, iout_ptr, red_ptr, R: tl.constexpr, C: tl.constexpr,
                          AXIS: tl.constexpr, REV: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    if AXIS == 0:
        idx = tl.broadcast_to(tl.arange(0, R)[:, None], (R, C))
    else:
        idx = tl.broadcast_to(tl.arange(0, C)[None, :], (R, C))
    v, i = tl.associative_scan((x, idx), AXIS, _max_and_index, reverse=REV)
    tl.store(vout_ptr + offs, v)
    tl.store(iout_ptr + offs, i)
    _, best = tl.reduce((x, idx), AXIS, _max_and_index)
    if AXIS == 0:
        tl.store(red_ptr + tl.arange(0, C), best)
    else:
        tl.store(red_ptr + tl.arange(0, R), best)


@pytest.mark.parametrize("shape", [(1, 4096), (8, 256), (64, 32), (256, 4)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("rev", [False, True])
def test_scan_and_reduce_with_a_tuple_combine_function(rng, shape, axis, rev):
    """A running max with its index (ties: the later one) and the argmax, for lines
    of every length, along both axes and from either end."""
    x = rng.integers(-20, 20, size=shape).astype(np.float32)  # many ties
    vout, iout = np.zeros_like(x), np.zeros(shape, np.int32)
    red = np.zeros(shape[1 - axis], np.int32)
    running_argmax_kernel[(1,)](x, vout, iout, red, R=shape[0], C=shape[1], AXIS=axis, REV=rev)
    xs = np.moveaxis(x, axis, -1)
    n = xs.shape[-1]
    ref_v, ref_i = np.zeros_like(xs), np.zeros(xs.shape, np.int32)
    for line in np.ndindex(xs.shape[:-1]):
        order = range(n - 1, -1, -1) if rev else range(n)
        best, where = None, None
        for j in order:
            if best is None or xs[line + (j,)] > best or (xs[line + (j,)] == best and j > where):
                best, where = xs[line + (j,)], j
            ref_v[line + (j,)], ref_i[line + (j,)] = best, where
    np.testing.assert_array_equal(vout, np.moveaxis(ref_v, -1, axis))
    np.testing.assert_array_equal(iout, np.moveaxis(ref_i, -1, axis))
    last_max = n - 1 - np.argmax(xs[..., ::-1], axis=-1)
    np.testing.assert_array_equal(red, last_max.reshape(-1))


@tilec.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@tilec.jit
def _first_nonzero_combine(av, ai, bv, bi):  # a (value, index) pair scan with a tuple
    keep_a = av != 0
    return tl.where(keep_a, av, bv), tl.where(keep_a, ai, bi)


@tilec.jit
def scan_kernel(x_ptr, y_ptr, cummax_ptr, rev_ptr, prod_ptr, first_ptr, M: tl.constexpr,
                N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    y = tl.load(y_ptr + rm[:, None] * N + rn[None, :])
    tl.store(cummax_ptr + rm[:, None] * N + rn[None, :], tl.associative_scan(x, 1, _max_combine))
    tl.store(rev_ptr + rm[:, None] * N + rn[None, :],
             tl.associative_scan(x, 0, _max_combine, reverse=True))
    tl.store(prod_ptr + rm[:, None] * N + rn[None, :], tl.cumprod(y, axis=1))
    idx = tl.broadcast_to(rn[None, :], (M, N))
    _, first = tl.associative_scan((y * (rn[None, :] % 3 == 2), idx), 1, _first_nonzero_combine)
    tl.store(first_ptr + rm[:, None] * N + rn[None, :], first)


def test_associative_scan_and_cumprod(rng):
    M, N = 8, 16
    x = nonzero(rng, (M, N)) * rng.choice([-1, 1], size=(M, N)).astype(np.float32)
    y = rng.integers(1, 3, size=(M, N)).astype(np.int32)  # products stay exact in int32
    outs = [np.zeros((M, N), np.float32), np.zeros((M, N), np.float32),
            np.zeros((M, N), np.int32), np.zeros((M, N), np.int32)]
    scan_kernel[(1,)](x, y, *outs, M=M, N=N)
    cummax, rev, prod, first = outs
    np.testing.assert_array_equal(cummax, np.maximum.accumulate(x, axis=1))
    np.testing.assert_array_equal(rev, np.maximum.accumulate(x[::-1], axis=0)[::-1])
    np.testing.assert_array_equal(prod, np.cumprod(y, axis=1))
    idx = np.arange(N)
    want = np.where(idx < 2, idx, 2)  # the first element with index % 3 == 2 is index 2
    np.testing.assert_array_equal(first, np.broadcast_to(want, (M, N)))


@tilec.jit
def _scaled_add(a, b):
    return (a + b) * 2.0


@tilec.jit
def _add_with_program_id(a, b):
    return a + b + tl.program_id(0) * 0  # not elementwise: the whole-tensor tree runs it


@tilec.jit
def combine_edge_kernel(x_ptr, s_ptr, out_ptr, N: tl.constexpr):
    scale = tl.load(s_ptr) * 2.0  # the same scalar constant as inside the combine
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.reduce(x, 0, _scaled_add) * scale)
    tl.store(out_ptr + 1, tl.reduce(x, 0, _add_with_program_id))


def test_combine_functions_sharing_constants_or_not_elementwise(rng):
    n = 64
    x = rng.integers(-50, 50, size=n).astype(np.float32)  # exact sums
    out = np.zeros(2, np.float32)
    combine_edge_kernel[(1,)](x, np.array([3.0], np.float32), out, N=n)
    # each combine doubles: a tree of depth 6 over 64 elements scales by 2**6, the scan's
    # element i by 2**(steps i took part in); the reduce is then scaled by 3 * 2
    assert out[0] == x.sum() * 2 ** 6 * 6 and out[1] == x.sum()


# --- sort and topk


@tilec.jit
def sort_kernel(x_ptr, asc_ptr, desc_ptr, col_ptr, top_ptr, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(asc_ptr + rm[:, None] * N + rn[None, :], tl.sort(x))
    tl.store(desc_ptr + rm[:, None] * N + rn[None, :], x.sort(descending=True))
    tl.store(col_ptr + rm[:, None] * N + rn[None, :], tl.sort(x, dim=0))
    tl.store(top_ptr + rm[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_sort_and_topk(rng, dtype):
    M, N, K = 4, 32, 8
    if dtype == np.float32:
        x = (rng.standard_normal((M, N)) * 10).astype(dtype)
    else:
        x = full_range(rng, (M, N), dtype)
    asc, desc, col = (np.zeros_like(x) for _ in range(3))
    top = np.zeros((M, K), dtype)
    sort_kernel[(1,)](x, asc, desc, col, top, M=M, N=N, K=K)
    np.testing.assert_array_equal(asc, np.sort(x, axis=1))
    np.testing.assert_array_equal(desc, np.sort(x, axis=1)[:, ::-1])
    np.testing.assert_array_equal(col, np.sort(x, axis=0))
    np.testing.assert_array_equal(top, np.sort(x, axis=1)[:, ::-1][:, :K])


@tilec.jit
def sort_rows_kernel(x_ptr, out_ptr, top_ptr, R: tl.constexpr, C: tl.constexpr,
                     DESC: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x, descending=DESC))
    tl.store(top_ptr + tl.arange(0, R)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("shape", [(1, 1024), (16, 64), (1, 16), (64, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_lines_of_every_length(rng, shape, dtype, desc):
    """Index bits in registers, lanes and warps (the GPU's compare-and-swap
    partners in a register, a shuffle away, or through shared memory)."""
    if dtype == np.int64:
        x = rng.integers(-2**40, 2**40, size=shape).astype(dtype)
    else:
        x = np.round(rng.standard_normal(shape) * 50).astype(dtype)  # with ties
        x[0, 0] = -0.0
    out = np.zeros_like(x)
    k = min(4, shape[1])
    top = np.zeros((shape[0], k), dtype)
    sort_rows_kernel[(1,)](x, out, top, R=shape[0], C=shape[1], DESC=desc, K=k)
    ref = np.sort(x, axis=1)
    np.testing.assert_array_equal(out, ref[:, ::-1] if desc else ref)
    np.testing.assert_array_equal(top, ref[:, ::-1][:, :k])


@tilec.jit
def _clamp_and_scale(x, lo, hi):
    return tl.minimum(tl.maximum(x, lo), hi) * 2, x > hi


@tilec.jit
def map_elementwise_kernel(x_ptr, out_ptr, over_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y, over = tl.map_elementwise(_clamp_and_scale, x, -1.0, 1.0)
    tl.store(out_ptr + offs, y)
    tl.store(over_ptr + offs, over.to(tl.int32))


def test_map_elementwise(rng):
    x = (rng.standard_normal(64) * 2).astype(np.float32)
    out, over = np.zeros(64, np.float32), np.zeros(64, np.int32)
    map_elementwise_kernel[(1,)](x, out, over, N=64)
    np.testing.assert_array_equal(out, np.clip(x, -1, 1) * 2)
    np.testing.assert_array_equal(over, (x > 1).astype(np.int32))


@tilec.jit
def precision_dot_kernel(a_ptr, b_ptr, c_ptr, PREC: tl.constexpr, M: tl.constexpr,
                         N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PREC))


@pytest.mark.parametrize("prec,bound", [("tf32", 3e-3), ("tf32x3", 2e-6), ("bf16x3", 2e-5),
                                        ("bf16x6", 2e-6), ("ieee", 2e-6)])
def test_dot_input_precisions(rng, prec, bound):
    """tf32x3 and bf16x3: three tensor-core products of high and low parts get
    close to fp32's accuracy, bf16x6 (six products of three parts) to it; tf32
    alone does not."""
    M, N, K = 32, 32, 64
    a = rng.uniform(0.5, 2.0, (M, K)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    precision_dot_kernel[(1,)](a, b, c, PREC=prec, M=M, N=N, K=K)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c - ref).max() / np.abs(ref).max()
    assert err < bound, err
    if prec == "tf32":
        assert err > 1e-5  # it is rounded


@tilec.jit
def early_exit_condition_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:  # programs past the end leave at once
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    steps = 0
    while tl.condition(steps < 3, disable_licm=True):
        steps += 1
    x = tl.expect_zero(tl.load(x_ptr + offs, mask=offs < n), offs >= n)
    tl.store(x_ptr + offs, x + steps, mask=offs < n)


def test_early_exit_tl_condition_and_expect_zero():
    x = np.arange(100, dtype=np.float32)
    early_exit_condition_kernel[(10,)](x, 100, BLOCK=16)  # 3 programs more than needed
    np.testing.assert_array_equal(x, np.arange(100) + 3)


@tilec.jit
def host_descriptor_matmul_kernel(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                                  BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pm * BM, k * BK]), b_desc.load([k * BK, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc)


def test_host_tensor_descriptors_as_kernel_arguments(rng):
    """triton.tools.tensor_descriptor.TensorDescriptor arguments (Triton's Hopper tutorials)."""
    torch = pytest.importorskip("torch")
    from tilec.tools.tensor_descriptor import TensorDescriptor
    M, N, K, BM, BN, BK = 96, 80, 72, 64, 32, 32
    a = torch.from_numpy(nonzero(rng, (M, K))).half()
    b = torch.from_numpy(nonzero(rng, (K, N))).half()
    c = torch.zeros(M, N)
    host_descriptor_matmul_kernel[(tilec.cdiv(M, BM), tilec.cdiv(N, BN))](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
        TensorDescriptor(c, c.shape, c.stride(), [BM, BN]), K, BM=BM, BN=BN, BK=BK)
    np.testing.assert_allclose(c.numpy(), (a.double() @ b.double()).numpy(), rtol=1e-5,
                               atol=1e-4)


@tilec.jit
def host_descriptor_fields_kernel(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    M = desc.shape[0]
    tile = desc.load([M - 1, 0])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], tile)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_host_tensor_descriptor_shape_and_padding(rng, pad):
    torch = pytest.importorskip("torch")
    from tilec.tools.tensor_descriptor import TensorDescriptor
    x = torch.from_numpy(nonzero(rng, (9, 16)))
    out = torch.zeros(4, 16)
    desc = TensorDescriptor(x, x.shape, x.stride(), [4, 16], padding=pad)
    host_descriptor_fields_kernel[(1,)](desc, out, BM=4, BN=16)
    assert torch.equal(out[0], x[8])
    assert (out[1:].isnan() if pad == "nan" else out[1:] == 0).all()


@tilec.jit
def bitonic_merge_kernel(x_ptr, out_ptr, DESC: tl.constexpr, DIM: tl.constexpr,
                         R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.bitonic_merge(x, dim=DIM, descending=DESC))


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_bitonic_merge_sorts_a_bitonic_sequence(rng, desc, dim):
    r, c = 8, 16
    n = r if dim == 0 else c
    # rising then falling along `dim`, each line with its own peak
    lines = []
    for _ in range(c if dim == 0 else r):
        v = rng.standard_normal(n).astype(np.float32)
        peak = int(rng.integers(0, n))
        lines.append(np.concatenate([np.sort(v[:peak]), np.sort(v[peak:])[::-1]]))
    x = np.stack(lines, axis=1 if dim == 0 else 0).astype(np.float32)
    out = np.zeros_like(x)
    bitonic_merge_kernel[(1,)](x, out, DESC=desc, DIM=dim, R=r, C=c)
    ref = np.sort(x, axis=dim)
    np.testing.assert_array_equal(out, np.flip(ref, axis=dim) if desc else ref)


@tilec.jit
def const_and_tuple_kernel(x_ptr: tl.const, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    pair = tl.tuple([x, x * 2])
    a, b = tuple(pair)
    tl.store(out_ptr + offs, a + b)


def test_const_annotation_and_tl_tuple(rng):
    x = nonzero(rng, 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    const_and_tuple_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, x + x * 2)


@tilec.jit
def unsupported_names_kernel(x_ptr, DT: tl.constexpr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if CASE == 0:
        x = x.to(tl.float8e4b8).to(tl.float32)
    elif CASE == 1:
        x = x.to(DT).to(tl.float32)
    else:
        x = x + tl.target_info.current_target()
    tl.store(x_ptr + tl.arange(0, 16), x)


@pytest.mark.parametrize("case,message", [
    (0, "tl.float8e4b8 is an AMD fp8 format"),
    (1, "tl.float8e4b15 is not supported by tilec"),
    (2, "tl.target_info.current_target() gives an object kernels cannot use"),
])
def test_names_tilec_does_not_compile_say_why(case, message):
    with pytest.raises((tilec.CompilationError, ValueError), match=re.escape(message)):
        unsupported_names_kernel[(1,)](np.zeros(16, np.float32),
                                       DT=tl.float8e4b15 if case == 1 else tl.float32, CASE=case)


@tilec.jit
def target_info_kernel(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if tl.target_info.is_cuda():
        if tl.target_info.cuda_capability_geq(9, 0):
            x = x + 100
        else:
            x = x + 10
    else:
        x = x + 1
    tl.store(x_ptr + offs, x)


def test_target_info_answers_for_the_compile_target(device):
    x = np.zeros(16, np.float32)
    target_info_kernel[(1,)](x)
    want = 1
    if device == "cuda":
        import torch
        want = 100 if torch.cuda.get_device_capability()[0] >= 9 else 10
    np.testing.assert_array_equal(x, want)
    # the IR is each target's own: 1 on the CPU, 10 for sm_80, 100 for sm_90a
    for target, add in (("cpu", "1.0"), ("sm_80", "1e+01"), ("sm_90a", "1e+02")):
        k = tilec.compile(target_info_kernel, signature={"x_ptr": "*fp32"}, target=target)
        assert f"value = {add}}}" in k.asm["tileir"]


def test_type_objects_of_the_language():
    bt = tl.block_type(tl.float16, [16, 32])
    assert bt.element_ty == tl.float16 and bt.shape == (16, 32) and bt.numel == 512
    assert bt.scalar == tl.float16 and bt == tl.block_type(tl.float16, (16, 32))
    assert tl.pi32_t.is_ptr() and tl.pi32_t.element_ty == tl.int32
    assert repr(tl.void) == "triton.language.void"
    assert tl.constexpr_type(3) == tl.constexpr_type(3)
    assert tl.tuple_type([tl.int32, tl.float32]).types == [tl.int32, tl.float32]
    s = tl.slice(1, 8, 2)
    assert (s.start, s.stop, s.step) == (1, 8, 2)
    assert tl.target_info.is_hip() is False
    assert tl.target_info.is_cuda() == (tl.target_info.current_target() is not None)


# --- tl.dot_scaled (microscaling): numpy decodes the formats for the reference

_E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def _decode(x, fmt, axis):
    """Values of a dot_scaled operand given as bytes; e2m1 unpacked along `axis`."""
    if fmt == "e2m1":
        lo, hi = _E2M1[x & 15], _E2M1[x >> 4]
        return np.stack([lo, hi], axis=axis + 1).reshape(
            [s * (2 if d == axis else 1) for d, s in enumerate(x.shape)])
    import torch
    dt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    return torch.from_numpy(x).view(dt).double().numpy()


def _random_bytes(rng, shape, fmt):
    x = rng.integers(0, 256, shape).astype(np.uint8)
    if fmt == "e4m3":
        x[(x & 0x7F) == 0x7F] = 0x3C  # no NaN
    if fmt == "e5m2":
        x[(x & 0x7C) == 0x7C] = 0x3C  # no inf or NaN
    return x


@tilec.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, A_FMT: tl.constexpr,
                      B_FMT: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      KA: tl.constexpr, KB: tl.constexpr, SCALED: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * KA + tl.arange(0, KA)[None, :])
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * N + rn)
    if SCALED:
        sa = tl.load(sa_ptr + rm * (K // 32) + tl.arange(0, K // 32)[None, :])
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        c = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT)
    else:
        c = tl.dot_scaled(a, None, A_FMT, b, None, B_FMT, acc=tl.full((M, N), 1.0, tl.float32))
    tl.store(out_ptr + rm * N + rn, c)


@pytest.mark.parametrize("a_fmt,b_fmt", [("e2m1", "e2m1"), ("e4m3", "e5m2"), ("e5m2", "e2m1"),
                                         ("e2m1", "e4m3")])
@pytest.mark.parametrize("scaled", [True, False])
def test_dot_scaled_formats(rng, a_fmt, b_fmt, scaled):
    m, n, k = 32, 16, 64
    ka, kb = (k // 2 if a_fmt == "e2m1" else k), (k // 2 if b_fmt == "e2m1" else k)
    a = _random_bytes(rng, (m, ka), a_fmt)
    b = _random_bytes(rng, (kb, n), b_fmt)
    sa = rng.integers(120, 135, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(120, 135, (n, k // 32)).astype(np.uint8)
    out = np.zeros((m, n), np.float32)
    dot_scaled_kernel[(1,)](a, sa, b, sb, out, A_FMT=a_fmt, B_FMT=b_fmt, M=m, N=n, K=k,
                            KA=ka, KB=kb, SCALED=scaled)
    av, bv = _decode(a, a_fmt, 1), _decode(b, b_fmt, 0)
    if scaled:
        av = av * np.exp2(np.repeat(sa.astype(np.float64) - 127, 32, axis=1))
        bv = bv * np.exp2(np.repeat(sb.astype(np.float64) - 127, 32, axis=1)).T
    ref = av @ bv + (0 if scaled else 1.0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_dot_scaled_with_an_fp16_operand_computes_in_fp16(rng):
    """With an fp16 operand the other is scaled and rounded to fp16, not bf16
    (which would drop fp16's last three mantissa bits), as Triton does."""
    m, n, k = 32, 16, 64
    a = _random_bytes(rng, (m, k), "e4m3")
    b = rng.standard_normal((k, n)).astype(np.float16)
    sa = rng.integers(124, 131, (m, k // 32)).astype(np.uint8)
    sb = np.full((n, k // 32), 127, np.uint8)
    out = np.zeros((m, n), np.float32)
    dot_scaled_kernel[(1,)](a, sa, b, sb, out, A_FMT="e4m3", B_FMT="fp16", M=m, N=n, K=k,
                            KA=k, KB=k, SCALED=True)
    av = _decode(a, "e4m3", 1) * np.exp2(np.repeat(sa.astype(np.float64) - 127, 32, axis=1))
    ref = av.astype(np.float16).astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@tilec.jit
def dot_scaled_batched_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, B: tl.constexpr,
                              M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """e2m1 lhs packed along K; e2m1 rhs packed along N (rhs_k_pack=False); a batch dim."""
    rb = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + rb * (M * K // 2) + tl.arange(0, M)[None, :, None] * (K // 2)
                + tl.arange(0, K // 2)[None, None, :])
    b = tl.load(b_ptr + rb * (K * N // 2) + tl.arange(0, K)[None, :, None] * (N // 2)
                + tl.arange(0, N // 2)[None, None, :])
    g = tl.arange(0, K // 32)[None, None, :]
    sa = tl.load(sa_ptr + rb * (M * K // 32) + tl.arange(0, M)[None, :, None] * (K // 32) + g)
    sb = tl.load(sb_ptr + rb * (N * K // 32) + tl.arange(0, N)[None, :, None] * (K // 32) + g)
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", rhs_k_pack=False)
    tl.store(out_ptr + rb * (M * N) + tl.arange(0, M)[None, :, None] * N
             + tl.arange(0, N)[None, None, :], c)


def test_dot_scaled_batched_and_packed_along_n(rng):
    bt, m, n, k = 2, 16, 32, 64
    a = _random_bytes(rng, (bt, m, k // 2), "e2m1")
    b = _random_bytes(rng, (bt, k, n // 2), "e2m1")
    sa = rng.integers(120, 135, (bt, m, k // 32)).astype(np.uint8)
    sb = rng.integers(120, 135, (bt, n, k // 32)).astype(np.uint8)
    sa[0, 0, 0] = 0  # 2**-127
    out = np.zeros((bt, m, n), np.float32)
    dot_scaled_batched_kernel[(1,)](a, sa, b, sb, out, B=bt, M=m, N=n, K=k)
    av = _decode(a, "e2m1", 2) * np.exp2(np.repeat(sa.astype(np.float64) - 127, 32, axis=2))
    bv = _decode(b, "e2m1", 2) * np.exp2(
        np.repeat(sb.astype(np.float64) - 127, 32, axis=2)).transpose(0, 2, 1)
    ref = av @ bv
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


# --- isinstance, hasattr and getattr in kernels (compile-time answers)


@tilec.jit
def classify_kernel(x, out):
    if (x is not None) and hasattr(x, "dtype") and isinstance(x.dtype, tl.pointer_type) and (
            x.dtype.element_ty == tl.int32):
        tl.store(out, 1)
    elif isinstance(x, tl.constexpr):
        tl.store(out, 2)
    elif isinstance(x, (tl.tensor, int)):
        tl.store(out, 3)
    else:
        tl.store(out, 4)


@pytest.mark.parametrize("value, kind", [("i32 tensor", 1), (1, 2), (None, 2), (7, 3),
                                         ("f32 tensor", 3), (2.5, 3)])
def test_isinstance_and_hasattr_in_kernels(value, kind):
    if value == "i32 tensor":
        value = np.zeros(1, np.int32)
    elif value == "f32 tensor":
        value = np.zeros(1, np.float32)
    out = np.zeros(1, np.int32)
    classify_kernel[(1,)](value, out)
    assert out[0] == kind


def test_getattr_of_a_module_by_constexpr_name(rng):
    @tilec.jit
    def apply_kernel(x_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, getattr(tl, FN)(tl.load(x_ptr + offs)))

    x = np.abs(nonzero(rng, 16))
    out = np.zeros_like(x)
    for fn, ref in (("sqrt", np.sqrt), ("exp", np.exp), ("log", np.log)):
        apply_kernel[(1,)](x, out, fn, BLOCK=16)
        np.testing.assert_allclose(out, ref(x), rtol=2e-6)
    with pytest.raises(tilec.CompilationError, match="has no attribute 'no_such_fn'"):
        apply_kernel[(1,)](x, out, "no_such_fn", BLOCK=16)


# --- Triton's small conveniences: x.item(), `if` on a one-element tensor,
# slices spelled with None, a literal's dtype, constant masks with `other`


@tilec.jit
def conveniences_kernel(x_ptr, out_ptr, N: tl.constexpr, MASK: tl.constexpr):
    one = tl.load(x_ptr + tl.arange(0, 1))  # tensor<1>
    first = one.item()
    if one > 0:  # a one-element condition
        first = first * 2
    data = tl.arange(0, N)
    t = data[None, None:, None]  # [1, N, 1]
    tl.static_assert(t.shape == (1, N, 1))
    s = tl.full([], 3, tl.int32)[None, None]
    tl.static_assert(s.shape == (1, 1))
    value = 1
    ones = tl.full([N], value, dtype=value.dtype)
    tl.static_assert(ones.dtype == tl.int32)
    loaded = tl.load(x_ptr + data, mask=MASK, other=7.0)
    tl.store(out_ptr + data, loaded + first + ones + t.reshape(N) * 0)


@pytest.mark.parametrize("mask", [True, False])
def test_item_one_element_conditions_none_slices_and_constant_masks(rng, mask):
    for first in (2.5, -1.5):
        x = nonzero(rng, 8)
        x[0] = first
        out = np.zeros(8, np.float32)
        conveniences_kernel[(1,)](x, out, N=8, MASK=mask)
        scaled = first * 2 if first > 0 else first
        np.testing.assert_allclose(out, (x if mask else 7.0) + scaled + 1, rtol=1e-6)


@tilec.jit
def bad_slice_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 8), x[8:])


def test_slices_with_bounds_are_refused():
    with pytest.raises(tilec.CompilationError, match="unsupported tensor index"):
        bad_slice_kernel[(1,)](np.zeros(16, np.float32))


@tilec.jit
def nd_descriptor_kernel(out_ptr, a_ptr, shape, strides, BLOCK_SHAPE):
    desc = tl.make_tensor_descriptor(a_ptr, shape=shape, strides=strides, block_shape=BLOCK_SHAPE)
    ndim: tl.constexpr = len(BLOCK_SHAPE)
    block = desc.load((0,) * ndim)  # a tuple repeated, as in Python
    rows = tl.arange(0, BLOCK_SHAPE[0])[:, None] * BLOCK_SHAPE[1]
    tl.store(out_ptr + rows + tl.arange(0, BLOCK_SHAPE[1])[None, :], block)


def test_block_shape_from_a_tuple_of_constexprs(rng):
    a = nonzero(rng, (5, 16))
    out = np.zeros((4, 16), np.float32)
    nd_descriptor_kernel[(1,)](out, a, a.shape, (16, 1), tuple(tl.constexpr(v) for v in (4, 16)))
    np.testing.assert_array_equal(out, a[:4])


@tilec.jit
def patched_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


def test_unsafe_update_src_recompiles():
    """Triton's tests patch a kernel's source this way."""
    x = np.zeros(1, np.float32)
    patched_kernel[(1,)](x)
    patched_kernel._unsafe_update_src(patched_kernel.src.replace("1.0", "2.0"))
    patched_kernel[(1,)](x)
    assert x[0] == 2.0
