"""tl.rand, tl.randn, tl.randint and tl.randint4x: Philox-4x32-10, checked bit
for bit against a numpy Philox written from the algorithm, on every backend.
(tests/test_gpu.py compares with Triton itself where both run.)"""

import numpy as np
import pytest

import tilec
import tilec.language as tl

pytestmark = pytest.mark.usefixtures("device")

M32 = np.uint64(0xFFFFFFFF)


def philox_reference(seed, offsets, rounds=10, wide=False):
    """Philox-4x32 on counters (offset low, offset high (0 unless `wide`), 0, 0)
    and key (seed low, seed high)."""
    c0 = offsets.astype(np.int64).astype(np.uint64) & M32
    c1 = (offsets.astype(np.int64).astype(np.uint64) >> np.uint64(32)) if wide else c0 * 0
    c2 = c3 = np.zeros_like(c0)
    k0 = np.uint64(seed & 0xFFFFFFFF)
    k1 = np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(rounds):
        p0 = c0 * np.uint64(0xD2511F53)
        p1 = c2 * np.uint64(0xCD9E8D57)
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32, (p0 >> np.uint64(32)) ^ c3 ^ k1, \
            p0 & M32
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    return [c.astype(np.uint32) for c in (c0, c1, c2, c3)]


def uniform_reference(bits):
    s = bits.view(np.int32).astype(np.int64)
    s = np.where(s < 0, -s - 1, s)
    return (s.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


@tilec.jit
def random_kernel(r0, r1, r2, r3, u_ptr, n_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) - 100  # negative offsets too
    m = offs + 100 < n
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(r0 + offs + 100, a, mask=m)
    tl.store(r1 + offs + 100, b, mask=m)
    tl.store(r2 + offs + 100, c, mask=m)
    tl.store(r3 + offs + 100, d, mask=m)
    tl.store(u_ptr + offs + 100, tl.rand(seed, offs), mask=m)
    tl.store(n_ptr + offs + 100, tl.randn(seed, offs), mask=m)


@pytest.mark.parametrize("seed", [0, 1234, 2**40 + 7])
def test_philox_bits_rand_and_randn(seed):
    n = 1000
    ints = [np.zeros(n, np.uint32) for _ in range(4)]
    u, g = np.zeros(n, np.float32), np.zeros(n, np.float32)
    random_kernel[(tilec.cdiv(n, 256),)](*ints, u, g, seed, n, BLOCK=256)
    offsets = np.arange(n, dtype=np.int64) - 100
    ref = philox_reference(seed, offsets)
    for got, want in zip(ints, ref):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(u, uniform_reference(ref[0]))
    u1 = np.maximum(np.float32(1e-7), uniform_reference(ref[0]).astype(np.float64))
    u2 = uniform_reference(ref[1]).astype(np.float64)
    normal = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    np.testing.assert_allclose(g, normal, rtol=2e-5, atol=2e-5)  # log, cos: a few ulp of f32


@tilec.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """Triton's low-memory dropout: the mask comes from (seed, offset) alone."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)


def test_low_memory_dropout(rng):
    n, p, seed = 777, 0.3, 42
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    out, again = np.zeros(n, np.float32), np.zeros(n, np.float32)
    dropout_kernel[(tilec.cdiv(n, 128),)](x, out, n, p, seed, BLOCK=128)
    dropout_kernel[(tilec.cdiv(n, 128),)](x, again, n, p, seed, BLOCK=128)
    keep = uniform_reference(philox_reference(seed, np.arange(n))[0]) > np.float32(p)
    np.testing.assert_allclose(out, np.where(keep, x / np.float32(1 - p), 0), rtol=1e-6)
    np.testing.assert_array_equal(out, again)  # the same seed, the same mask
    assert 0.2 < 1 - keep.mean() < 0.4


@tilec.jit
def seed_constant_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.randint(7, offs, n_rounds=6))


def test_constant_seed_and_fewer_rounds():
    out = np.zeros(64, np.uint32)
    seed_constant_kernel[(1,)](out, BLOCK=64)
    np.testing.assert_array_equal(out, philox_reference(7, np.arange(64), rounds=6)[0])


@tilec.jit
def wide_offsets_kernel(out_ptr, u_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    wide = offs.to(tl.int64) * 3 + 2**33 + 5
    tl.store(out_ptr + offs, tl.randint(seed, wide))
    tl.store(u_ptr + offs, tl.rand(seed, wide))


def test_64_bit_offsets_use_both_words():
    out, u = np.zeros(128, np.uint32), np.zeros(128, np.float32)
    wide_offsets_kernel[(1,)](out, u, 99, BLOCK=128)
    ref = philox_reference(99, np.arange(128, dtype=np.int64) * 3 + 2**33 + 5, wide=True)[0]
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(u, uniform_reference(ref))
