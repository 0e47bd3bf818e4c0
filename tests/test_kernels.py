"""End-to-end kernels on the CPU backend, each checked against numpy."""

import numpy as np
import pytest

import tilec
import tilec.language as tl

from conftest import nonzero

pytestmark = pytest.mark.usefixtures("device")


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@pytest.mark.parametrize("n", [1, 17, 1000, 4097])
def test_vector_add_masked_odd_size(rng, n):
    x, y = nonzero(rng, n), nonzero(rng, n)
    out = np.zeros_like(x)
    add_kernel[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_grid_lambda(rng):
    n = 3001
    x, y = nonzero(rng, n), nonzero(rng, n)
    out = np.zeros_like(x)
    add_kernel[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_torch_tensors():
    torch = pytest.importorskip("torch")
    n = 999
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(tilec.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    assert torch.equal(out, x + y)


@tilec.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=m)


def test_relu(rng):
    n = 777
    x = nonzero(rng, n)
    out = np.full_like(x, 42.0)
    relu_kernel[(tilec.cdiv(n, 64),)](x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


@tilec.jit
def add2d_kernel(a_ptr, b_ptr, c_ptr, M, N, stride_m, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs = rm[:, None] * stride_m + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


def test_2d_add_on_2d_grid(rng):
    M, N = 45, 77
    a, b = nonzero(rng, (M, N)), nonzero(rng, (M, N))
    c = np.zeros_like(a)
    grid = (tilec.cdiv(M, 16), tilec.cdiv(N, 32))
    add2d_kernel[grid](a, b, c, M, N, a.strides[0] // 4, BLOCK_M=16, BLOCK_N=32)
    np.testing.assert_array_equal(c, a + b)


@tilec.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@pytest.mark.parametrize("n_rows,n_cols", [(1, 1), (7, 100), (33, 781)])
def test_row_softmax(rng, n_rows, n_cols):
    x = nonzero(rng, (n_rows, n_cols))
    out = np.zeros_like(x)
    block = tilec.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](out, x, x.strides[0] // 4, out.strides[0] // 4, n_cols, BLOCK=block)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@tilec.jit
def streamed_norm_kernel(y_ptr, x_ptr, stats_ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """Group norm's shape: a reduction loop that asks for its loads to be
    copied ahead, then a normalizing loop that stores (and so runs as written)."""
    x_ptr += tl.program_id(0) * n
    y_ptr += tl.program_id(0) * n
    cols = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    total_sq = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        x = tl.load(x_ptr + start + cols, mask=start + cols < n, other=0.0).to(tl.float32)
        total += x
        total_sq += x * x
    mean = tl.sum(total, axis=0) / n
    rstd = tl.rsqrt(tl.sum(total_sq, axis=0) / n - mean * mean + 1e-5)
    tl.store(stats_ptr + 2 * tl.program_id(0), mean)
    tl.store(stats_ptr + 2 * tl.program_id(0) + 1, rstd)
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        mask = start + cols < n
        x = tl.load(x_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + start + cols, ((x - mean) * rstd).to(y_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n,stages", [(1000, 3), (4096, 4), (77, 2), (5000, 1)])
def test_streamed_reduction_copied_ahead(rng, dtype, n, stages):
    rows, block = 5, 256
    x = nonzero(rng, (rows, n)).astype(dtype)
    y = np.zeros_like(x)
    stats = np.zeros((rows, 2), np.float32)
    streamed_norm_kernel[(rows,)](y, x, stats, n, BLOCK=block, STAGES=stages)
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=1), xf.var(axis=1)
    np.testing.assert_allclose(stats[:, 0], mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats[:, 1], 1 / np.sqrt(var + 1e-5), rtol=1e-3)
    ref = (xf - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    tol = 1e-3 if dtype == np.float32 else 1e-2
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol)


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def run_matmul(a, b, c, **blocks):
    M, K = a.shape
    _, N = b.shape
    es = a.itemsize
    grid = lambda meta: (tilec.cdiv(M, meta["BLOCK_M"]), tilec.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // es, a.strides[1] // es,
                        b.strides[0] // es, b.strides[1] // es, c.strides[0] // c.itemsize,
                        c.strides[1] // c.itemsize, **blocks)


@pytest.mark.parametrize("M,N,K", [(37, 45, 53), (64, 16, 129)])
def test_matmul_fp32(rng, M, N, K):
    a, b = nonzero(rng, (M, K)), nonzero(rng, (K, N))
    c = np.zeros((M, N), np.float32)
    run_matmul(a, b, c, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)
    # fp32 dot uses tf32 inputs by default, as on tensor cores.
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=2e-2, atol=5e-2)


def test_matmul_fp16_inputs(rng):
    M, N, K = 50, 33, 70
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    run_matmul(a, b, c, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-1)


@tilec.jit
def imprecise_span_matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, SPAN: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc=acc, max_num_imprecise_acc=SPAN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("span", [None, 0, 32, 64])
def test_fp8_matmul_with_max_num_imprecise_acc(rng, span):
    torch = pytest.importorskip("torch")
    K = 256
    a = torch.from_numpy(nonzero(rng, (64, K), low=0.5, high=2.0)).to(torch.float8_e5m2)
    b = torch.from_numpy(nonzero(rng, (K, 64), low=0.5, high=2.0)).to(torch.float8_e5m2)
    c = torch.zeros(64, 64)
    imprecise_span_matmul_kernel[(1,)](a, b, c, K, BM=64, BN=64, BK=64, SPAN=span)
    ref = a.to(torch.float64) @ b.to(torch.float64)
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=2e-3, atol=5e-2)


@pytest.mark.parametrize("b_k_major", [True, False])
def test_matmul_fp32_inputs_fp16_out(rng, b_k_major):
    """tf32 tiles of a matmul that stores fp16: the tiles are copied in 16-byte
    vectors of their own fp32 (not of fp16's 8 elements), pipelined on sm_90a."""
    torch = pytest.importorskip("torch")
    M, N, K = 150, 131, 200
    a = torch.from_numpy(nonzero(rng, (M, K)))
    b_rows = torch.from_numpy(nonzero(rng, (N, K) if b_k_major else (K, N)))
    b = b_rows.T if b_k_major else b_rows
    c = torch.zeros(M, N, dtype=torch.float16)
    grid = (tilec.cdiv(M, 64), tilec.cdiv(N, 64))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                        num_warps=4, num_stages=3)
    ref = a.to(torch.float64) @ b.to(torch.float64)
    np.testing.assert_allclose(c.float().numpy(), ref.numpy(), rtol=2e-2, atol=1e-1)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("b_k_major", [True, False])
@pytest.mark.parametrize("blocks", [(64, 64, 64, 4, 2), (128, 128, 64, 8, 3), (16, 32, 32, 1, 2)])
def test_matmul_fp8_inputs(rng, fmt, b_k_major, blocks):
    """fp8 matmul (tutorial 03's fp8 case has B K-major): on sm_90a wgmma
    k32 with the tiles pipelined, on mma.sync at one warp."""
    torch = pytest.importorskip("torch")
    bm, bn, bk, warps, stages = blocks
    M, N, K = 150, 131, 200
    dt = getattr(torch, fmt)
    a = torch.from_numpy(nonzero(rng, (M, K), low=0.5, high=2.0)).to(dt)
    b_rows = torch.from_numpy(nonzero(rng, (N, K) if b_k_major else (K, N), low=0.5, high=2.0))
    b = b_rows.to(dt).T if b_k_major else b_rows.to(dt)
    c = torch.zeros(M, N, dtype=torch.float32)
    grid = (tilec.cdiv(M, bm), tilec.cdiv(N, bn))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                        num_warps=warps, num_stages=stages)
    ref = a.to(torch.float64) @ b.to(torch.float64)
    # Hopper's fp8 wgmma adds products at less than f32 precision (as in
    # Triton and cuBLAS without their promotion): e4m3's wider products show it.
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=2e-3, atol=5e-2)


@tilec.jit
def dot_ieee_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    acc = tl.full((N, N), 1.0, tl.float32)
    c = tl.dot(a, b, acc=acc, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)


def test_dot_ieee_with_acc(rng):
    n = 32
    a, b = nonzero(rng, (n, n)), nonzero(rng, (n, n))
    c = np.zeros((n, n), np.float32)
    dot_ieee_kernel[(1,)](a, b, c, N=n)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b + 1.0, rtol=1e-5, atol=1e-5)


@tilec.jit
def dot_of_a_dot_kernel(a_ptr, b_ptr, x_ptr, y_ptr, d_ptr, c_ptr, pt_ptr, M: tl.constexpr,
                        N: tl.constexpr, K: tl.constexpr, P_IS_B: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    x = tl.load(x_ptr + m[:, None] * N + n[None, :])  # to the accumulator's layout
    p = tl.dot(a, b).to(a.dtype) * x  # M x N, in the accumulator's layout
    y = tl.load(y_ptr + n[:, None] * M + m[None, :])  # to the transposed accumulator's
    tl.store(pt_ptr + n[:, None] * M + m[None, :], tl.trans(p) * y)
    if P_IS_B:
        d = tl.load(d_ptr + m[:, None] * K + k[None, :])
        c = tl.dot(tl.trans(d), p)  # K x N
        tl.store(c_ptr + k[:, None] * N + n[None, :], c.to(a.dtype))
    else:
        d = tl.load(d_ptr + n[:, None] * K + k[None, :])
        c = tl.dot(p, d)  # M x K
        tl.store(c_ptr + m[:, None] * K + k[None, :], c.to(a.dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("p_is_b", [False, True])
@pytest.mark.parametrize("M,N,K,warps", [(64, 64, 32, 4), (128, 64, 64, 4), (64, 32, 16, 4),
                                         (128, 128, 64, 8), (16, 16, 16, 1)])
def test_a_dot_of_a_dot_result(rng, dtype, p_is_b, M, N, K, warps):
    """A 16-bit dot result fed to another dot as either operand, and stored
    transposed: on sm_90 the accumulator's fragments go to shared memory by
    whole 8x8 matrices (stmatrix; .trans for the transposed store), in groups
    of 1, 2 or 4; loaded tiles come to the accumulator's layout (and to its
    transpose) by ldmatrix (.trans)."""
    torch = pytest.importorskip("torch")
    dt = getattr(torch, dtype)
    a = torch.from_numpy(nonzero(rng, (M, K), low=0.25, high=1.0)).to(dt)
    b = torch.from_numpy(nonzero(rng, (K, N), low=0.25, high=1.0)).to(dt)
    x = torch.from_numpy(nonzero(rng, (M, N), low=0.5, high=1.0)).to(dt)
    y = torch.from_numpy(nonzero(rng, (N, M), low=0.5, high=1.0)).to(dt)
    d = torch.from_numpy(nonzero(rng, (M, K) if p_is_b else (N, K), low=0.25, high=1.0)).to(dt)
    c = torch.zeros((K, N) if p_is_b else (M, K), dtype=dt)
    pt = torch.zeros((N, M), dtype=dt)
    dot_of_a_dot_kernel[(1,)](a, b, x, y, d, c, pt, M=M, N=N, K=K, P_IS_B=p_is_b,
                              num_warps=warps)
    p = ((a.double() @ b.double()).to(dt).double() * x.double()).to(dt).double()
    np.testing.assert_allclose(pt.double().numpy(), (p.T * y.double()).numpy(), rtol=2e-2,
                               atol=2e-2)
    ref = d.double().T @ p if p_is_b else p @ d.double()
    tol = 2e-2 if dtype == "bfloat16" else 4e-3
    np.testing.assert_allclose(c.double().numpy(), ref.numpy(), rtol=tol, atol=tol * N)


@tilec.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + cols, y, mask=mask)


def test_layer_norm_forward(rng):
    M, N = 19, 300
    x = nonzero(rng, (M, N))
    w, b = nonzero(rng, N), nonzero(rng, N)
    y = np.zeros_like(x)
    mean = np.zeros(M, np.float32)
    rstd = np.zeros(M, np.float32)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.strides[0] // 4, N, 1e-5,
                         BLOCK=tilec.next_power_of_2(N))
    ref_mean = x.mean(axis=1)
    ref_var = x.var(axis=1)
    ref_rstd = 1 / np.sqrt(ref_var + 1e-5)
    ref = (x - ref_mean[:, None]) * ref_rstd[:, None] * w + b
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-4)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


@tilec.jit
def _scaled(x, factor):
    return x * factor


@tilec.jit
def _bias_and_scale(x, bias, SCALE: tl.constexpr):
    y = _scaled(x, SCALE) + bias
    return y, SCALE


@tilec.jit
def helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y, s = _bias_and_scale(x, 1.5, SCALE=3.0)
    tl.store(out_ptr + offs, y + s, mask=m)


def test_kernel_calling_jit_helpers(rng):
    n = 130
    x = nonzero(rng, n)
    out = np.zeros_like(x)
    helper_kernel[(tilec.cdiv(n, 64),)](x, out, n, BLOCK=64)
    np.testing.assert_allclose(out, x * 3.0 + 1.5 + 3.0, rtol=1e-6)


@tilec.jit
def early_exit_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < n)


def test_early_return(rng):
    x = np.full(100, -1.0, np.float32)
    early_exit_kernel[(10,)](x, 100, BLOCK=16)
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32))


