"""tilec's CPU backend against Triton's interpreter (TRITON_INTERPRET=1) and
numpy, on the same kernels, measured in the same run.

The kernels are written once, against `triton.language`, and handed unchanged
to both `tilec.jit` and `triton.jit`. Without Triton installed, only tilec and
numpy are measured.

    python benchmarks/cpu_backend.py
"""

import os
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import numpy as np  # noqa: E402

import tilec  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from _timing import best_ms  # noqa: E402

try:
    import torch
    import triton
    import triton.language as tl
except ImportError:  # measure tilec alone
    torch = triton = None
    import tilec.language as tl


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


def cases():
    rng = np.random.default_rng(0)
    n = 1 << 20
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    yield ("vector add, 1M fp32", add_kernel, (tilec.cdiv(n, 1024),),
           lambda: (x, y, out, n), dict(BLOCK=1024), lambda: x + y, lambda: out)
    m = 256
    a, b = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    c = np.empty((m, m), np.float32)
    yield ("matmul 256x256x256 fp32", matmul_kernel, (m // 64, m // 64),
           lambda: (a, b, c, m, m, m), dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32), lambda: a @ b,
           lambda: c)
    rows, cols = 4096, 781
    s = rng.standard_normal((rows, cols), dtype=np.float32)
    so = np.empty_like(s)
    yield ("softmax 4096x781 fp32", softmax_kernel, (rows,), lambda: (so, s, cols),
           dict(BLOCK=1024), lambda: np.exp(s) / np.exp(s).sum(1, keepdims=True), lambda: so)


def main():
    print(f"{'kernel':<26}{'tilec cold':>12}{'tilec warm':>12}{'triton interp':>15}"
          f"{'numpy':>10}{'interp/tilec':>14}")
    for name, fn, grid, args, meta, ref, result in cases():
        tk = tilec.jit(fn)
        start = time.perf_counter()
        tk[grid](*args(), **meta)
        cold = (time.perf_counter() - start) * 1e3
        np.testing.assert_allclose(result(), ref(), rtol=1e-2, atol=5e-2)
        warm = best_ms(lambda: tk[grid](*args(), **meta), 5)
        numpy_ms = best_ms(ref, 5)
        interp = float("nan")
        if triton is not None:
            trk = triton.jit(fn)
            targs = [torch.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args()]
            try:
                interp = best_ms(lambda: trk[grid](*targs, **meta), 2)
            except Exception as e:  # the interpreter fails on some kernels; say so, go on
                print(f"  Triton's interpreter failed on {name}: {type(e).__name__}: {e}")
        print(f"{name:<26}{cold:>10.1f}ms{warm:>10.1f}ms{interp:>13.1f}ms{numpy_ms:>8.2f}ms"
              f"{interp / warm:>13.1f}x")


if __name__ == "__main__":
    main()
