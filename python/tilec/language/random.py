"""Random numbers inside kernels, from a counter: Philox-4x32 (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3"), the generator behind Triton's
``tl.rand``, ``tl.randn``, ``tl.randint`` and ``tl.randint4x``. The same
(seed, offset) gives the same bits as Triton, on the CPU backend and the GPU.

Written in the kernel language itself: each function is a @jit helper that a
kernel calls as ``tl.rand(seed, offsets)``.
"""

from . import core as tl

from ..runtime.jit import jit

# Philox-4x32's multipliers and its Weyl-sequence key increments.
MULTIPLIER_0 = 0xD2511F53
MULTIPLIER_1 = 0xCD9E8D57
KEY_STEP_0 = 0x9E3779B9
KEY_STEP_1 = 0xBB67AE85
N_ROUNDS_DEFAULT = 10


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) under the key (k0, k1);
    every operand uint32."""
    for _ in tl.static_range(n_rounds):
        hi0 = tl.umulhi(c0, MULTIPLIER_0)
        lo0 = c0 * MULTIPLIER_0
        hi1 = tl.umulhi(c2, MULTIPLIER_1)
        lo1 = c2 * MULTIPLIER_1
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = k0 + KEY_STEP_0
        k1 = k1 + KEY_STEP_1
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox with the key taken from a 64-bit seed (low word first); the counters
    are 32-bit integers, read as uint32."""
    tl.static_assert(c0.dtype.primitive_bitwidth == 32,
                     "tl.philox: the counters must be 32-bit integers (randint4x splits "
                     "64-bit offsets into two)")
    wide = tl.to_tensor(seed).to(tl.uint64)
    k0 = (wide & 0xFFFFFFFF).to(tl.uint32)
    k1 = ((wide >> 32) & 0xFFFFFFFF).to(tl.uint32)
    return philox_impl(c0.to(tl.uint32, bitcast=True), c1.to(tl.uint32, bitcast=True),
                       c2.to(tl.uint32, bitcast=True), c3.to(tl.uint32, bitcast=True), k0, k1,
                       n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for the block of `offset`s under the scalar `seed`:
    the counter is (offset's low word, its high word (0 for 32-bit offsets), 0, 0)."""
    low = offset.to(tl.uint32)
    zero = low * 0
    if offset.dtype.primitive_bitwidth > 32:
        high = (offset >> 32).to(tl.uint32)
    else:
        high = zero
    return philox(seed, low, high, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """One block of random uint32: the first of randint4x's four."""
    first, _, _, _ = randint4x(seed, offset, n_rounds)
    return first


@jit
def uint_to_uniform_float(x):
    """A random uint32 (or uint64) to a float32 in [0, 1): the bits read as a signed
    integer, folded onto the non-negative ones, times the largest scale that keeps
    the largest of them below 1 in float32."""
    if x.dtype.primitive_bitwidth == 32:
        s = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        s = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    s = tl.where(s < 0, -s - 1, s)
    return s * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 uniform in [0, 1)."""
    i0, i1, i2, i3 = randint4x(seed, offset, n_rounds)
    return (uint_to_uniform_float(i0), uint_to_uniform_float(i1), uint_to_uniform_float(i2),
            uint_to_uniform_float(i3))


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two independent standard normal ones."""
    u1 = tl.maximum(1.0e-7, u1)
    angle = 6.283185307179586 * u2
    radius = tl.sqrt(-2.0 * tl.log(u1))
    return radius * tl.cos(angle), radius * tl.sin(angle)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 from the standard normal distribution."""
    i0, i1, _, _ = randint4x(seed, offset, n_rounds)
    n0, _ = pair_uniform_to_normal(uint_to_uniform_float(i0), uint_to_uniform_float(i1))
    return n0


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 from the standard normal distribution."""
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3