@tilec.jit
def while_kernel(out_ptr, n):
    i = 0
    total = 0
    while i < n:
        total += i
        i += 1
    tl.store(out_ptr, total)


def test_while_loop():
    out = np.zeros(1, np.int32)
    while_kernel[(1,)](out, 10)
    assert out[0] == 45


@tilec.jit
def if_else_kernel(x_ptr, out_ptr, threshold):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if x > threshold:
        y = x * 2.0
    elif x > 0:
        y = x + 100.0
    else:
        y = -x
    tl.store(out_ptr + pid, y)


def test_runtime_if_elif_else(rng):
    x = nonzero(rng, 64)
    out = np.zeros_like(x)
    if_else_kernel[(64,)](x, out, 1.0)
    ref = np.where(x > 1.0, x * 2, np.where(x > 0, x + 100, -x))
    np.testing.assert_allclose(out, ref, rtol=1e-6)


@pytest.mark.cpu_only
def test_compile_cache_reuses_specialization(rng):
    x, y = nonzero(rng, 64), nonzero(rng, 64)
    out = np.zeros_like(x)
    add_kernel.cache.clear()
    add_kernel[(1,)](x, y, out, 64, BLOCK=64)
    add_kernel[(1,)](x, y, out, 64, BLOCK=64)
    assert len(add_kernel.cache) == 1
    add_kernel[(2,)](x, y, out, 63, BLOCK=32)  # 63 is not a multiple of 16: a new specialization
    assert len(add_kernel.cache) == 2


@pytest.mark.cpu_only
def test_out_of_bounds_access_is_an_error_not_a_crash(rng):
    x, y = nonzero(rng, 10), nonzero(rng, 10)
    out = np.zeros_like(x)
    with pytest.raises(tilec.KernelError, match="out-of-bounds load"):
        add_kernel[(1,)](x, y, out, 10_000, BLOCK=1024)


def test_kernel_written_against_real_triton_language(rng):
    """A kernel whose `tl` is Triton's own module (and its constexpr) runs unchanged."""
    triton = pytest.importorskip("triton")
    if triton.jit is tilec.jit:
        pytest.skip("tilec.compat has replaced triton in this process")
    import triton.language as ttl

    def scale(x_ptr, out_ptr, n, FACTOR: ttl.constexpr, BLOCK: ttl.constexpr):
        offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
        m = offs < n
        ttl.store(out_ptr + offs, ttl.load(x_ptr + offs, mask=m) * FACTOR, mask=m)

    kernel = tilec.jit(scale)
    x = nonzero(rng, 100)
    out = np.zeros_like(x)
    kernel[(2,)](x, out, 100, FACTOR=ttl.constexpr(3.0), BLOCK=64)
    np.testing.assert_allclose(out, x * 3.0)


@tilec.jit
def to_fp8_and_back(x_ptr, out_ptr, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(FP8).to(tl.float32), mask=m)


@pytest.mark.parametrize("fp8,torch_name", [(tl.float8e4nv, "float8_e4m3fn"),
                                             (tl.float8e5, "float8_e5m2")])
