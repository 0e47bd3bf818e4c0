"""Whole programs users write, in the style of Triton's tutorials, on every
backend against torch: fused attention forward (online softmax with exp2, a
causal mask, a STAGE constexpr, a helper returning a tuple), layer norm forward
and backward (partial weight gradients under atomic_cas locks), a weighted row
sum forward and backward through block pointers with boundary_check, and a
softmax over rows in a persistent loop over tl.num_programs, and the tutorial matmul with
grouped ordering under autotune."""

import pytest
import tilec as triton
import tilec.language as tl

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("device")


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr,
                    N_CTX: tl.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    K_block_ptr = tl.advance(K_block_ptr, (0, lo))
    V_block_ptr = tl.advance(V_block_ptr, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K_block_ptr)
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V_block_ptr)
        p = p.to(tl.float16)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        V_block_ptr = tl.advance(V_block_ptr, (BLOCK_N, 0))
        K_block_ptr = tl.advance(K_block_ptr, (0, BLOCK_N))
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out, stride_qz, stride_qh, stride_qm, stride_qk,
              stride_kz, stride_kh, stride_kn, stride_kk, stride_vz, stride_vh, stride_vk,
              stride_vn, stride_oz, stride_oh, stride_om, stride_on, Z, H,
              N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    Q_block_ptr = tl.make_block_ptr(base=Q + qvk_offset, shape=(N_CTX, HEAD_DIM),
                                    strides=(stride_qm, stride_qk),
                                    offsets=(start_m * BLOCK_M, 0),
                                    block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    V_block_ptr = tl.make_block_ptr(base=V + qvk_offset, shape=(N_CTX, HEAD_DIM),
                                    strides=(stride_vk, stride_vn), offsets=(0, 0),
                                    block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    K_block_ptr = tl.make_block_ptr(base=K + qvk_offset, shape=(HEAD_DIM, N_CTX),
                                    strides=(stride_kk, stride_kn), offsets=(0, 0),
                                    block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    O_block_ptr = tl.make_block_ptr(base=Out + qvk_offset, shape=(N_CTX, HEAD_DIM),
                                    strides=(stride_om, stride_on),
                                    offsets=(start_m * BLOCK_M, 0),
                                    block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = tl.load(Q_block_ptr)
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m,
                                        qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE,
                                        offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m,
                                        qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m,
                                        offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    tl.store(O_block_ptr, acc.to(Out.type.element_ty))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_forward(causal):
    # (On sm_90a the block pointers' base moves with the batch and the head:
    # two outer dims of their TMA maps.)
    Z, H, N_CTX, D = 2, 3, 128, 64
    gen = torch.Generator().manual_seed(0)
    q, k, v = ((torch.randn(Z, H, N_CTX, D, generator=gen) * 0.5).half() for _ in range(3))
    sm_scale = 0.5
    o = torch.empty_like(q)
    M = torch.empty((Z, H, N_CTX), dtype=torch.float32)
    BLOCK_M, BLOCK_N = 64, 32
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    _attn_fwd[grid](q, k, v, sm_scale, M, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                    Z, H, N_CTX=N_CTX, HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                    STAGE=3 if causal else 1, num_warps=4, num_stages=2)
    p = q.float() @ k.float().transpose(2, 3) * sm_scale
    if causal:
        p = p.masked_fill(~torch.tril(torch.ones(N_CTX, N_CTX, dtype=torch.bool)), float("-inf"))
    p = torch.softmax(p, dim=-1)
    torch.testing.assert_close(o.float(), p.half().float() @ v.float(), rtol=0, atol=2e-3)
    lse = torch.logsumexp(q.float() @ k.float().transpose(2, 3) * sm_scale + (
        torch.zeros(N_CTX, N_CTX).masked_fill(~torch.tril(torch.ones(N_CTX, N_CTX, dtype=torch.bool)),
                                              float("-inf")) if causal else 0), dim=-1)
    torch.testing.assert_close(M, lse / 0.6931471805599453, rtol=1e-4, atol=1e-4)  # log2 units


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


def test_layer_norm_forward_and_backward():
    M, N = 151, 333
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(M, N, generator=gen)
    w = torch.rand(N, generator=gen) + 0.5
    b = torch.randn(N, generator=gen)
    dy = torch.randn(M, N, generator=gen)
    y, mean, rstd = torch.empty_like(x), torch.empty(M), torch.empty(M)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK_SIZE=128)
    xr, wr, br = (t.clone().requires_grad_(True) for t in (x, w, b))
    yr = torch.nn.functional.layer_norm(xr, (N,), wr, br, 1e-5)
    yr.backward(dy)
    torch.testing.assert_close(y, yr.detach(), rtol=1e-5, atol=1e-5)
    GROUP = 16
    locks = torch.zeros(2 * GROUP, dtype=torch.int32)
    partial_dw, partial_db = torch.zeros((GROUP, N)), torch.zeros((GROUP, N))
    dw, db, dx = torch.empty(N), torch.empty(N), torch.empty_like(x)
    _layer_norm_bwd_dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks,
                                   x.stride(0), N, GROUP_SIZE_M=GROUP, BLOCK_SIZE_N=512)
    _layer_norm_bwd_dwdb[(triton.cdiv(N, 64),)](partial_dw, partial_db, dw, db, GROUP, N,
                                                BLOCK_SIZE_M=32, BLOCK_SIZE_N=64)
    torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, wr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(db, br.grad, rtol=1e-4, atol=1e-4)
    assert (locks[:GROUP] == 0).all()  # every lock released


@triton.jit
def weighted_sum_fwd(x_ptr, w_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    """y[i] = sum_j x[i, j] * w[j], rows of x read through a block pointer."""
    pid = tl.program_id(0)
    x_block = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1),
                                offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                                order=(1, 0))
    w_block = tl.make_block_ptr(w_ptr, shape=(N,), strides=(1,), offsets=(0,),
                                block_shape=(BLOCK_N,), order=(0,))
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for _ in range(0, N, BLOCK_N):
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_block, boundary_check=(0,))
        acc += tl.sum(x * w[None, :], axis=1)
        x_block = tl.advance(x_block, (0, BLOCK_N))
        w_block = tl.advance(w_block, (BLOCK_N,))
    y_block = tl.make_block_ptr(y_ptr, shape=(M,), strides=(1,), offsets=(pid * BLOCK_M,),
                                block_shape=(BLOCK_M,), order=(0,))
    tl.store(y_block, acc, boundary_check=(0,))


