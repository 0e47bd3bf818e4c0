"""Kernels of the wider language (sort, scans, reductions with a combine function,
gather, histogram, dot_scaled), written for Triton. benchmarks/language_ops.py loads
this file twice: with the real Triton, and with `triton` aliased to tilec."""

import triton
import triton.language as tl


@triton.jit
def sort_rows_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    offs = (tl.program_id(0) * ROWS + tl.arange(0, ROWS))[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs), dim=1))


@triton.jit
def topk_rows_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    x = tl.load(x_ptr + rows[:, None] * COLS + tl.arange(0, COLS)[None, :])
    tl.store(out_ptr + rows[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K, dim=1))


@triton.jit
def cumsum_rows_kernel(x_ptr, out_ptr, COLS: tl.constexpr):
    offs = tl.program_id(0) * COLS + tl.arange(0, COLS)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def cumprod_scan_kernel(x_ptr, out_ptr, COLS: tl.constexpr):
    offs = tl.program_id(0) * COLS + tl.arange(0, COLS)
    tl.store(out_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 0, _mul_combine))


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    keep = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(keep, v1, v2), tl.where(keep, i1, i2)


@triton.jit
def argmax_reduce_kernel(x_ptr, out_ptr, COLS: tl.constexpr):
    cols = tl.arange(0, COLS)
    x = tl.load(x_ptr + tl.program_id(0) * COLS + cols)
    _, i = tl.reduce((x, cols), 0, _argmax_combine)
    tl.store(out_ptr + tl.program_id(0), i)


@triton.jit
def gather_rows_kernel(x_ptr, idx_ptr, out_ptr, COLS: tl.constexpr):
    offs = tl.program_id(0) * COLS + tl.arange(0, COLS)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(x, tl.load(idx_ptr + offs), 0))


@triton.jit
def histogram_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    h = tl.histogram(x, BINS)
    tl.atomic_add(out_ptr + tl.arange(0, BINS), h)


@triton.jit
def mxfp8_matmul_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = (A * 2^sa) @ (B * 2^sb): A [M, K] e4m3 bytes, B [K, N], scales per 32 of K."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rs = tl.arange(0, BLOCK_K // 32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + (k // 32 + rs)[None, :])
        sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + (k // 32 + rs)[None, :])
        acc = tl.dot_scaled(a, sa, "e4m3", b, sb, "e4m3", acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
