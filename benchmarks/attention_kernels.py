"""Flash attention forward (FA2), written as Triton users write it: block
pointers, exp2 with log2(e) folded into the scale, and the causal mask split into
an off-band loop that needs no mask and an on-band loop that does.
benchmarks/attention.py and scripts/compare_triton.py load this file twice: once
with the real Triton, once with `triton` aliased to tilec."""

import torch
import triton
import triton.language as tl


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale, N_CTX,
                    offs_m, offs_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr):
    """One pass of online softmax over key blocks, updating acc (the output, not
    yet divided by the row sums), l_i (the row sums) and m_i (the row maxima, in
    log2 units). STAGE picks the blocks for query block start_m: 1, those left of
    the diagonal (causal, all visible); 2, those on it (causal, masked); 3, all."""
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo = tl.multiple_of(start_m * BLOCK_M, BLOCK_M)
        hi = lo + BLOCK_M
    else:
        lo, hi = 0, N_CTX
    K_block_ptr = tl.advance(K_block_ptr, (0, lo))
    V_block_ptr = tl.advance(V_block_ptr, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K_block_ptr)  # (HEAD_DIM, BLOCK_N): K seen transposed
        qk = tl.dot(q, k)
        if STAGE == 2:
            visible = offs_m[:, None] >= start_n + offs_n[None, :]
            qk = tl.where(visible, qk * qk_scale, -float("inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)  # rescales what earlier blocks summed
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V_block_ptr)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        K_block_ptr = tl.advance(K_block_ptr, (0, BLOCK_N))
        V_block_ptr = tl.advance(V_block_ptr, (BLOCK_N, 0))
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out,
              stride_qz, stride_qh, stride_qm, stride_qk,
              stride_kz, stride_kh, stride_kn, stride_kk,
              stride_vz, stride_vh, stride_vn, stride_vk,
              stride_oz, stride_oh, stride_om, stride_ok,
              H, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              STAGE: tl.constexpr):
    """One program: BLOCK_M query rows of one (batch, head). STAGE 1 is plain
    attention; STAGE 3 is causal (off-band loop, then on-band loop). N_CTX is a
    multiple of BLOCK_M, and BLOCK_M of BLOCK_N."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = (off_hz // H).to(tl.int64)
    off_h = (off_hz % H).to(tl.int64)
    Q_block_ptr = tl.make_block_ptr(
        base=Q + off_z * stride_qz + off_h * stride_qh, shape=(N_CTX, HEAD_DIM),
        strides=(stride_qm, stride_qk), offsets=(start_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    K_block_ptr = tl.make_block_ptr(
        base=K + off_z * stride_kz + off_h * stride_kh, shape=(HEAD_DIM, N_CTX),
        strides=(stride_kk, stride_kn), offsets=(0, 0),
        block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    V_block_ptr = tl.make_block_ptr(
        base=V + off_z * stride_vz + off_h * stride_vh, shape=(N_CTX, HEAD_DIM),
        strides=(stride_vn, stride_vk), offsets=(0, 0),
        block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    O_block_ptr = tl.make_block_ptr(
        base=Out + off_z * stride_oz + off_h * stride_oh, shape=(N_CTX, HEAD_DIM),
        strides=(stride_om, stride_ok), offsets=(start_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) = exp2(x * log2(e))
    q = tl.load(Q_block_ptr)
    if STAGE & 1:  # plain: all keys (inner STAGE 3); causal: the off-band keys (1)
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m,
                                        qk_scale, N_CTX, offs_m, offs_n, BLOCK_M, BLOCK_N,
                                        4 - STAGE)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m,
                                        qk_scale, N_CTX, offs_m, offs_n, BLOCK_M, BLOCK_N, 2)
    tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.math.log2(l_i))
    tl.store(O_block_ptr, (acc / l_i[:, None]).to(q.dtype))


def forward(q, k, v, causal, sm_scale, BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3):
    """softmax(q k^T * sm_scale) v for fp16 q, k, v of shape (Z, H, N, D).
    Returns (out fp16 (Z, H, N, D), M fp32 (Z*H, N): each row's log2-sum-exp2
    of the scaled scores, as the backward pass wants it, the compiled kernel)."""
    Z, H, N, D = q.shape
    assert k.shape == v.shape == q.shape, "q, k and v must have one shape"
    assert N % BLOCK_M == 0 and BLOCK_M % BLOCK_N == 0, "N_CTX a multiple of BLOCK_M, of BLOCK_N"
    out = torch.empty_like(q)
    M = torch.empty((Z * H, N), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(N, BLOCK_M), Z * H)
    compiled = _attn_fwd[grid](
        q, k, v, sm_scale, M, out, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        H, N, HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=3 if causal else 1,
        num_warps=num_warps, num_stages=num_stages)
    return out, M, compiled


# The same kernel autotuned over the benchmark's configs (as libraries ship
# FA2): each side's own autotuner picks, per (N_CTX, HEAD_DIM, STAGE). tilec's
# also times each warp count's fastest configs with a producer warpgroup
# issuing the copies, on sm_90a.
TUNED_CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3),
                 (128, 128, 8, 2), (128, 64, 8, 4))
_attn_fwd_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bm, bn, w, s in TUNED_CONFIGS],
    key=["N_CTX", "HEAD_DIM", "STAGE"])(_attn_fwd)


def forward_tuned(q, k, v, causal, sm_scale):
    """forward(), the tile config each side's autotuner's pick; also returns it."""
    Z, H, N, D = q.shape
    out = torch.empty_like(q)
    M = torch.empty((Z * H, N), device=q.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_M"]), Z * H)  # noqa: E731
    _attn_fwd_tuned[grid](q, k, v, sm_scale, M, out, *q.stride(), *k.stride(), *v.stride(),
                          *out.stride(), H, N, HEAD_DIM=D, STAGE=3 if causal else 1)
    return out, M, _attn_fwd_tuned.best_config
