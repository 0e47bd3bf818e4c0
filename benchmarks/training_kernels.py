"""Memory-bound training kernels, forward and backward, written the way Triton
users write them for LLM training: one program per row, a block as wide as the
row, fp32 math inside, weight gradients as per-program partial sums that the
host adds up. Each kernel has a host wrapper taking torch tensors.
benchmarks/training.py and tests/test_training_kernels.py load this file twice:
once with the real Triton, once with `triton` aliased to tilec."""

import torch
import triton
import triton.language as tl

try:
    from triton.language.extra.libdevice import tanh
except ImportError:  # older Triton releases
    from triton.language.extra.cuda.libdevice import tanh

MAX_BLOCK = 65536  # widest row a one-block kernel takes


def block_and_warps(n_cols):
    """The block covering a row of n_cols, and the warps to give it."""
    block = triton.next_power_of_2(n_cols)
    if block > MAX_BLOCK:
        raise ValueError(f"rows of {n_cols} elements do not fit one block")
    if block >= 32768:
        return block, 32
    if block >= 8192:
        return block, 16
    if block >= 2048:
        return block, 8
    return block, 4


def programs_for(device):
    """How many programs share the rows of a backward that sums partial weight
    gradients: one per SM on the GPU, a few on the CPU."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


# RMSNorm: y = x / sqrt(mean(x^2) + eps) * w

@triton.jit
def _rmsnorm_fwd(Y, X, W, RSTD, stride_y, stride_x, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    y = x * rstd * w
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_bwd(DX, DY, X, W, RSTD, DW_PARTIAL, stride_dx, stride_dy, stride_x, n_rows, n_cols,
                 rows_per_program, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    first = pid * rows_per_program
    last = min(first + rows_per_program, n_rows)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    # the row pointers walk down the rows, one stride a step
    X += first * stride_x
    DY += first * stride_dy
    DX += first * stride_dx
    for row in range(first, last):
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        x_hat = x * rstd
        w_dy = w * dy
        c = tl.sum(w_dy * x_hat, axis=0) / n_cols
        dx = (w_dy - x_hat * c) * rstd
        tl.store(DX + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * x_hat
        X += stride_x
        DY += stride_dy
        DX += stride_dx
    tl.store(DW_PARTIAL + pid * n_cols + cols, dw, mask=mask)


def rmsnorm_fwd(x, w, eps=1e-6):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _rmsnorm_fwd[(n_rows,)](y, x, w, rstd, y.stride(0), x.stride(0), n_cols, eps,
                            BLOCK_SIZE=block, num_warps=warps)
    return y, rstd


def rmsnorm_bwd(dy, x, w, rstd):
    n_rows, n_cols = x.shape
    dx = torch.empty_like(x)
    programs = min(programs_for(x.device), n_rows)
    dw_partial = torch.empty(programs, n_cols, device=x.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _rmsnorm_bwd[(programs,)](dx, dy, x, w, rstd, dw_partial, dx.stride(0), dy.stride(0),
                              x.stride(0), n_rows, n_cols, triton.cdiv(n_rows, programs),
                              BLOCK_SIZE=block, num_warps=warps)
    return dx, dw_partial.sum(0).to(w.dtype)


# LayerNorm: y = (x - mean) / sqrt(var + eps) * w + b

@triton.jit
def _layernorm_fwd(Y, X, W, B, MEAN, RSTD, stride_y, stride_x, n_cols, eps,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    rstd = tl.rsqrt(var + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    y = centered * rstd * w + b
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_bwd(DX, DY, X, W, MEAN, RSTD, DW_PARTIAL, DB_PARTIAL, stride_dx, stride_dy,
                   stride_x, n_rows, n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    first = pid * rows_per_program
    last = min(first + rows_per_program, n_rows)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for row in range(first, last):
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(MEAN + row)
        rstd = tl.load(RSTD + row)
        x_hat = (x - mean) * rstd
        w_dy = w * dy
        c1 = tl.sum(x_hat * w_dy, axis=0) / n_cols
        c2 = tl.sum(w_dy, axis=0) / n_cols
        dx = (w_dy - (x_hat * c1 + c2)) * rstd
        tl.store(DX + row * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * x_hat
        db += dy
    tl.store(DW_PARTIAL + pid * n_cols + cols, dw, mask=mask)
    tl.store(DB_PARTIAL + pid * n_cols + cols, db, mask=mask)


def layernorm_fwd(x, w, b, eps=1e-5):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _layernorm_fwd[(n_rows,)](y, x, w, b, mean, rstd, y.stride(0), x.stride(0), n_cols, eps,
                              BLOCK_SIZE=block, num_warps=warps)
    return y, mean, rstd


def layernorm_bwd(dy, x, w, mean, rstd):
    n_rows, n_cols = x.shape
    dx = torch.empty_like(x)
    programs = min(programs_for(x.device), n_rows)
    dw_partial = torch.empty(programs, n_cols, device=x.device, dtype=torch.float32)
    db_partial = torch.empty(programs, n_cols, device=x.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _layernorm_bwd[(programs,)](dx, dy, x, w, mean, rstd, dw_partial, db_partial, dx.stride(0),
                                dy.stride(0), x.stride(0), n_rows, n_cols,
                                triton.cdiv(n_rows, programs), BLOCK_SIZE=block, num_warps=warps)
    return dx, dw_partial.sum(0).to(w.dtype), db_partial.sum(0).to(w.dtype)


# Residual add, then RMSNorm: s = x + r (the residual stream, kept), y = rmsnorm(s)

@triton.jit
def _add_rmsnorm_fwd(S, Y, X, R, W, RSTD, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offs = row * stride + cols
    x = tl.load(X + offs, mask=mask, other=0.0)
    r = tl.load(R + offs, mask=mask, other=0.0)
    s = x + r  # in the input type, as the residual stream is kept
    tl.store(S + offs, s, mask=mask)
    s = s.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(s * s, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + offs, (s * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _add_rmsnorm_bwd(DX, DY, DS, S, W, RSTD, DW_PARTIAL, stride, n_rows, n_cols,
                     rows_per_program, BLOCK_SIZE: tl.constexpr):
    """DS is the gradient that reaches the residual stream s from further on;
    DX, the gradient of s, is that of both x and r."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    first = pid * rows_per_program
    last = min(first + rows_per_program, n_rows)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for row in range(first, last):
        offs = row.to(tl.int64) * stride + cols
        s = tl.load(S + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + offs, mask=mask, other=0.0).to(tl.float32)
        ds = tl.load(DS + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        s_hat = s * rstd
        w_dy = w * dy
        c = tl.sum(w_dy * s_hat, axis=0) / n_cols
        dx = (w_dy - s_hat * c) * rstd + ds
        tl.store(DX + offs, dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * s_hat
    tl.store(DW_PARTIAL + pid * n_cols + cols, dw, mask=mask)


def add_rmsnorm_fwd(x, r, w, eps=1e-6):
    n_rows, n_cols = x.shape
    assert r.stride() == x.stride()
    s = torch.empty_like(x)
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _add_rmsnorm_fwd[(n_rows,)](s, y, x, r, w, rstd, x.stride(0), n_cols, eps,
                                BLOCK_SIZE=block, num_warps=warps)
    return s, y, rstd


def add_rmsnorm_bwd(dy, ds, s, w, rstd):
    """The gradient of x, which is also that of r."""
    n_rows, n_cols = s.shape
    assert dy.stride() == s.stride() and ds.stride() == s.stride()
    dx = torch.empty_like(s)
    programs = min(programs_for(s.device), n_rows)
    dw_partial = torch.empty(programs, n_cols, device=s.device, dtype=torch.float32)
    block, warps = block_and_warps(n_cols)
    _add_rmsnorm_bwd[(programs,)](dx, dy, ds, s, w, rstd, dw_partial, s.stride(0), n_rows,
                                  n_cols, triton.cdiv(n_rows, programs), BLOCK_SIZE=block,
                                  num_warps=warps)
    return dx, dw_partial.sum(0).to(w.dtype)


# Softmax over each row

@triton.jit
def _softmax_fwd(Y, X, stride_y, stride_x, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd(DX, DY, Y, stride_dx, stride_dy, stride_y, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    y = tl.load(Y + row * stride_y + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(y * dy, axis=0))
    tl.store(DX + row * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=mask)


def softmax_fwd(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block, warps = block_and_warps(n_cols)
    _softmax_fwd[(n_rows,)](y, x, y.stride(0), x.stride(0), n_cols, BLOCK_SIZE=block,
                            num_warps=warps)
    return y


def softmax_bwd(dy, y):
    n_rows, n_cols = y.shape
    dx = torch.empty_like(y)
    block, warps = block_and_warps(n_cols)
    _softmax_bwd[(n_rows,)](dx, dy, y, dx.stride(0), dy.stride(0), y.stride(0), n_cols,
                            BLOCK_SIZE=block, num_warps=warps)
    return dx


# Cross-entropy over a large vocabulary: the loss of each row from an online
# softmax over chunks of the row, then the gradient of the mean loss written over
# the logits, in place. Rows whose target is ignore_index get zero loss and grad.

@triton.jit
def _cross_entropy_fwd(LOGITS, TARGET, LOSS, stride, n_cols, n_counted, ignore_index,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    LOGITS += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    target = tl.load(TARGET + row)
    if target == ignore_index:
        for start in range(0, n_cols, BLOCK_SIZE):
            tl.store(LOGITS + start + cols, 0.0, mask=start + cols < n_cols)
        tl.store(LOSS + row, 0.0)
        return

    # Read before the loops: the second overwrites the row, and a warp storing
    # the target's gradient does not wait for the others to have read its logit.
    target_logit = tl.load(LOGITS + target).to(tl.float32)
    running_max = float("-inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(LOGITS + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max),
                                                                           axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    tl.store(LOSS + row, (lse - target_logit) / n_counted)

    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(LOGITS + offs, mask=mask, other=float("-inf")).to(tl.float32)
        p = tl.exp(x - lse)
        grad = tl.where(offs == target, p - 1.0, p) / n_counted
        tl.store(LOGITS + offs, grad.to(LOGITS.dtype.element_ty), mask=mask)


@triton.jit
def _scale_rows(X, SCALE, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    X += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    scale = tl.load(SCALE).to(tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(X + offs, (x * scale).to(X.dtype.element_ty), mask=mask)


def cross_entropy_fwd(logits, target, ignore_index=-100, block=None, n_counted=None):
    """The mean loss over the rows whose target is not ignore_index (n_counted of
    them: counted here, a sync, unless given); the logits are overwritten by the
    gradient of that loss."""
    n_rows, n_cols = logits.shape
    if n_counted is None:
        n_counted = int((target != ignore_index).sum().item())
    n_counted = max(n_counted, 1)
    loss = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
    block = block or min(32768, triton.next_power_of_2(n_cols))
    _, warps = block_and_warps(block)
    _cross_entropy_fwd[(n_rows,)](logits, target, loss, logits.stride(0), n_cols, n_counted,
                                  ignore_index, BLOCK_SIZE=block, num_warps=warps)
    return loss.sum()


def cross_entropy_bwd(grad_logits, grad_loss, block=None):
    """The gradient the forward left in the logits, times that of the loss, in place."""
    n_rows, n_cols = grad_logits.shape
    block = block or min(32768, triton.next_power_of_2(n_cols))
    _, warps = block_and_warps(block)
    _scale_rows[(n_rows,)](grad_logits, grad_loss, grad_logits.stride(0), n_cols,
                           BLOCK_SIZE=block, num_warps=warps)
    return grad_logits


# Rotary embedding on q and k (batch, seq, heads, head_dim), the two halves of
# each head rotated against each other; cos and sin are (seq, head_dim) with
# both halves equal. The backward rotates back: the same with -sin.

@triton.jit
def _rope(Q_OUT, K_OUT, Q, K, COS, SIN, seq_len, n_q_heads, n_k_heads, stride_q, stride_k,
          stride_cos, HEAD_DIM: tl.constexpr, BLOCK_QH: tl.constexpr, BLOCK_KH: tl.constexpr,
          BACKWARD: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    pos = token % seq_len
    half = tl.arange(0, HEAD_DIM // 2)
    cos = tl.load(COS + pos * stride_cos + half).to(tl.float32)
    sin = tl.load(SIN + pos * stride_cos + half).to(tl.float32)
    if BACKWARD:
        sin = -sin

    heads = tl.arange(0, BLOCK_QH)
    offs = token * stride_q + heads[:, None] * HEAD_DIM + half[None, :]
    mask = (heads[:, None] < n_q_heads) & (half[None, :] < HEAD_DIM // 2)
    x1 = tl.load(Q + offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(Q + offs + HEAD_DIM // 2, mask=mask, other=0.0).to(tl.float32)
    tl.store(Q_OUT + offs, (x1 * cos - x2 * sin).to(Q_OUT.dtype.element_ty), mask=mask)
    tl.store(Q_OUT + offs + HEAD_DIM // 2, (x2 * cos + x1 * sin).to(Q_OUT.dtype.element_ty),
             mask=mask)

    heads = tl.arange(0, BLOCK_KH)
    offs = token * stride_k + heads[:, None] * HEAD_DIM + half[None, :]
    mask = (heads[:, None] < n_k_heads) & (half[None, :] < HEAD_DIM // 2)
    x1 = tl.load(K + offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(K + offs + HEAD_DIM // 2, mask=mask, other=0.0).to(tl.float32)
    tl.store(K_OUT + offs, (x1 * cos - x2 * sin).to(K_OUT.dtype.element_ty), mask=mask)
    tl.store(K_OUT + offs + HEAD_DIM // 2, (x2 * cos + x1 * sin).to(K_OUT.dtype.element_ty),
             mask=mask)


def _rope_launch(q, k, cos, sin, backward):
    batch, seq_len, n_q_heads, head_dim = q.shape
    n_k_heads = k.shape[2]
    assert q.is_contiguous() and k.is_contiguous() and cos.is_contiguous() and sin.is_contiguous()
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    block_qh = triton.next_power_of_2(n_q_heads)
    block_kh = triton.next_power_of_2(n_k_heads)
    _, warps = block_and_warps(block_qh * head_dim // 2)
    _rope[(batch * seq_len,)](q_out, k_out, q, k, cos, sin, seq_len, n_q_heads, n_k_heads,
                              q.stride(1), k.stride(1), cos.stride(0), HEAD_DIM=head_dim,
                              BLOCK_QH=block_qh, BLOCK_KH=block_kh, BACKWARD=backward,
                              num_warps=warps)
    return q_out, k_out


def rope_fwd(q, k, cos, sin):
    return _rope_launch(q, k, cos, sin, False)


def rope_bwd(dq, dk, cos, sin):
    return _rope_launch(dq, dk, cos, sin, True)


# Gated linear units: c = silu(a) * b (SwiGLU), c = gelu_tanh(a) * b (GEGLU)

@triton.jit
def _swiglu_fwd(C, A, B, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    c = a * tl.sigmoid(a) * b
    tl.store(C + row * stride + cols, c.to(C.dtype.element_ty), mask=mask)


@triton.jit
def _swiglu_bwd(DA, DB, DC, A, B, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offs = row * stride + cols
    dc = tl.load(DC + offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(A + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + offs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(a)
    silu = a * sig
    da = dc * b * sig * (1.0 + a * (1.0 - sig))
    tl.store(DA + offs, da.to(DA.dtype.element_ty), mask=mask)
    tl.store(DB + offs, (dc * silu).to(DB.dtype.element_ty), mask=mask)


@triton.jit
def _geglu_fwd(C, A, B, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    t = tanh(sqrt_2_over_pi * (a + 0.044715 * a * a * a))
    c = 0.5 * a * (1.0 + t) * b
    tl.store(C + row * stride + cols, c.to(C.dtype.element_ty), mask=mask)


@triton.jit
def _geglu_bwd(DA, DB, DC, A, B, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offs = row * stride + cols
    dc = tl.load(DC + offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(A + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + offs, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    a2 = a * a
    t = tanh(sqrt_2_over_pi * a * (1.0 + 0.044715 * a2))
    gelu = 0.5 * a * (1.0 + t)
    dgelu = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * sqrt_2_over_pi * (1.0 + 3 * 0.044715 * a2)
    tl.store(DA + offs, (dc * b * dgelu).to(DA.dtype.element_ty), mask=mask)
    tl.store(DB + offs, (dc * gelu).to(DB.dtype.element_ty), mask=mask)


def _glu_fwd(kernel, a, b):
    n_rows, n_cols = a.shape
    assert b.stride() == a.stride()
    c = torch.empty_like(a)
    block, warps = block_and_warps(n_cols)
    kernel[(n_rows,)](c, a, b, a.stride(0), n_cols, BLOCK_SIZE=block, num_warps=warps)
    return c


def _glu_bwd(kernel, dc, a, b):
    n_rows, n_cols = a.shape
    assert b.stride() == a.stride() and dc.stride() == a.stride()
    da = torch.empty_like(a)
    db = torch.empty_like(b)
    block, warps = block_and_warps(n_cols)
    kernel[(n_rows,)](da, db, dc, a, b, a.stride(0), n_cols, BLOCK_SIZE=block, num_warps=warps)
    return da, db


def swiglu_fwd(a, b):
    return _glu_fwd(_swiglu_fwd, a, b)


def swiglu_bwd(dc, a, b):
    return _glu_bwd(_swiglu_bwd, dc, a, b)


def geglu_fwd(a, b):
    return _glu_fwd(_geglu_fwd, a, b)


def geglu_bwd(dc, a, b):
    return _glu_bwd(_geglu_bwd, dc, a, b)


# Group norm over x (batch, channels, *spatial): one program per (sample, group),
# looping over the group's channels, which lie next to each other in memory.

@triton.jit
def _group_norm_fwd(Y, X, W, B, MEAN, RSTD, n_groups, channels_per_group, spatial, eps,
                    BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # sample * n_groups + group
    group = pid % n_groups
    group_size = channels_per_group * spatial
    X += pid * group_size
    Y += pid * group_size
    cols = tl.arange(0, BLOCK_SIZE)

    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    total_sq = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, group_size, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(X + offs, mask=offs < group_size, other=0.0).to(tl.float32)
        total += x
        total_sq += x * x
    mean = tl.sum(total, axis=0) / group_size
    var = tl.sum(total_sq, axis=0) / group_size - mean * mean
    rstd = tl.rsqrt(var + eps)
    tl.store(MEAN + pid, mean)
    tl.store(RSTD + pid, rstd)

    for c in range(channels_per_group):
        channel = group * channels_per_group + c
        w = tl.load(W + channel).to(tl.float32)
        b = tl.load(B + channel).to(tl.float32)
        for start in range(0, spatial, BLOCK_SIZE):
            offs = c * spatial + start + cols
            mask = start + cols < spatial
            x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _group_norm_bwd(DX, DY, X, W, MEAN, RSTD, DW_PARTIAL, DB_PARTIAL, n_channels, n_groups,
                    channels_per_group, spatial, BLOCK_SIZE: tl.constexpr):
    """DW_PARTIAL and DB_PARTIAL (batch, channels): each sample's share of the
    weight and bias gradients."""
    pid = tl.program_id(0).to(tl.int64)
    sample = pid // n_groups
    group = pid % n_groups
    group_size = channels_per_group * spatial
    X += pid * group_size
    DY += pid * group_size
    DX += pid * group_size
    mean = tl.load(MEAN + pid)
    rstd = tl.load(RSTD + pid)
    cols = tl.arange(0, BLOCK_SIZE)

    sum_w_dy_xhat = 0.0
    sum_w_dy = 0.0
    for c in range(channels_per_group):
        channel = group * channels_per_group + c
        w = tl.load(W + channel).to(tl.float32)
        dy_xhat = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        dy_total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        for start in range(0, spatial, BLOCK_SIZE):
            offs = c * spatial + start + cols
            mask = start + cols < spatial
            x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(DY + offs, mask=mask, other=0.0).to(tl.float32)
            dy_xhat += dy * (x - mean) * rstd
            dy_total += dy
        channel_dw = tl.sum(dy_xhat, axis=0)
        channel_db = tl.sum(dy_total, axis=0)
        tl.store(DW_PARTIAL + sample * n_channels + channel, channel_dw)
        tl.store(DB_PARTIAL + sample * n_channels + channel, channel_db)
        sum_w_dy_xhat += w * channel_dw
        sum_w_dy += w * channel_db

    c1 = sum_w_dy_xhat / group_size
    c2 = sum_w_dy / group_size
    for c in range(channels_per_group):
        w = tl.load(W + group * channels_per_group + c).to(tl.float32)
        for start in range(0, spatial, BLOCK_SIZE):
            offs = c * spatial + start + cols
            mask = start + cols < spatial
            x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(DY + offs, mask=mask, other=0.0).to(tl.float32)
            x_hat = (x - mean) * rstd
            dx = (w * dy - (x_hat * c1 + c2)) * rstd
            tl.store(DX + offs, dx.to(DX.dtype.element_ty), mask=mask)


def _group_norm_block(spatial, block):
    block = block or min(4096, triton.next_power_of_2(spatial))
    return block, block_and_warps(block)[1]


def group_norm_fwd(x, w, b, n_groups, eps=1e-5, block=None):
    batch, channels = x.shape[:2]
    assert x.is_contiguous() and channels % n_groups == 0
    spatial = x[0, 0].numel()
    y = torch.empty_like(x)
    mean = torch.empty(batch * n_groups, device=x.device, dtype=torch.float32)
    rstd = torch.empty(batch * n_groups, device=x.device, dtype=torch.float32)
    block, warps = _group_norm_block(spatial, block)
    _group_norm_fwd[(batch * n_groups,)](y, x, w, b, mean, rstd, n_groups, channels // n_groups,
                                         spatial, eps, BLOCK_SIZE=block, num_warps=warps)
    return y, mean, rstd


def group_norm_bwd(dy, x, w, mean, rstd, n_groups, block=None):
    batch, channels = x.shape[:2]
    assert x.is_contiguous() and dy.is_contiguous()
    spatial = x[0, 0].numel()
    dx = torch.empty_like(x)
    dw_partial = torch.empty(batch, channels, device=x.device, dtype=torch.float32)
    db_partial = torch.empty(batch, channels, device=x.device, dtype=torch.float32)
    block, warps = _group_norm_block(spatial, block)
    _group_norm_bwd[(batch * n_groups,)](dx, dy, x, w, mean, rstd, dw_partial, db_partial,
                                         channels, n_groups, channels // n_groups, spatial,
                                         BLOCK_SIZE=block, num_warps=warps)
    return dx, dw_partial.sum(0).to(w.dtype), db_partial.sum(0).to(w.dtype)


# KL divergence of the log-probabilities `inp` from the probabilities `target`
# (log_target=False): sum of target * (log(target) - inp), over the batch's rows.

@triton.jit
def _kl_div_fwd(LOSS, INP, TARGET, stride_inp, stride_target, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    INP += row * stride_inp
    TARGET += row * stride_target
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(INP + offs, mask=mask, other=0.0).to(tl.float32)
        t = tl.load(TARGET + offs, mask=mask, other=0.0).to(tl.float32)
        acc += tl.where(t > 0.0, t * (tl.log(t) - x), 0.0)
    tl.store(LOSS + row, tl.sum(acc, axis=0))


@triton.jit
def _kl_div_bwd(GRAD, TARGET, GRAD_LOSS, stride_grad, stride_target, n_cols, scale,
                BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    GRAD += row * stride_grad
    TARGET += row * stride_target
    g = tl.load(GRAD_LOSS).to(tl.float32) * scale
    cols = tl.arange(0, BLOCK_SIZE)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        t = tl.load(TARGET + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(GRAD + offs, (-t * g).to(GRAD.dtype.element_ty), mask=mask)


def kl_div_fwd(inp, target, block=None):
    """The loss summed over each row and divided by the number of rows ('batchmean')."""
    n_rows, n_cols = inp.shape
    per_row = torch.empty(n_rows, device=inp.device, dtype=torch.float32)
    block = block or min(8192, triton.next_power_of_2(n_cols))
    _, warps = block_and_warps(block)
    _kl_div_fwd[(n_rows,)](per_row, inp, target, inp.stride(0), target.stride(0), n_cols,
                           BLOCK_SIZE=block, num_warps=warps)
    return per_row.sum() / n_rows


def kl_div_bwd(target, grad_loss, block=None):
    """The gradient of the input, given grad_loss (a one-element tensor)."""
    n_rows, n_cols = target.shape
    grad = torch.empty_like(target)
    block = block or min(8192, triton.next_power_of_2(n_cols))
    _, warps = block_and_warps(block)
    _kl_div_bwd[(n_rows,)](grad, target, grad_loss, grad.stride(0), target.stride(0), n_cols,
                           1.0 / n_rows, BLOCK_SIZE=block, num_warps=warps)
    return grad


def rope_cos_sin(seq_len, head_dim, device, dtype, base=10000.0):
    """cos and sin tables (seq_len, head_dim), the halves equal, as models build them."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)

