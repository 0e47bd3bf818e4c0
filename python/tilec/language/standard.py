"""Helpers of Triton's standard library that are written in the kernel
language itself (as tl.rand is, in random.py)."""

from . import core as tl

from ..runtime.jit import jit


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Maps (i, j) of a size_i x size_j grid so that consecutive indices walk
    columns of groups of `size_g` rows (grouped ordering: neighbouring programs
    share rows of A and columns of B in L2). Returns the new (i, j)."""
    linear = i * size_j + j
    group_size = size_g * size_j
    first_row = (linear // group_size) * size_g
    rows = tl.minimum(size_i - first_row, size_g)  # the last group may be short
    within = linear % group_size
    return first_row + within % rows, within // rows


# --- tl.dot_scaled: microscaled operands upcast to bf16, then tl.dot (as Triton
# emulates it on GPUs without native microscaling, Hopper among them).

@jit
def _e8m0_to_float(s):
    """2**(s - 127) for e8m0 scale bytes: 0 is 2**-127 (a subnormal), 255 is NaN."""
    s = s.to(tl.uint32)
    bits = tl.where(s == 0, 0x400000, tl.where(s == 255, 0x7FC00000, s << 23))
    return bits.to(tl.float32, bitcast=True)


@jit
def _e2m1_to_float(n):
    """The value of fp4 (e2m1) nibbles: sign, two exponent bits (bias 1), one mantissa bit."""
    e = (n >> 1) & 3
    m = n & 1
    twice = tl.where(e == 0, m, (2 + m) << tl.maximum(e - 1, 0))  # 2x the magnitude
    v = twice.to(tl.float32) * 0.5
    return tl.where((n & 8) != 0, -v, v)


@jit
def _unpack_e2m1(x, AXIS: tl.constexpr):
    """Two fp4 values per byte, the first in the low bits: `x` with dim AXIS doubled."""
    b = x.to(tl.uint8, bitcast=True).to(tl.int32)
    pair = tl.join(_e2m1_to_float(b & 15), _e2m1_to_float(b >> 4))  # the pair dim last
    RANK: tl.constexpr = len(x.shape)
    if RANK == 2:
        if AXIS == 1:
            return tl.reshape(pair, (x.shape[0], x.shape[1] * 2))
        return tl.reshape(tl.permute(pair, (0, 2, 1)), (x.shape[0] * 2, x.shape[1]))
    if AXIS == 2:
        return tl.reshape(pair, (x.shape[0], x.shape[1], x.shape[2] * 2))
    return tl.reshape(tl.permute(pair, (0, 1, 3, 2)), (x.shape[0], x.shape[1] * 2, x.shape[2]))


@jit
def _decode_operand(x, FORMAT: tl.constexpr, PACK_AXIS: tl.constexpr):
    """The values of a dot_scaled operand, in fp32."""
    if FORMAT == "e2m1":
        return _unpack_e2m1(x, PACK_AXIS)
    elif FORMAT == "e4m3":
        return x.to(tl.float8e4nv, bitcast=True).to(tl.float32)
    elif FORMAT == "e5m2":
        return x.to(tl.float8e5, bitcast=True).to(tl.float32)
    elif FORMAT == "bf16":
        return x.to(tl.bfloat16, bitcast=True).to(tl.float32)
    else:
        tl.static_assert(FORMAT == "fp16", "dot_scaled formats are e2m1, e4m3, e5m2, bf16 and fp16")
        return x.to(tl.float16, bitcast=True).to(tl.float32)


@jit
def _scale_lhs(v, scale):
    """v [..., M, K] times 2**(scale - 127), scale [..., M, K // G] (one per G along K)."""
    RANK: tl.constexpr = len(v.shape)
    K: tl.constexpr = v.shape[RANK - 1]
    GROUPS: tl.constexpr = scale.shape[RANK - 1]
    tl.static_assert(K % GROUPS == 0, "dot_scaled: lhs_scale's last dim must divide K")
    f = tl.expand_dims(_e8m0_to_float(scale), RANK)
    if RANK == 2:
        g = tl.reshape(v, (v.shape[0], GROUPS, K // GROUPS)) * f
    else:
        g = tl.reshape(v, (v.shape[0], v.shape[1], GROUPS, K // GROUPS)) * f
    return tl.reshape(g, v.shape)


@jit
def _scale_rhs(v, scale):
    """v [..., K, N] times 2**(scale - 127), scale [..., N, K // G] (not transposed)."""
    RANK: tl.constexpr = len(v.shape)
    K: tl.constexpr = v.shape[RANK - 2]
    GROUPS: tl.constexpr = scale.shape[RANK - 1]
    tl.static_assert(K % GROUPS == 0, "dot_scaled: rhs_scale's last dim must divide K")
    if RANK == 2:
        f = tl.expand_dims(tl.trans(_e8m0_to_float(scale)), 1)  # [GROUPS, 1, N]
        g = tl.reshape(v, (GROUPS, K // GROUPS, v.shape[1])) * f
    else:
        f = tl.expand_dims(tl.permute(_e8m0_to_float(scale), (0, 2, 1)), 2)
        g = tl.reshape(v, (v.shape[0], GROUPS, K // GROUPS, v.shape[2])) * f
    return tl.reshape(g, v.shape)


@jit
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=tl.float32):
    """The matrix product of microscaled (OCP MX) operands: fp4 (e2m1, two per byte),
    fp8 (e4m3, e5m2, as uint8 or fp8) or bf16/fp16, each group of K elements scaled
    by 2**(e8m0 byte - 127). The operands are decoded and scaled exactly, rounded
    to fp16 when either operand is fp16, else to bf16 (as in Triton's emulation),
    and multiplied with an fp32 accumulator."""
    tl.static_assert(out_dtype == tl.float32, "dot_scaled: out_dtype must be tl.float32")
    tl.static_assert(lhs_k_pack or lhs_format == "e2m1",
                     "dot_scaled: only e2m1 operands can be packed along M or N")
    tl.static_assert(rhs_k_pack or rhs_format == "e2m1",
                     "dot_scaled: only e2m1 operands can be packed along M or N")
    RANK: tl.constexpr = len(lhs.shape)
    a = _decode_operand(lhs, lhs_format, RANK - 1 if lhs_k_pack else RANK - 2)
    b = _decode_operand(rhs, rhs_format, RANK - 2 if rhs_k_pack else RANK - 1)
    if lhs_scale is not None:
        a = _scale_lhs(a, lhs_scale)
    if rhs_scale is not None:
        b = _scale_rhs(b, rhs_scale)
    if lhs_format == "fp16" or rhs_format == "fp16":
        return tl.dot(a.to(tl.float16), b.to(tl.float16), acc=acc, out_dtype=tl.float32)
    return tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc=acc, out_dtype=tl.float32)