@triton.jit
def weighted_sum_bwd(dy_ptr, x_ptr, w_ptr, dx_ptr, dw_partial_ptr, M, N, stride_m,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dx = dy[:, None] * w[None, :]; this program's rows' share of dw = sum_i dy[i] x[i, :]."""
    pid = tl.program_id(0)
    dy_block = tl.make_block_ptr(dy_ptr, shape=(M,), strides=(1,), offsets=(pid * BLOCK_M,),
                                 block_shape=(BLOCK_M,), order=(0,))
    dy = tl.load(dy_block, boundary_check=(0,))
    for col in range(0, N, BLOCK_N):
        x_block = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1),
                                    offsets=(pid * BLOCK_M, col), block_shape=(BLOCK_M, BLOCK_N),
                                    order=(1, 0))
        dx_block = tl.make_block_ptr(dx_ptr, shape=(M, N), strides=(stride_m, 1),
                                     offsets=(pid * BLOCK_M, col),
                                     block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
        w_block = tl.make_block_ptr(w_ptr, shape=(N,), strides=(1,), offsets=(col,),
                                    block_shape=(BLOCK_N,), order=(0,))
        dwp_block = tl.make_block_ptr(dw_partial_ptr, shape=(tl.num_programs(0), N),
                                      strides=(N, 1), offsets=(pid, col),
                                      block_shape=(1, BLOCK_N), order=(1, 0))
        x = tl.load(x_block, boundary_check=(0, 1))
        w = tl.load(w_block, boundary_check=(0,))
        tl.store(dx_block, dy[:, None] * w[None, :], boundary_check=(0, 1))
        tl.store(dwp_block, tl.sum(dy[:, None] * x, axis=0)[None, :], boundary_check=(1,))


def test_weighted_sum_forward_and_backward_with_block_pointers():
    M, N, BM, BN = 77, 203, 16, 64
    gen = torch.Generator().manual_seed(1)
    x, w, dy = torch.randn(M, N, generator=gen), torch.randn(N, generator=gen), \
        torch.randn(M, generator=gen)
    y = torch.empty(M)
    weighted_sum_fwd[(triton.cdiv(M, BM),)](x, w, y, M, N, x.stride(0), BLOCK_M=BM, BLOCK_N=BN)
    torch.testing.assert_close(y, x @ w, rtol=1e-5, atol=1e-4)
    programs = triton.cdiv(M, BM)
    dx, dw_partial = torch.empty_like(x), torch.zeros(programs, N)
    weighted_sum_bwd[(programs,)](dy, x, w, dx, dw_partial, M, N, x.stride(0), BLOCK_M=BM,
                                  BLOCK_N=BN)
    torch.testing.assert_close(dx, dy[:, None] * w[None, :], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(dw_partial.sum(0), dy @ x, rtol=1e-5, atol=1e-4)


@triton.jit
def persistent_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                       BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """Each program takes every num_programs-th row: a persistent grid."""
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


def test_softmax_over_rows_in_a_persistent_loop():
    n_rows, n_cols = 301, 181
    x = torch.randn(n_rows, n_cols, generator=torch.Generator().manual_seed(2))
    out = torch.empty_like(x)
    persistent_softmax[(7,)](out, x, x.stride(0), out.stride(0), n_rows, n_cols, BLOCK=256,
                             STAGES=2)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


# Triton's tutorial matmul: grouped ordering of the programs, the K tail masked,
# autotuned over a few configs keyed on the sizes.
@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                       "GROUP_SIZE_M": 4}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16,
                       "GROUP_SIZE_M": 2}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32,
                       "GROUP_SIZE_M": 8}, num_warps=2, num_stages=2),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                          stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                          BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def test_autotuned_matmul_with_grouped_ordering():
    g = torch.Generator().manual_seed(3)
    for m, n, k in [(100, 75, 90), (64, 130, 48)]:  # the second: another key, tuned again
        a = torch.randn(m, k, generator=g).half()
        b = torch.randn(k, n, generator=g).half()
        c = torch.empty(m, n, dtype=torch.float16)

        def grid(meta):
            return (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)

        grouped_matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                    b.stride(1), c.stride(0), c.stride(1))
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-3, atol=2e-2)
        assert grouped_matmul_kernel.best_config in grouped_matmul_kernel.configs
    assert len(grouped_matmul_kernel.cache) == 2


def test_jit_repr_names_the_compiled_kernel():
    """@jit(repr=fn): the compiled kernel's name from its specialization, as
    Triton gives it (argument type strings; constexprs and ints equal to 1)."""
    seen = []

    def name(spec):
        seen.append(spec)
        ones = "_".join(k for k, v in spec.constants.items() if v == 1)
        return f"kernel_{spec.signature['value1']}_{ones}"

    @triton.jit(repr=name)
    def kernel(value1, is_one, X, BLOCK: tl.constexpr):
        pass

    x = torch.zeros(4)
    h = kernel.warmup(2**33, 1, x, BLOCK=8, grid=(1,))
    assert h.name == h.metadata.name == "kernel_i64_is_one"
    assert seen[0].signature == {"value1": "i64", "is_one": "constexpr", "X": "*fp32",
                                 "BLOCK": "constexpr"}
    assert seen[0].constants == {"is_one": 1, "BLOCK": 8}