def test_fp8_rounding_matches_torch(rng, fp8, torch_name):
    torch = pytest.importorskip("torch")
    x = nonzero(rng, 100, low=0.01, high=200.0)
    out = np.zeros_like(x)
    to_fp8_and_back[(1,)](x, out, 100, FP8=fp8, BLOCK=128)
    ref = torch.from_numpy(x).to(getattr(torch, torch_name)).to(torch.float32).numpy()
    np.testing.assert_array_equal(out, ref)


@tilec.jit
def fp8_buffers(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


def test_fp8_loads_and_stores(rng):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(nonzero(rng, 64, low=0.1, high=50.0)).to(torch.float8_e5m2)
    out = torch.zeros(64, dtype=torch.float8_e5m2)
    fp8_buffers[(1,)](x, out, BLOCK=64)
    assert torch.equal(out.to(torch.float32), (x.to(torch.float32) * 2).to(torch.float8_e5m2)
                       .to(torch.float32))


@tilec.jit
def annotated_and_asserts(x_ptr, n, BLOCK: tl.constexpr):
    HALF: tl.constexpr = BLOCK // 2
    assert HALF * 2 == BLOCK, "BLOCK must be even"
    offs = tl.arange(0, HALF)
    assert n > 0, "n must be positive"
    tl.store(x_ptr + offs, offs.to(tl.float32) + n)


@pytest.mark.cpu_only
def test_annotated_constexpr_and_assert_statements():
    x = np.zeros(8, np.float32)
    annotated_and_asserts[(1,)](x, 3, BLOCK=16)
    np.testing.assert_array_equal(x, np.arange(8) + 3.0)
    with pytest.raises(tilec.KernelError, match="device assertion failed.*n must be positive"):
        annotated_and_asserts[(1,)](x, -3, BLOCK=16)


@pytest.mark.cpu_only
def test_constexpr_assert_fails_at_compile_time():
    x = np.zeros(8, np.float32)
    with pytest.raises(tilec.CompilationError, match="assertion failed: BLOCK must be even"):
        annotated_and_asserts[(1,)](x, 3, BLOCK=1)


SCALE = tl.constexpr(2.0)


@tilec.jit
def scale_by_global(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)


def test_changed_constexpr_global_recompiles():
    global SCALE
    x = np.ones(16, np.float32)
    scale_by_global[(1,)](x, BLOCK=16)
    np.testing.assert_array_equal(x, 2.0)
    SCALE = tl.constexpr(3.0)
    try:
        scale_by_global[(1,)](x, BLOCK=16)
    finally:
        SCALE = tl.constexpr(2.0)
    np.testing.assert_array_equal(x, 6.0)


@pytest.mark.cpu_only
def test_dump_ir_prints_every_stage(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, tilec, tilec.language as tl\n"
        "@tilec.jit\n"
        "def k(x_ptr):\n"
        "    tl.store(x_ptr + tl.arange(0, 16), 1.0 + 2.0)\n"
        "k[(1,)](np.zeros(16, np.float32))\n")
    env = {**__import__("os").environ, "TILEC_DUMP_IR": "1"}
    err = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, check=True).stderr
    for stage in ("IR after sema", "fold", "cse", "dce"):
        assert stage in err
    assert "func @k(" in err


@pytest.mark.cpu_only
def test_printed_ir_parses_back(rng):
    from tilec import _C

    a = np.zeros((32, 32), np.float32)
    v = np.zeros(64, np.float32)
    kernels = [
        matmul_kernel.warmup(a, a, a, 32, 32, 32, 32, 1, 32, 1, 32, 1, BLOCK_M=16, BLOCK_N=16,
                             BLOCK_K=16),
        softmax_kernel.warmup(v, v, 8, 8, 8, BLOCK=8),
        while_kernel.warmup(np.zeros(1, np.int32), 10),
        if_else_kernel.warmup(v, v, 1.0),
        early_exit_kernel.warmup(v, 64, BLOCK=16),
    ]
    for compiled in kernels:
        for text in compiled.asm.values():
            assert _C.run_passes(text, []) == text


@pytest.mark.cpu_only
def test_command_line_tool(tmp_path):
    import pathlib
    import subprocess

    tool = pathlib.Path(tilec.__file__).parent / "bin" / "tilec"
    src = tmp_path / "k.py"
    src.write_text("def k(x):\n    return x + 1\n")
    out = subprocess.run([str(tool), "--dump-ast", str(src)], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("FunctionDef k @1:1")
    ir = tmp_path / "k.tir"
    ir.write_text("func @f(%0: i32) {\n  %1 = constant() {value = 0} : i32\n"
                  "  %2 = add(%0, %1) : i32\n  store_nothing()\n}\n")
    bad = subprocess.run([str(tool), "--passes=fold", str(ir)], capture_output=True, text=True)
    assert bad.returncode == 1 and "k.tir:4:3: error: unknown op 'store_nothing'" in bad.stderr


@tilec.jit
def fma_scalar_first(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float16)
    y = tl.load(y_ptr + offs).to(tl.float16)
    r = tl.fma(2.0, x, y)
    tl.store(out_ptr + offs, r.to(tl.float32) + (r.dtype == tl.float16))


def test_fma_with_a_scalar_first_keeps_the_tensors_type(rng):
    x, y = nonzero(rng, 32), nonzero(rng, 32)
    out = np.zeros_like(x)
    fma_scalar_first[(1,)](x, y, out, BLOCK=32)
    ref = (2.0 * x.astype(np.float16).astype(np.float64) + y.astype(np.float16)).astype(np.float16)
    np.testing.assert_allclose(out, ref.astype(np.float32) + 1.0, rtol=1e-3)


@tilec.jit
def print_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_print("x", x)
    tl.device_print("n", n)


def test_device_print(capfd):
    x = np.array([0.5, 1.25, -2.0, 3.0], np.float32)
    print_kernel[(1,)](x, 4, BLOCK=4)
    lines = {line.strip() for line in capfd.readouterr().out.splitlines() if "pid" in line}
    expected = {f"pid (0, 0, 0) idx ({k}) x: {v:g}" for k, v in enumerate(x.tolist())}
    assert expected <= lines, lines
    assert any(line.endswith("n: 4") for line in lines), lines


@tilec.jit
def tuple_args_kernel(out_ptr, pair, coeffs, nested, n, BLOCK: tl.constexpr):
    """Tuples as arguments (Triton 3): tensors, numbers, a tl.constexpr, None and a
    nested tuple, unpacked, indexed and iterated over in the kernel."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x_ptr, y_ptr = pair
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(len(coeffs)):
        acc += coeffs[i] * tl.load(x_ptr + offs, mask=m)
    (z_ptr, shift), flag, nothing = nested
    if nothing is None and flag:
        acc += tl.load(y_ptr + offs, mask=m) * tl.load(z_ptr + offs, mask=m) + shift
    tl.store(out_ptr + offs, acc, mask=m)


def test_tuple_arguments(rng):
    n = 300
    x, y, z = (nonzero(rng, n).astype(np.float32) for _ in range(3))
    out = np.zeros(n, np.float32)
    for shift in (1, 7):  # 1 is specialized as a constant, as at the top level
        tuple_args_kernel[(tilec.cdiv(n, 128),)](
            out, (x, y), (2, 0.5, tl.constexpr(3)), ((z, shift), True, None), n, BLOCK=128)
        ref = x * 2 + x * np.float32(0.5) + x * 3 + y * z + shift
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


# Flash attention (FA2), as Triton users write it: the scores stay in the
# tensor cores' layout through the row softmax, p feeds the second dot from
# registers, and K and V stream through pipelined copies (block pointers, or
# a tensor descriptor at moving offsets, K read transposed).
@tilec.jit
def _attn_start(start_m, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                CAUSAL: tl.constexpr):
    """The row and column offsets, the running max, sum and output of a block of
    BM queries, the exp2 scale, and where its keys end."""
    offs_m = start_m * BM + tl.arange(0, BM)
    m_i = tl.full([BM], -float("inf"), tl.float32)
    hi = (start_m + 1) * BM if CAUSAL else N
    return (offs_m, tl.arange(0, BN), m_i, tl.zeros([BM], tl.float32),
            tl.zeros([BM, D], tl.float32), sm_scale * 1.44269504, hi)


@tilec.jit
def _attn_step(acc, l_i, m_i, qk, v, qk_scale):
    m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_ij


@tilec.jit
def attn_block_ptr_kernel(Q, K, V, Out, sm_scale, N, D: tl.constexpr, BM: tl.constexpr,
                          BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1) * N * D
    q = tl.load(tl.make_block_ptr(Q + base, (N, D), (D, 1), (start_m * BM, 0), (BM, D), (1, 0)))
    k_ptr = tl.make_block_ptr(K + base, (D, N), (1, D), (0, 0), (D, BN), (0, 1))
    v_ptr = tl.make_block_ptr(V + base, (N, D), (D, 1), (0, 0), (BN, D), (1, 0))
    offs_m, offs_n, m_i, l_i, acc, qk_scale, hi = _attn_start(start_m, N, sm_scale, D, BM, BN,
                                                               CAUSAL)
    for start_n in range(0, hi, BN):
        qk = tl.dot(q, tl.load(k_ptr))
        if CAUSAL:
            qk += tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
        acc, l_i, m_i = _attn_step(acc, l_i, m_i, qk, tl.load(v_ptr), qk_scale)
        k_ptr = tl.advance(k_ptr, (0, BN))
        v_ptr = tl.advance(v_ptr, (BN, 0))
    out = tl.make_block_ptr(Out + base, (N, D), (D, 1), (start_m * BM, 0), (BM, D), (1, 0))
    tl.store(out, (acc / l_i[:, None]).to(Out.dtype.element_ty))


@tilec.jit
def attn_descriptor_kernel(Q, K, V, Out, sm_scale, N, D: tl.constexpr, BM: tl.constexpr,
                           BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N
    desc_q, desc_k, desc_v = _attn_descriptors(Q, K, V, N, D, BM, BN)
    desc_o = tl.make_tensor_descriptor(Out, shape=[tl.num_programs(1) * N, D], strides=[D, 1],
                                       block_shape=[BM, D])
    _attn_through_descriptors(desc_q, desc_k, desc_v, desc_o, start_m, row0, sm_scale, N, D, BM,
                              BN, CAUSAL)


@tilec.jit
def _attn_descriptors(Q, K, V, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Descriptors of q (BM rows a block), k and v (BN rows): every head's N
    rows one after another, one [heads * N, D] tensor each."""
    rows = tl.num_programs(1) * N
    return (tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BM, D]),
            tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BN, D]),
            tl.make_tensor_descriptor(V, shape=[rows, D], strides=[D, 1], block_shape=[BN, D]))


