"""The training kernels of benchmarks/training_kernels.py (loaded with `triton`
aliased to tilec), forward and backward, at small odd sizes, against torch:
the forward outputs against torch's functions, the backward ones against
torch.autograd's gradients, all computed in fp32."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from gpu import load_kernels

tk = load_kernels("training_kernels_tilec", True, "training_kernels.py")

pytestmark = pytest.mark.usefixtures("device")

DTYPES = [torch.float32, torch.bfloat16]
ROWS, COLS = 37, 300


def check(actual, expected, dtype=torch.float32):
    """actual against an fp32 expected: to fp32 rounding, or bf16's."""
    rtol, atol = (2e-2, 2e-2) if dtype == torch.bfloat16 else (1e-4, 1e-5)
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=atol)


def randn(*shape, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(dtype)


def grads(outputs, inputs, grad_outputs):
    """torch.autograd's gradients of inputs (fp32 leaves) given those of outputs."""
    return torch.autograd.grad(outputs, inputs, grad_outputs)


def leaf(t):
    return t.detach().float().requires_grad_()


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm(dtype):
    x, w, dy = randn(ROWS, COLS, dtype=dtype), randn(COLS, dtype=dtype, seed=1), randn(
        ROWS, COLS, dtype=dtype, seed=2)
    y, rstd = tk.rmsnorm_fwd(x, w, 1e-6)
    xf, wf = leaf(x), leaf(w)
    ref = rmsnorm_ref(xf, wf, 1e-6)
    check(y, ref, dtype)
    check(rstd, torch.rsqrt(xf.detach().pow(2).mean(-1) + 1e-6))
    dx, dw = tk.rmsnorm_bwd(dy, x, w, rstd)
    ref_dx, ref_dw = grads(ref, (xf, wf), dy.float())
    check(dx, ref_dx, dtype)
    check(dw, ref_dw, dtype)


def test_rmsnorm_strided_rows():
    wide = randn(ROWS, COLS + 20)
    x, w = wide[:, 5:COLS + 5], randn(COLS, seed=1)
    y, _ = tk.rmsnorm_fwd(x, w, 1e-6)
    check(y, rmsnorm_ref(x, w, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
def test_layernorm(dtype):
    x = randn(ROWS, COLS, dtype=dtype) * 2 + 0.5
    w, b = randn(COLS, dtype=dtype, seed=1), randn(COLS, dtype=dtype, seed=2)
    dy = randn(ROWS, COLS, dtype=dtype, seed=3)
    y, mean, rstd = tk.layernorm_fwd(x, w, b, 1e-5)
    xf, wf, bf = leaf(x), leaf(w), leaf(b)
    ref = F.layer_norm(xf, (COLS,), wf, bf, 1e-5)
    check(y, ref, dtype)
    check(mean, xf.detach().mean(-1))
    check(rstd, torch.rsqrt(xf.detach().var(-1, unbiased=False) + 1e-5))
    dx, dw, db = tk.layernorm_bwd(dy, x, w, mean, rstd)
    for got, want in zip((dx, dw, db), grads(ref, (xf, wf, bf), dy.float())):
        check(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rmsnorm(dtype):
    x, r = randn(ROWS, COLS, dtype=dtype), randn(ROWS, COLS, dtype=dtype, seed=1)
    w = randn(COLS, dtype=dtype, seed=2)
    dy, ds = randn(ROWS, COLS, dtype=dtype, seed=3), randn(ROWS, COLS, dtype=dtype, seed=4)
    s, y, rstd = tk.add_rmsnorm_fwd(x, r, w, 1e-6)
    xf, rf, wf = leaf(x), leaf(r), leaf(w)
    ref_s = xf + rf
    ref_y = rmsnorm_ref(ref_s, wf, 1e-6)
    check(s, ref_s, dtype)
    check(y, ref_y, dtype)
    dx, dw = tk.add_rmsnorm_bwd(dy, ds, s, w, rstd)
    ref_dx, ref_dr, ref_dw = grads((ref_s, ref_y), (xf, rf, wf), (ds.float(), dy.float()))
    torch.testing.assert_close(ref_dx, ref_dr)
    check(dx, ref_dx, dtype)
    check(dw, ref_dw, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax(dtype):
    x, dy = randn(ROWS, COLS, dtype=dtype) * 3, randn(ROWS, COLS, dtype=dtype, seed=1)
    y = tk.softmax_fwd(x)
    xf = leaf(x)
    ref = F.softmax(xf, dim=-1)
    check(y, ref, dtype)
    check(tk.softmax_bwd(dy, y), grads(ref, xf, dy.float())[0], dtype)


def test_softmax_strided_rows():
    x = randn(ROWS, 2 * COLS)[:, COLS:]  # rows 2 * COLS apart
    check(tk.softmax_fwd(x), F.softmax(x, dim=-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [256, None])  # chunks with a masked tail; one chunk
def test_cross_entropy(dtype, block):
    vocab = 1000
    logits = randn(ROWS, vocab, dtype=dtype) * 4
    target = torch.randint(0, vocab, (ROWS,), generator=torch.Generator().manual_seed(5))
    target[[0, 7, 8, 30]] = -100
    target[1] = vocab - 1  # in the last, partial chunk
    work = logits.clone()
    loss = tk.cross_entropy_fwd(work, target, ignore_index=-100, block=block)
    lf = leaf(logits)
    ref = F.cross_entropy(lf, target, ignore_index=-100)
    check(loss, ref)
    ref_grad = grads(ref, lf, torch.tensor(1.0))[0]
    check(work, ref_grad, dtype)
    assert not work[[0, 7, 8, 30]].any()  # ignored rows: zero gradient
    scaled = tk.cross_entropy_bwd(work, torch.tensor([0.5]), block=block)
    assert scaled.data_ptr() == work.data_ptr()
    check(scaled, ref_grad * 0.5, dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope(dtype):
    batch, seq, q_heads, k_heads, head_dim = 2, 7, 5, 3, 16
    q = randn(batch, seq, q_heads, head_dim, dtype=dtype)
    k = randn(batch, seq, k_heads, head_dim, dtype=dtype, seed=1)
    dq = randn(batch, seq, q_heads, head_dim, dtype=dtype, seed=2)
    dk = randn(batch, seq, k_heads, head_dim, dtype=dtype, seed=3)
    cos, sin = tk.rope_cos_sin(seq, head_dim, "cpu", dtype)
    q_out, k_out = tk.rope_fwd(q, k, cos, sin)
    qf, kf = leaf(q), leaf(k)
    c, s = cos.float()[:, None, :], sin.float()[:, None, :]  # over the heads
    ref_q = qf * c + rotate_half(qf) * s
    ref_k = kf * c + rotate_half(kf) * s
    check(q_out, ref_q, dtype)
    check(k_out, ref_k, dtype)
    dq_in, dk_in = tk.rope_bwd(dq, dk, cos, sin)
    ref_dq, ref_dk = grads((ref_q, ref_k), (qf, kf), (dq.float(), dk.float()))
    check(dq_in, ref_dq, dtype)
    check(dk_in, ref_dk, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, act", [("swiglu", F.silu),
                                       ("geglu", lambda a: F.gelu(a, approximate="tanh"))])
def test_gated_units(dtype, name, act):
    a, b = randn(ROWS, COLS, dtype=dtype) * 3, randn(ROWS, COLS, dtype=dtype, seed=1)
    dc = randn(ROWS, COLS, dtype=dtype, seed=2)
    c = getattr(tk, f"{name}_fwd")(a, b)
    af, bf = leaf(a), leaf(b)
    ref = act(af) * bf
    check(c, ref, dtype)
    da, db = getattr(tk, f"{name}_bwd")(dc, a, b)
    ref_da, ref_db = grads(ref, (af, bf), dc.float())
    check(da, ref_da, dtype)
    check(db, ref_db, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [16, None])  # several chunks a channel; one
def test_group_norm(dtype, block):
    batch, channels, groups = 3, 12, 4
    x = randn(batch, channels, 5, 7, dtype=dtype) * 2 + 1
    w, b = randn(channels, dtype=dtype, seed=1), randn(channels, dtype=dtype, seed=2)
    dy = randn(batch, channels, 5, 7, dtype=dtype, seed=3)
    y, mean, rstd = tk.group_norm_fwd(x, w, b, groups, 1e-5, block=block)
    xf, wf, bf = leaf(x), leaf(w), leaf(b)
    ref = F.group_norm(xf, groups, wf, bf, 1e-5)
    check(y, ref, dtype)
    check(mean, xf.detach().view(batch * groups, -1).mean(-1))
    dx, dw, db = tk.group_norm_bwd(dy, x, w, mean, rstd, groups, block=block)
    for got, want in zip((dx, dw, db), grads(ref, (xf, wf, bf), dy.float())):
        check(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kl_div(dtype):
    vocab = 1000
    inp = F.log_softmax(randn(ROWS, vocab) * 2, dim=-1).to(dtype)
    target = F.softmax(randn(ROWS, vocab, seed=1) * 2, dim=-1)
    target[:, ::7] = 0.0  # xlogy: no contribution, no NaN
    target = target.to(dtype)
    loss = tk.kl_div_fwd(inp, target, block=256)
    inpf = leaf(inp)
    ref = F.kl_div(inpf, target.float(), reduction="batchmean", log_target=False)
    check(loss, ref, dtype)
    grad = tk.kl_div_bwd(target, torch.tensor([0.5]), block=256)
    check(grad, grads(ref, inpf, torch.tensor(0.5))[0], dtype)


def test_wide_rows():
    """Rows as wide as the benchmark's, where the launch heuristic picks 16 and
    32 warps (on the GPU runs of this file): RMSNorm backward, SwiGLU backward,
    cross-entropy over two chunks of 32768."""
    x, dy = randn(6, 5000, seed=1), randn(6, 5000, seed=2)
    w = randn(5000, seed=3)
    xf, wf = leaf(x), leaf(w)
    ref = rmsnorm_ref(xf, wf, 1e-6)
    _, rstd = tk.rmsnorm_fwd(x, w, 1e-6)
    dx, dw = tk.rmsnorm_bwd(dy, x, w, rstd)
    ref_dx, ref_dw = grads(ref, (xf, wf), dy)
    check(dx, ref_dx)
    check(dw, ref_dw)

    a, b, dc = randn(3, 9000, seed=4), randn(3, 9000, seed=5), randn(3, 9000, seed=6)
    af, bf = leaf(a), leaf(b)
    ref_da, ref_db = grads(F.silu(af) * bf, (af, bf), dc)
    da, db = tk.swiglu_bwd(dc, a, b)
    check(da, ref_da)
    check(db, ref_db)

    logits = randn(3, 40000, seed=7) * 4
    target = torch.tensor([5, 39999, -100])
    work = logits.clone()
    loss = tk.cross_entropy_fwd(work, target)
    lf = leaf(logits)
    ref = F.cross_entropy(lf, target)
    check(loss, ref)
    check(work, grads(ref, lf, torch.tensor(1.0))[0])
