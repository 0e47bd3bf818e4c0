"""Triton's type promotion for binary ops, checked pair by pair: every pair of
element types (and each type with a Python bool, int and float) under `+`
and under `%`, against the rules of Triton's computation_type_impl, restated
here on their own."""

import numpy as np
import pytest

import tilec
import tilec.language as tl

NAMES = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float8e4nv", "float8e5", "float16", "bfloat16", "float32", "float64"]


def is_float(t):
    return t.startswith("float") or t == "bfloat16"


def kind(t):  # Triton's dtype kinds: boolean < integral < floating
    return 0 if t == "int1" else 2 if is_float(t) else 1


def bits(t):
    return {"int1": 1, "float8e4nv": 8, "float8e5": 8, "bfloat16": 16}.get(
        t, int("".join(c for c in t if c.isdigit()) or 0))


def unsigned(t):
    return t.startswith("uint")


def expected(a, b, a_scalar=False, b_scalar=False, div_or_mod=False):
    """The result type, or None where Triton refuses the pair."""
    if a_scalar != b_scalar:  # a scalar of a kind not above the tensor's follows the tensor
        s, t = (a, b) if a_scalar else (b, a)
        if kind(s) <= kind(t):
            return "float32" if div_or_mod and t in ("float16", "bfloat16") else t
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    if a.startswith("float8") and b.startswith("float8"):
        return a if a == b else "float16"
    if is_float(a) or is_float(b):
        return None  # fp8 with an integer
    if div_or_mod and unsigned(a) != unsigned(b):
        return None  # mixed signedness under / and %
    if unsigned(a) == unsigned(b):
        return a if bits(a) > bits(b) else b
    u, s = (a, b) if unsigned(a) else (b, a)
    return u if bits(u) >= bits(s) else s


@tilec.jit
def promote_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr, SCALAR: tl.constexpr,
                   MOD: tl.constexpr, WANT: tl.constexpr):
    a = tl.full((16,), 1, A)
    if SCALAR == "none":
        b = tl.full((16,), 1, B)
    elif SCALAR == "bool":
        b = True
    elif SCALAR == "int":
        b = 3
    else:
        b = 1.5
    if MOD:
        c = a % b
    else:
        c = a + b
    tl.static_assert(c.dtype == WANT)
    tl.store(out_ptr + tl.arange(0, 16), c.to(tl.float32))


def check(a, b, scalar, mod, want):
    out = __import__("numpy").zeros(16, "float32")
    launch = lambda: promote_kernel[(1,)](  # noqa: E731
        out, A=getattr(tl, a), B=getattr(tl, b), SCALAR=scalar, MOD=mod,
        WANT=getattr(tl, want) if want else tl.int1)
    if want is None:
        with pytest.raises(tilec.CompilationError):
            launch()
    else:
        try:
            launch()
        except tilec.CompilationError as e:
            raise AssertionError(f"{a} {'%' if mod else '+'} {b} ({scalar}): expected {want}; "
                                 f"{str(e).splitlines()[0]}") from None


@pytest.mark.parametrize("mod", [False, True], ids=["add", "mod"])
@pytest.mark.parametrize("a", NAMES)
def test_every_pair_of_tensor_types(a, mod):
    for b in NAMES:
        if mod and "int1" in (a, b):
            continue  # % of booleans: not arithmetic in Triton either
        check(a, b, "none", mod, expected(a, b, div_or_mod=mod))


@pytest.mark.parametrize("scalar,scalar_type", [("bool", "int1"), ("int", "int32"),
                                                ("float", "float32")])
@pytest.mark.parametrize("a", NAMES)
def test_tensor_with_a_python_scalar(a, scalar, scalar_type):
    if scalar == "bool" and a != "int1":
        return check(a, "int1", scalar, False, expected(a, scalar_type, b_scalar=True))
    want = expected(a, scalar_type, b_scalar=True)
    if want is not None and unsigned(want) is False and scalar == "int" and a == "int1":
        want = "int32"
    check(a, "int1", scalar, False, want)


@tilec.jit
def shift_right_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))


def test_right_shift_of_a_signed_value_by_an_unsigned_one_is_arithmetic(rng):
    """int8 >> uint8 promotes to uint8 but shifts arithmetically, as Triton does."""
    x = rng.integers(-128, 128, 64).astype(np.int8)
    y = rng.integers(0, 8, 64).astype(np.uint8)
    out = np.zeros(64, np.uint8)
    shift_right_kernel[(1,)](x, y, out, N=64)
    np.testing.assert_array_equal(out, (x >> y.astype(np.int8)).view(np.uint8))