@tilec.jit
def _attn_through_descriptors(desc_q, desc_k, desc_v, desc_o, start_m, row0, sm_scale, N,
                              D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                              CAUSAL: tl.constexpr):
    """One block of BM queries of the head whose rows start at row0."""
    q = desc_q.load([row0 + start_m * BM, 0])
    offs_m, offs_n, m_i, l_i, acc, qk_scale, hi = _attn_start(start_m, N, sm_scale, D, BM, BN,
                                                               CAUSAL)
    offset = row0
    for start_n in tl.range(0, hi, BN):
        qk = tl.dot(q, desc_k.load([offset, 0]).T)
        if CAUSAL:
            qk += tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
        acc, l_i, m_i = _attn_step(acc, l_i, m_i, qk, desc_v.load([offset, 0]), qk_scale)
        offset += BN
    desc_o.store([row0 + start_m * BM, 0], (acc / l_i[:, None]).to(tl.float16))


def attention_reference(q, k, v, sm_scale, causal):
    s = q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2) * sm_scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)


@pytest.mark.parametrize("kernel", [attn_block_ptr_kernel, attn_descriptor_kernel],
                         ids=["block_ptr", "descriptor"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("BM,BN,N", [(64, 32, 192), (128, 64, 256)])
def test_flash_attention(rng, kernel, causal, BM, BN, N):
    heads, D, sm_scale = 3, 64, 0.125
    q, k, v = (rng.standard_normal((heads, N, D)).astype(np.float16) for _ in range(3))
    out = np.zeros_like(q)
    kernel[(N // BM, heads)](q, k, v, out, sm_scale, N, D=D, BM=BM, BN=BN, CAUSAL=causal,
                             num_warps=4, num_stages=3)
    ref = attention_reference(q, k, v, sm_scale, causal)
    np.testing.assert_allclose(out.astype(np.float32), ref, atol=1e-2, rtol=1e-2)


# Host TensorDescriptors, as tutorial 06 passes them on Hopper: on sm_90 the
# loop's tiles arrive by TMA, through tensor maps the launcher encodes.
@tilec.jit
def attn_host_descriptor_kernel(desc_q, desc_k, desc_v, desc_o, sm_scale, N, D: tl.constexpr,
                                BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    _attn_through_descriptors(desc_q, desc_k, desc_v, desc_o, tl.program_id(0),
                              tl.program_id(1) * N, sm_scale, N, D, BM, BN, CAUSAL)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D,BM,BN,N", [(64, 64, 32, 192), (128, 128, 64, 256)])
def test_flash_attention_through_host_descriptors(rng, causal, D, BM, BN, N):
    torch = pytest.importorskip("torch")
    from tilec.tools.tensor_descriptor import TensorDescriptor
    heads, sm_scale = 2, 0.125
    q, k, v = (rng.standard_normal((heads, N, D)).astype(np.float16) for _ in range(3))
    out = torch.zeros(heads * N, D, dtype=torch.float16)
    descs = [TensorDescriptor.from_tensor(torch.from_numpy(x).reshape(heads * N, D), block)
             for x, block in ((q, [BM, D]), (k, [BN, D]), (v, [BN, D]))]
    descs.append(TensorDescriptor.from_tensor(out, [BM, D]))
    attn_host_descriptor_kernel[(N // BM, heads)](*descs, sm_scale, N, D=D, BM=BM, BN=BN,
                                                  CAUSAL=causal, num_warps=4, num_stages=2)
    ref = attention_reference(q, k, v, sm_scale, causal)
    np.testing.assert_allclose(out.float().numpy().reshape(heads, N, D), ref, atol=1e-2,
                               rtol=1e-2)


# A matmul over host descriptors whose tiles cross the edges (zero-filled
# there), of a column slice of a wider tensor (strides and a base offset), with
# B as [K, N] or K-major [N, K] (read transposed).
@tilec.jit
def host_descriptor_matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr,
                                  BN: tl.constexpr, BK: tl.constexpr, B_KMAJOR: tl.constexpr):
    _descriptor_matmul(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK, B_KMAJOR)


@tilec.jit
def _descriptor_matmul(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, B_KMAJOR: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pm * BM, k])
        if B_KMAJOR:
            b = b_desc.load([pn * BN, k]).T
        else:
            b = b_desc.load([k, pn * BN])
        acc = tl.dot(a, b, acc)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N))


# Pointers computed from the loop index each iteration (tutorial 09's
# persistent matmul), masked along K: pipelined, each copied iteration's
# pointers and mask computed again.
@tilec.jit
def index_pointer_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rm_in = tl.max_contiguous(tl.multiple_of(tl.where(rm < M, rm, 0), BM), BM)
    rn_in = tl.max_contiguous(tl.multiple_of(tl.where(rn < N, rn, 0), BN), BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        offs_k = ki * BK + rk
        a = tl.load(a_ptr + rm_in[:, None] * K + offs_k[None, :],
                    mask=rk[None, :] < K - ki * BK, other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * N + rn_in[None, :],
                    mask=rk[:, None] < K - ki * BK, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("stages", [2, 3, 5])  # (5: more first stages than iterations)
def test_matmul_with_pointers_computed_from_the_loop_index(rng, stages):
    M, N, K, BM, BN, BK = 100, 72, 88, 64, 64, 32
    a = nonzero(rng, (M, K)).astype(np.float16)
    b = nonzero(rng, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    index_pointer_matmul_kernel[(tilec.cdiv(M, BM), tilec.cdiv(N, BN))](
        a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=stages)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                               atol=1e-3)


# The same with descriptors the kernel makes: on sm_90 the launcher computes
# their base, sizes and strides from the arguments for the tensor maps.
@tilec.jit
def device_descriptor_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, BM: tl.constexpr,
                                    BN: tl.constexpr, BK: tl.constexpr, B_KMAJOR: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr + 8, [M, K], [stride_am, 1], [BM, BK])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    _descriptor_matmul(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK, B_KMAJOR)


@pytest.mark.parametrize("made_in_kernel", [False, True])
@pytest.mark.parametrize("dtype,b_kmajor", [("float16", False), ("float16", True),
                                            ("float8_e4m3fn", True)])
@pytest.mark.parametrize("stages", [2, 3, 5])
def test_matmul_through_descriptors_at_the_edges(rng, dtype, b_kmajor, stages, made_in_kernel):
    torch = pytest.importorskip("torch")
    from tilec.tools.tensor_descriptor import TensorDescriptor
    M, N, K, BM, BN, BK = 100, 72, 88, 64, 64, 32
    wide = torch.from_numpy(nonzero(rng, (M, 128))).to(getattr(torch, dtype))
    a = wide[:, 8:8 + K]  # a row stride of 128 elements, 8 in from the start
    b = torch.from_numpy(nonzero(rng, (N, K) if b_kmajor else (K, N))).to(a.dtype)
    c = torch.zeros(M, N)
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    meta = dict(BM=BM, BN=BN, BK=BK, B_KMAJOR=b_kmajor, num_warps=4, num_stages=stages)
    if made_in_kernel:
        device_descriptor_matmul_kernel[grid](wide, b, c, M, N, K, wide.stride(0), **meta)
    else:
        a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
        b_desc = TensorDescriptor.from_tensor(b, [BN, BK] if b_kmajor else [BK, BN])
        host_descriptor_matmul_kernel[grid](a_desc, b_desc, c, M, N, K, **meta)
    ref = a.double() @ (b.double().T if b_kmajor else b.double())
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-4, atol=1e-3)


# Tiles stored through a host descriptor, a descriptor the kernel makes and a
# block pointer (on sm_90 by TMA, which drops what lies past the edges),
# several per program as a persistent kernel's epilogue stores them.
@tilec.jit
def store_through_descriptor_kernel(a_ptr, b_ptr, c_ptr, c_desc, M, N, K, stride_cm,
                                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                                    HOW: tl.constexpr, SPLIT: tl.constexpr = False):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    if HOW == "in_kernel":
        if SPLIT:
            c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BM, BN // 2])
        else:
            c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        pm = tile // tiles_n
        pn = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
        c = (acc + pn).to(c_ptr.dtype.element_ty)
        if HOW == "block_ptr":
            p = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pm * BM, pn * BN), (BM, BN),
                                  (1, 0))
            tl.store(p, c, boundary_check=(0, 1))
        elif SPLIT:  # tutorial 09's subtiled epilogue: each half stored on its own
            c0, c1 = tl.split(tl.permute(tl.reshape(c, (BM, 2, BN // 2)), (0, 2, 1)))
            c_desc.store([pm * BM, pn * BN], c0)
            c_desc.store([pm * BM, pn * BN + BN // 2], c1)
        else:
            c_desc.store([pm * BM, pn * BN], c)


@pytest.mark.parametrize("how", ["host", "in_kernel", "block_ptr"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float8_e4m3fn"])
def test_tiles_stored_through_descriptors_at_the_edges(rng, how, dtype):
    _store_through_descriptors(rng, how, dtype, split=False)


@pytest.mark.parametrize("how", ["host", "in_kernel"])
def test_half_tiles_stored_through_descriptors_at_the_edges(rng, how):
    """Two stores an iteration (tutorial 09's subtiled epilogue), each of its
    own half, neither waiting for the other's copy."""
    _store_through_descriptors(rng, how, "float16", split=True)


def _store_through_descriptors(rng, how, dtype, split):
    torch = pytest.importorskip("torch")
    from tilec.tools.tensor_descriptor import TensorDescriptor
    M, N, K, BM, BN, BK = 100, 80, 88, 64, 64, 32
    a = torch.from_numpy(nonzero(rng, (M, K)).astype(np.float16))
    b = torch.from_numpy(nonzero(rng, (K, N)).astype(np.float16))
    wide = torch.full((M, N + 16), 7.0).to(getattr(torch, dtype))  # c: its first N columns
    c = wide[:, :N]
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN // 2 if split else BN]) if how == "host" else c
    store_through_descriptor_kernel[(3,)](a, b, c, c_desc, M, N, K, wide.stride(0), BM=BM,
                                          BN=BN, BK=BK, HOW=how, SPLIT=split, num_warps=4,
                                          num_stages=2)
    pn = (np.arange(N) // BN)[None, :]
    ref = torch.from_numpy(a.double().numpy() @ b.double().numpy() + pn).to(c.dtype)
    rtol = {"float32": 1e-4, "float16": 2e-3, "float8_e4m3fn": 0.13}[dtype]  # one ulp of fp8
    np.testing.assert_allclose(c.double().numpy(), ref.double().numpy(), rtol=rtol, atol=1e-2)
    assert (wide[:, N:].double() == 7.0).all()  # nothing written past the edge


# fp8 attention as tutorial 06 writes it for Hopper: V stored transposed
# (VT, [heads * D, N]), loaded as [D, BN] tiles and transposed, so that p @ v
# reads a K-major B; the output is fp16 here.
@tilec.jit
def attn_fp8_kernel(Q, K, VT, Out, sm_scale, N, D: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    rows = tl.num_programs(1) * N
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BM, D])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BN, D])
    desc_v = tl.make_tensor_descriptor(VT, shape=[tl.num_programs(1) * D, N], strides=[N, 1],
                                       block_shape=[D, BN])
    q = desc_q.load([head * N + start_m * BM, 0])
    offs_m, offs_n, m_i, l_i, acc, qk_scale, hi = _attn_start(start_m, N, sm_scale, D, BM, BN,
                                                               CAUSAL)
    offset = head * N
    for start_n in tl.range(0, hi, BN):
        qk = tl.dot(q, desc_k.load([offset, 0]).T)
        if CAUSAL:
            qk += tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
        v = desc_v.load([head * D, start_n]).T
        acc, l_i, m_i = _attn_step(acc, l_i, m_i, qk, v, qk_scale)
        offset += BN
    out = Out + (head * N + offs_m[:, None]) * D + tl.arange(0, D)[None, :]
    tl.store(out, (acc / l_i[:, None]).to(tl.float16))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("BM,BN,N", [(64, 32, 192), (128, 64, 256)])
def test_flash_attention_fp8(rng, causal, BM, BN, N):
    torch = pytest.importorskip("torch")
    heads, D, sm_scale = 2, 64, 0.125
    q, k, v = (torch.from_numpy(rng.standard_normal((heads, N, D)).astype(np.float32))
               .to(torch.float8_e5m2) for _ in range(3))
    vt = v.transpose(1, 2).contiguous()
    out = torch.zeros(heads, N, D, dtype=torch.float16)
    attn_fp8_kernel[(N // BM, heads)](q, k, vt, out, sm_scale, N, D=D, BM=BM, BN=BN,
                                      CAUSAL=causal, num_warps=4, num_stages=3)
    ref = attention_reference(*(t.to(torch.float32).numpy() for t in (q, k, v)), sm_scale, causal)
    # p is rounded to e5m2 (2 mantissa bits) before p @ v, as in Triton's tutorial.
    np.testing.assert_allclose(out.to(torch.float32).numpy(), ref, atol=0.1, rtol=0.1)


# Attention backward's dk/dv loop: q^T and do each feed two dots, once as
# loaded and once transposed; both are copied once per step into a tile
# both dots read.
@tilec.jit
def dkdv_loop_kernel(K, V, Q, DO, M, Di, DK, DV, N, D: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr, ROWS: tl.constexpr = False):
    """ROWS: as tutorial 06 writes it, rows of m and Di loaded at a carried
    offset too (copied ahead with the operands, read back from the stage)."""
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    rm = tl.arange(0, BM)
    k = tl.load(K + rn[:, None] * D + rd[None, :])
    v = tl.load(V + rn[:, None] * D + rd[None, :])
    dk = tl.zeros([BN, D], tl.float32)
    dv = tl.zeros([BN, D], tl.float32)
    qT_ptrs = Q + rm[None, :] * D + rd[:, None]
    do_ptrs = DO + rm[:, None] * D + rd[None, :]
    curr = 0
    for _ in range(0, N, BM):
        qT = tl.load(qT_ptrs)
        offs = curr + rm
        qkT = tl.dot(k, qT) * 0.125
        if ROWS:
            qkT -= tl.load(M + offs, mask=offs < N, other=0.0)[None, :]
        pT = tl.math.exp2(qkT)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(tl.float16), do)
        dpT = tl.dot(v, tl.trans(do))
        if ROWS:
            dpT -= tl.load(Di + offs, mask=offs < N, other=0.0)[None, :]
        dk += tl.dot((pT * dpT).to(tl.float16), tl.trans(qT))
        curr += BM
        qT_ptrs += BM * D
        do_ptrs += BM * D
    tl.store(DK + rn[:, None] * D + rd[None, :], dk)
    tl.store(DV + rn[:, None] * D + rd[None, :], dv)


@pytest.mark.parametrize("N,BN,warps", [(96, 64, 4), (160, 128, 8)])
def test_dkdv_loop_with_loads_feeding_two_dots(rng, N, BN, warps):
    """dk and dv accumulate by dots that run on past the iteration (on sm_90)."""
    D, BM = 64, 32
    k, v = (rng.standard_normal((BN, D)).astype(np.float16) * 0.5 for _ in range(2))
    q, do = (rng.standard_normal((N, D)).astype(np.float16) * 0.5 for _ in range(2))
    dk, dv = np.zeros((BN, D), np.float32), np.zeros((BN, D), np.float32)
    rows = np.zeros(N, np.float32)  # (not read)
    dkdv_loop_kernel[(1,)](k, v, q, do, rows, rows, dk, dv, N, D=D, BM=BM, BN=BN,
                           num_warps=warps, num_stages=3)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    pT = np.exp2(f(k) @ f(q).T * 0.125)
    ref_dv = f(pT.astype(np.float16)) @ f(do)
    ref_dk = f((pT * (f(v) @ f(do).T)).astype(np.float16)) @ f(q)
    np.testing.assert_allclose(dv, ref_dv, rtol=2e-2, atol=0.5)
    np.testing.assert_allclose(dk, ref_dk, rtol=2e-2, atol=0.5)


@tilec.jit
def in_place_dots_kernel(A, B, D, C, E, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr, A_INVARIANT: tl.constexpr):
    """Loops whose wgmma dots all accumulate in place: two over one A (a dual
    GEMM, as SwiGLU's), or one over an A loaded before the loop. No dot stays
    synchronous, so none may run on past the iteration (the next copies would
    overwrite the stage it reads)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    acc2 = tl.zeros((BM, BN), dtype=tl.float32)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = B + rk[:, None] * BN + rn[None, :]
    d_ptrs = D + rk[:, None] * BN + rn[None, :]
    a = tl.load(a_ptrs)
    for _ in range(0, K, BK):
        if not A_INVARIANT:
            a = tl.load(a_ptrs)
            acc2 += tl.dot(a, tl.load(d_ptrs))
        acc += tl.dot(a, tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * BN
        d_ptrs += BK * BN
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)
    tl.store(E + rm[:, None] * BN + rn[None, :], acc2)


@pytest.mark.parametrize("a_invariant", [False, True])
def test_loops_whose_dots_all_accumulate_in_place(rng, a_invariant):
    M, N, K, BK = 64, 64, 320, 64
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    b, d = ((rng.standard_normal((K, N)) * 0.5).astype(np.float16) for _ in range(2))
    c, e = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    in_place_dots_kernel[(1,)](a, b, d, c, e, K, BM=M, BN=N, BK=BK, A_INVARIANT=a_invariant,
                               num_warps=4, num_stages=3)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    a_used = np.tile(f(a[:, :BK]), (1, K // BK)) if a_invariant else f(a)
    np.testing.assert_allclose(c, a_used @ f(b), rtol=1e-2, atol=0.05)
    np.testing.assert_allclose(e, 0 if a_invariant else f(a) @ f(d), rtol=1e-2, atol=0.05)


@tilec.jit
def reversed_copy_kernel(X, Y, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(X + (n - 1 - o), mask=o < n)
    tl.store(Y + (n - 1 - o), x + 1, mask=o < n)
    tl.store(Y + n + o, tl.load(X + (n - o) - 1, mask=o < n), mask=o < n)


@pytest.mark.parametrize("n", [1000, 1024])
def test_loads_and_stores_through_decreasing_offsets(rng, n):
    """c - arange runs backwards: its addresses are not contiguous."""
    x = nonzero(rng, n)
    y = np.zeros(2 * n, np.float32)
    reversed_copy_kernel[(1,)](x, y, n, BLOCK=1024)
    np.testing.assert_array_equal(y[:n], x + 1)
    np.testing.assert_array_equal(y[n:], x[::-1])


# A persistent matmul: an outer loop over tiles holds the pipelined K loop and
# an epilogue whose conversion reuses the (drained) stages' shared memory.
@tilec.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = N // BN
    for t in range(pid, (M // BM) * tiles_n, tl.num_programs(0)):
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
            a_ptrs += BK
            b_ptrs += BK * N
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def test_persistent_matmul(rng):
    M, N, K = 256, 128, 96
    a = nonzero(rng, (M, K), np.float16, low=0.5, high=1.0)
    b = nonzero(rng, (K, N), np.float16, low=0.5, high=1.0)
    c = np.zeros((M, N), np.float16)
    persistent_matmul_kernel[(3,)](a, b, c, M, N, K, BM=64, BN=64, BK=32, num_warps=4,
                                   num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=0.1)


# Two loops use one loop-invariant dot operand (staged once into shared memory
# before a loop); the first runs only under a condition, so the second must not
# rely on the first's staging.
@tilec.jit
def invariant_operand_kernel(Q, K, O, flag, N, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rd = tl.arange(0, D)
    rn = tl.arange(0, BN)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BM, BN], tl.float32)
    if flag > 0:
        for k in range(0, N, BN):
            acc += tl.dot(q, tl.load(K + (k + rn[None, :]) * D + rd[:, None]))
    for k in range(0, N, BN):
        acc += tl.dot(q, tl.load(K + (k + rn[None, :]) * D + rd[:, None]))
    tl.store(O + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("flag", [0, 1])
def test_loop_invariant_operand_in_a_conditional_loop(rng, flag):
    BM, BN, D, N = 64, 64, 64, 192
    q = rng.standard_normal((BM, D)).astype(np.float16)
    k = rng.standard_normal((N, D)).astype(np.float16)
    out = np.zeros((BM, BN), np.float32)
    invariant_operand_kernel[(1,)](q, k, out, flag, N, D=D, BM=BM, BN=BN, num_stages=3)
    blocks = sum(q.astype(np.float32) @ k[j:j + BN].astype(np.float32).T for j in range(0, N, BN))
    np.testing.assert_allclose(out, (1 + flag) * blocks, rtol=1e-2, atol=5e-2)


# The loop-carried accumulator is read through a view (trans) before a dot that
# accumulates into it: the view must see the value from before the dot.
@tilec.jit
def carried_view_kernel(Q, K, V, O, S, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    q = tl.load(tl.make_block_ptr(Q, (BM, D), (D, 1), (0, 0), (BM, D), (1, 0)))
    k_ptr = tl.make_block_ptr(K, (D, N), (1, D), (0, 0), (D, BN), (0, 1))
    v_ptr = tl.make_block_ptr(V, (N, D), (D, 1), (0, 0), (BN, D), (1, 0))
    acc = tl.zeros([BM, D], tl.float32)
    s = tl.zeros([D], tl.float32)
    for start_n in range(0, N, BN):
        p = (tl.dot(q, tl.load(k_ptr)) * 0.125).to(tl.float16)
        prev = tl.trans(acc)
        acc = tl.dot(p, tl.load(v_ptr), acc * 0.5)
        s += tl.sum(prev, 1)
        k_ptr = tl.advance(k_ptr, (0, BN))
        v_ptr = tl.advance(v_ptr, (BN, 0))
    tl.store(O + tl.arange(0, BM)[:, None] * D + tl.arange(0, D)[None, :], acc)
    tl.store(S + tl.arange(0, D), s)


def test_view_of_a_carried_accumulator(rng):
    BM, BN, D, N = 64, 64, 64, 256
    q = rng.standard_normal((BM, D)).astype(np.float16)
    k, v = (rng.standard_normal((N, D)).astype(np.float16) for _ in range(2))
    out = np.zeros((BM, D), np.float32)
    s = np.zeros(D, np.float32)
    carried_view_kernel[(1,)](q, k, v, out, s, N, D=D, BM=BM, BN=BN, num_stages=3)
    acc, total = np.zeros((BM, D), np.float32), np.zeros(D, np.float32)
    for j in range(0, N, BN):
        p = (q.astype(np.float32) @ k[j:j + BN].astype(np.float32).T * 0.125).astype(np.float16)
        total += acc.T.sum(1)
        acc = p.astype(np.float32) @ v[j:j + BN].astype(np.float32) + acc * 0.5
    np.testing.assert_allclose(out, acc, rtol=1e-2, atol=5e-2)
    np.testing.assert_allclose(s, total, rtol=1e-2, atol=2e-1)


# B stored transposed ([N][K] row-major) and read through a column-major block
# pointer (order (0, 1)), as FA2 kernels read K: on sm_90a its tiles go by TMA
# through a map with the dims swapped, landing K-contiguous for wgmma.
@tilec.jit
def col_major_b_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pm * BM, 0), (BM, BK), (1, 0))
    b = tl.make_block_ptr(b_ptr, (K, N), (1, K), (0, pn * BN), (BK, BN), (0, 1))
    acc = tl.zeros([BM, BN], tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)), acc)
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, (BK, 0))
    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("shape", [(128, 128, 256), (100, 72, 200)])
@pytest.mark.parametrize("ws", [False, True])
def test_matmul_of_a_column_major_block_pointer(device, rng, shape, ws):
    """ws: with a producer warpgroup issuing the copies (sm_90a; elsewhere the
    option changes nothing)."""
    M, N, K = shape
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)  # B = bt.T, column-major
    c = np.zeros((M, N), np.float32)
    BM, BN, BK = 64, 64, 32
    col_major_b_matmul_kernel[(tilec.cdiv(M, BM), tilec.cdiv(N, BN))](
        a, bt, c, M, N, K, BM=BM, BN=BN, BK=BK, num_stages=3, warp_specialize_loops=ws)
    np.testing.assert_allclose(c, a.astype(np.float32) @ bt.astype(np.float32).T, rtol=1e-2,
                               atol=5e-2)


# Persistent matmuls whose tile loop asks to be flattened (tl.range(flatten=True)):
# one loop over every (tile, k step) pair, the epilogue under the last k step.
@tilec.jit
def _grouped_tile(t, tiles_m, tiles_n, GROUP: tl.constexpr):
    per_group = GROUP * tiles_n
    first_m = (t // per_group) * GROUP
    rows = tl.minimum(tiles_m - first_m, GROUP)
    return first_m + (t % per_group) % rows, (t % per_group) // rows


@tilec.jit
def flat_matmul_kernel(a_ptr, b_ptr, c_ptr, done_ptr, M, N, K, step, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, FLATTEN: tl.constexpr,
                       CLAMP: tl.constexpr = False):
    """CLAMP: as tutorial 09, rows and columns past the edge read row and
    column 0 (tl.where, its contiguity restored by hints), the loads masked
    along k only."""
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    done = 0  # carried by the tile loop: the tiles this program stored
    for t in tl.range(tl.program_id(0), tiles_m * tiles_n, step, flatten=FLATTEN):
        pm, pn = _grouped_tile(t, tiles_m, tiles_n, 3)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        ra = tl.where(rm < M, rm, 0)
        rb = tl.max_contiguous(tl.multiple_of(tl.where(rn < N, rn, 0), BN), BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for ks in range(tl.cdiv(K, BK)):
            rk = ks * BK + tl.arange(0, BK)
            if CLAMP:
                a = tl.load(a_ptr + ra[:, None] * K + rk[None, :], mask=rk[None, :] < K,
                            other=0.0)
                b = tl.load(b_ptr + rk[:, None] * N + rb[None, :], mask=rk[:, None] < K,
                            other=0.0)
            else:
                a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                            mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                            mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
        done += 1
    tl.store(done_ptr + tl.program_id(0), done)


@pytest.mark.parametrize("stages", [3, 5])  # (5: the first stages' copies are a loop)
@pytest.mark.parametrize("K", [0, 40, 200])
@pytest.mark.parametrize("flatten,clamp", [(False, False), (True, False), (True, True)])
def test_flattened_persistent_matmul(rng, K, flatten, clamp, stages):
    """Pointer loads at odd edges; an outer count carried past the epilogue;
    K=0 runs the epilogue on zeros (the flattened loop would run no iteration).
    With the rows clamped, their offsets are kept per tile by the copies."""
    M, N, programs = 200, 136, 5
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (K, N), np.float16)
    c = np.full((M, N), 7, np.float16)
    done = np.zeros(programs, np.int32)
    flat_matmul_kernel[(programs,)](a, b, c, done, M, N, K, programs, BM=64, BN=64, BK=32,
                                    FLATTEN=flatten, CLAMP=clamp, num_warps=4, num_stages=stages)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=0.1)
    tiles = 4 * 3
    np.testing.assert_array_equal(done, [len(range(p, tiles, programs)) for p in range(programs)])


@tilec.jit
def flat_descriptor_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                  BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr,
                                  SPLIT: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN // 2 if SPLIT else BN])
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, flatten=True):
        pm, pn = _grouped_tile(t, tiles_m, tiles_n, 2)
        acc = tl.zeros((BM, BN), tl.float32)
        for ks in range(tl.cdiv(K, BK)):
            a = a_desc.load([pm * BM, ks * BK])
            b = b_desc.load([pn * BN, ks * BK])
            acc = tl.dot(a, b.T, acc)
        if SPLIT:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pm * BM, pn * BN], left.to(tl.float16))
            c_desc.store([pm * BM, pn * BN + BN // 2], right.to(tl.float16))
        else:
            c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@pytest.mark.parametrize("split", [False, True])
def test_flattened_persistent_matmul_through_descriptors(rng, split):
    M, N, K, programs = 200, 136, 200, 3
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (N, K), np.float16)
    c = np.full((M, N), 7, np.float16)
    flat_descriptor_matmul_kernel[(programs,)](a, b, c, M, N, K, BM=64, BN=64, BK=64,
                                               PROGRAMS=programs, SPLIT=split, num_warps=4,
                                               num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=0.1)


@tilec.jit
def unrolled_loop_kernel(x_ptr, out_ptr, sums_ptr, lo, hi, step, FACTOR: tl.constexpr,
                         BLOCK: tl.constexpr):
    """tl.range(loop_unroll_factor=): each iteration's store, and carried sums."""
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    count = 0
    for i in tl.range(lo, hi, step, loop_unroll_factor=FACTOR):
        row = tl.load(x_ptr + i * BLOCK + offs)
        total = total * 0.5 + row
        count += i
        tl.store(out_ptr + i * BLOCK + offs, row * i + total)
    tl.store(sums_ptr + offs, total)
    tl.store(sums_ptr + BLOCK, count)


@pytest.mark.parametrize("factor", [1, 2, 3, 4])
@pytest.mark.parametrize("lo,hi,step", [(0, 0, 1), (0, 1, 1), (1, 8, 1), (0, 9, 2), (9, 0, -2),
                                        (2, 2 + 4 * 3, 3)])
def test_unrolled_loop(rng, factor, lo, hi, step):
    BLOCK, rows = 16, 12
    x = nonzero(rng, (rows, BLOCK))
    out = np.zeros((rows, BLOCK), np.float32)
    sums = np.zeros(BLOCK + 1, np.float32)
    unrolled_loop_kernel[(1,)](x, out, sums, lo, hi, step, FACTOR=factor, BLOCK=BLOCK)
    ref, total, count = np.zeros_like(out), np.zeros(BLOCK, np.float32), 0
    for i in range(lo, hi, step):
        total = total * 0.5 + x[i]
        count += i
        ref[i] = x[i] * i + total
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    np.testing.assert_allclose(sums[:BLOCK], total, rtol=1e-6)
    assert sums[BLOCK] == count


@tilec.jit
def unrolled_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, FACTOR: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, K, BK, loop_unroll_factor=FACTOR):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("K", [40, 96, 200])
@pytest.mark.parametrize("factor", [2, 3])
def test_unrolled_pipelined_matmul(rng, K, factor):
    """An unrolled k loop: several copies of each load per iteration, all
    pipelined; the iterations left run in a loop of their own."""
    M, N = 72, 80
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float32)
    unrolled_matmul_kernel[(2, 2)](a, b, c, M, N, K, BM=64, BN=64, BK=32, FACTOR=factor,
                                   num_warps=4, num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-2)


def test_dkdv_loop_with_row_loads_at_a_carried_offset(rng):
    N, D, BM, BN = 96, 64, 32, 64
    k, v = (rng.standard_normal((BN, D)).astype(np.float16) * 0.5 for _ in range(2))
    q, do = (rng.standard_normal((N, D)).astype(np.float16) * 0.5 for _ in range(2))
    m = rng.uniform(0.5, 2.0, N).astype(np.float32)
    di = rng.uniform(-1.0, 1.0, N).astype(np.float32)
    dk, dv = np.zeros((BN, D), np.float32), np.zeros((BN, D), np.float32)
    dkdv_loop_kernel[(1,)](k, v, q, do, m, di, dk, dv, N, D=D, BM=BM, BN=BN, ROWS=True,
                           num_warps=4, num_stages=3)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    pT = np.exp2(f(k) @ f(q).T * 0.125 - m[None, :])
    ref_dv = f(pT.astype(np.float16)) @ f(do)
    dpT = f(v) @ f(do).T - di[None, :]
    ref_dk = f((pT * dpT).astype(np.float16)) @ f(q)
    np.testing.assert_allclose(dv, ref_dv, rtol=2e-2, atol=0.5)
    np.testing.assert_allclose(dk, ref_dk, rtol=2e-2, atol=0.5)


# Review findings of the pipelining changes, kept as tests: a carried offset
# tensor (not a scalar the copies can step), and a dot's accumulator read in an
# else-branch after the dot (the dot runs on asynchronously in such loops).
@tilec.jit
def carried_offsets_matmul_kernel(a_ptr, b_ptr, c_ptr, snap_ptr, M, N, K, SNAP,
                                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                                  CARRIED: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    carried = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        rk = carried if CARRIED else k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
        if k != SNAP:
            pass
        else:
            tl.store(snap_ptr + rm[:, None] * N + rn[None, :], acc)
        carried += BK
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("carried", [False, True])
def test_carried_offsets_and_an_accumulator_read_in_an_else_branch(rng, carried):
    M, N, K, BK = 64, 64, 200, 32
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float32)
    snap = np.zeros((M, N), np.float32)
    carried_offsets_matmul_kernel[(1,)](a, b, c, snap, M, N, K, 64, BM=M, BN=N, BK=BK,
                                        CARRIED=carried, num_warps=4, num_stages=3)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    np.testing.assert_allclose(c, f(a) @ f(b), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(snap, f(a[:, :96]) @ f(b[:96]), rtol=1e-3, atol=1e-2)


# Warp specialization, tl.range(warp_specialize=True): on sm_90a one extra
# warpgroup copies the tiles of the loops under the marked one by TMA into a
# ring of slots the dots read, as soon as the dots free a slot; the ring runs
# on across a persistent kernel's tiles and from one loop to the next.
# Elsewhere (the CPU, other targets) the hint changes nothing.
@tilec.jit
def ws_persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, warp_specialize=True):
        pm, pn = _grouped_tile(t, tiles_m, tiles_n, 2)
        acc = tl.zeros((BM, BN), tl.float32)
        for ks in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pm * BM, ks * BK]), b_desc.load([pn * BN, ks * BK]).T, acc)
        rows = pm * BM + tl.arange(0, BM)
        cols = pn * BN + tl.arange(0, BN)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], (acc + t).to(tl.float16),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


@pytest.mark.parametrize("K", [40, 200, 456])
@pytest.mark.parametrize("warps,BM", [(4, 64), (8, 128)])
def test_warp_specialized_persistent_matmul(rng, K, warps, BM):
    M, N, BN, programs = 200, 136, 64, 3
    a = nonzero(rng, (M, K), np.float16)
    b = nonzero(rng, (N, K), np.float16)
    c = np.full((M, N), 7, np.float16)
    ws_persistent_matmul_kernel[(programs,)](a, b, c, M, N, K, BM=BM, BN=BN, BK=64,
                                             PROGRAMS=programs, num_warps=warps, num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    t = np.zeros((tiles_m, tiles_n))  # each tile's index (_grouped_tile: two rows a group)
    for i in range(tiles_m * tiles_n):
        first = i // (2 * tiles_n) * 2
        rows = min(tiles_m - first, 2)
        t[first + i % (2 * tiles_n) % rows, i % (2 * tiles_n) // rows] = i
    ref += np.kron(t, np.ones((BM, BN)))[:M, :N]
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=0.1)


@tilec.jit
def ws_attention_kernel(Q, K, V, Out, sm_scale, N, D: tl.constexpr, BM: tl.constexpr,
                        BN: tl.constexpr, CAUSAL: tl.constexpr):
    """Tutorial 06's shape: the keys before the diagonal block, then (causal)
    the diagonal block masked, each loop warp-specialized."""
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N
    desc_q, desc_k, desc_v = _attn_descriptors(Q, K, V, N, D, BM, BN)
    q = desc_q.load([row0 + start_m * BM, 0])
    offs_m, offs_n, m_i, l_i, acc, qk_scale, hi = _attn_start(start_m, N, sm_scale, D, BM, BN,
                                                               False)
    lo = start_m * BM if CAUSAL else N
    for start_n in tl.range(0, lo, BN, warp_specialize=True):
        qk = tl.dot(q, desc_k.load([row0 + start_n, 0]).T)
        acc, l_i, m_i = _attn_step(acc, l_i, m_i, qk, desc_v.load([row0 + start_n, 0]), qk_scale)
    if CAUSAL:
        for start_n in tl.range(lo, lo + BM, BN, warp_specialize=True):
            qk = tl.dot(q, desc_k.load([row0 + start_n, 0]).T)
            qk += tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
            acc, l_i, m_i = _attn_step(acc, l_i, m_i, qk, desc_v.load([row0 + start_n, 0]),
                                       qk_scale)
    offs_d = tl.arange(0, D)
    tl.store(Out + (row0 + offs_m)[:, None] * D + offs_d[None, :],
             (acc / l_i[:, None]).to(tl.float16))


@pytest.mark.parametrize("causal", [False, True])
# At 8 warps, two consumer warpgroups own 64 rows each.
@pytest.mark.parametrize("D,BM,BN,N,warps", [(64, 64, 32, 192, 4), (128, 128, 64, 384, 4),
                                             (128, 128, 64, 384, 8), (64, 128, 32, 640, 8)])
def test_warp_specialized_attention(rng, causal, D, BM, BN, N, warps):
    heads, sm_scale = 2, 0.125
    q, k, v = (rng.standard_normal((heads, N, D)).astype(np.float16) for _ in range(3))
    out = np.zeros_like(q)
    ws_attention_kernel[(N // BM, heads)](q, k, v, out, sm_scale, N, D=D, BM=BM, BN=BN,
                                          CAUSAL=causal, num_warps=warps, num_stages=3)
    ref = attention_reference(q, k, v, sm_scale, causal)
    np.testing.assert_allclose(out.astype(np.float32), ref, atol=1e-2, rtol=1e-2)


@tilec.jit
def two_loops_kernel(x_ptr, out_ptr, first_ptr, n, BLOCK: tl.constexpr, KEEP_FIRST: tl.constexpr):
    """A causal kernel's shape: a second loop goes on with the first one's sums."""
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + r)
    first = acc
    for i in range(n, 2 * n):
        acc = acc * 0.5 + tl.load(x_ptr + i * BLOCK + r)
    tl.store(out_ptr + r, acc)
    if KEEP_FIRST:  # the first loop's result is read again after the second
        tl.store(first_ptr + r, first)


@pytest.mark.parametrize("keep_first", [False, True])
def test_a_loop_goes_on_with_an_earlier_loops_result(rng, keep_first):
    """On the GPU the second loop carries the first's sums in their own
    registers where nothing else reads them; read later, they are copied."""
    n, block = 5, 64
    x = nonzero(rng, (2 * n, block))
    out, first = np.zeros(block, np.float32), np.zeros(block, np.float32)
    two_loops_kernel[(1,)](x, out, first, n, BLOCK=block, KEEP_FIRST=keep_first)
    acc = x[:n].sum(0, dtype=np.float64)
    expected_first = acc.copy()
    for i in range(n, 2 * n):
        acc = acc * 0.5 + x[i]
    np.testing.assert_allclose(out, acc, rtol=1e-5)
    np.testing.assert_allclose(first, expected_first if keep_first else 0, rtol=1e-5)
