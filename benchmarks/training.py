"""Memory-bound training kernels on the GPU, forward and backward: the kernels of
training_kernels.py (norms, softmax, cross-entropy, rotary embedding, gated
units, group norm, KL divergence) compiled by tilec and by Triton, against torch
eager, in one run. Each row first checks tilec's output against torch's and
against Triton's, then times the three sides and prints GB/s: the bytes the
operation must move at least (each input read once, each output written once)
over the median time. The torch side of a backward row is torch.autograd's
backward of the eager forward; that of the cross-entropy forward is torch's
loss and its gradient, which the kernel computes together. At the end: the
geomean of tilec/Triton and the rows below 1. `--quick` runs one shape of
each kernel; `--only NAME` the rows whose name contains NAME (rmsnorm,
layernorm, add_rms, softmax, xent, rope, swiglu, geglu, gnorm, kl_div; fwd,
bwd; bf16, fp32)."""

import argparse
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu import bench, load_kernels, row, safe  # sets fresh cache folders: cold compiles

F = torch.nn.functional
BF16, FP32 = torch.bfloat16, torch.float32
# Worst |got - expected| over the largest |expected|, per output, that still passes.
TOLERANCE = {BF16: 2e-2, FP32: 1e-3}
IGNORE = -100


class Case:
    """One row: `run(module)` launches the kernel of one side and returns its
    outputs; `torch_run()` is torch's way (timed); `expect()` the outputs to
    check against (torch_run's by default); `reset()` restores inputs that a run
    changes in place; `nbytes` the least traffic of one run."""

    def __init__(self, run, torch_run, nbytes, expect=None, reset=None):
        self.run, self.torch_run, self.nbytes = run, torch_run, nbytes
        self.expect = expect or torch_run
        self.reset = reset or (lambda: None)


def nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def dtype_name(dtype):
    return {BF16: "bf16", FP32: "fp32"}[dtype]


def randn(shape, dtype, dev, scale=1.0, shift=0.0):
    return (torch.randn(shape, device=dev) * scale + shift).to(dtype)


def needs_grad(*tensors):
    return [t.detach().clone().requires_grad_() for t in tensors]


def torch_rmsnorm(x, w, eps):
    """As Hugging Face's Llama computes it: in fp32, back to x's type, times w."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rmsnorm(shape, dtype, dev):
    cols = shape[1]
    eps = 1e-6
    x, dy = randn(shape, dtype, dev), randn(shape, dtype, dev)
    w = randn(cols, dtype, dev, 0.1, 1.0)
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + eps)
    xg, wg = needs_grad(x, w)
    y = torch_rmsnorm(xg, wg, eps)
    return {
        "fwd": Case(lambda m: m.rmsnorm_fwd(x, w, eps)[:1],
                    lambda: (torch_rmsnorm(x, w, eps),), nbytes(x, x, w, rstd)),
        "bwd": Case(lambda m: m.rmsnorm_bwd(dy, x, w, rstd),
                    lambda: torch.autograd.grad(y, (xg, wg), dy, retain_graph=True),
                    nbytes(dy, x, x, rstd, w, w)),
    }


def layernorm(shape, dtype, dev):
    cols = shape[1]
    eps = 1e-5
    x, dy = randn(shape, dtype, dev, 2.0, 0.5), randn(shape, dtype, dev)
    w, b = randn(cols, dtype, dev, 0.1, 1.0), randn(cols, dtype, dev, 0.1)
    mean = x.float().mean(-1)
    rstd = torch.rsqrt(x.float().var(-1, unbiased=False) + eps)
    xg, wg, bg = needs_grad(x, w, b)
    y = F.layer_norm(xg, (cols,), wg, bg, eps)
    return {
        "fwd": Case(lambda m: m.layernorm_fwd(x, w, b, eps)[:1],
                    lambda: (F.layer_norm(x, (cols,), w, b, eps),),
                    nbytes(x, x, w, b, mean, rstd)),
        "bwd": Case(lambda m: m.layernorm_bwd(dy, x, w, mean, rstd),
                    lambda: torch.autograd.grad(y, (xg, wg, bg), dy, retain_graph=True),
                    nbytes(dy, x, x, w, w, b, mean, rstd)),
    }


def add_rmsnorm(shape, dtype, dev):
    cols = shape[1]
    eps = 1e-6
    x, r, dy, ds = (randn(shape, dtype, dev) for _ in range(4))
    w = randn(cols, dtype, dev, 0.1, 1.0)
    s = x + r
    rstd = torch.rsqrt(s.float().pow(2).mean(-1) + eps)
    xg, rg, wg = needs_grad(x, r, w)
    sg = xg + rg
    y = torch_rmsnorm(sg, wg, eps)

    def torch_fwd():
        s = x + r
        return s, torch_rmsnorm(s, w, eps)

    def torch_bwd():
        dx, _, dw = torch.autograd.grad((sg, y), (xg, rg, wg), (ds, dy), retain_graph=True)
        return dx, dw

    return {
        "fwd": Case(lambda m: m.add_rmsnorm_fwd(x, r, w, eps)[:2], torch_fwd,
                    nbytes(x, r, w, s, s, rstd)),
        "bwd": Case(lambda m: m.add_rmsnorm_bwd(dy, ds, s, w, rstd), torch_bwd,
                    nbytes(dy, ds, s, w, rstd, s, w)),
    }


def softmax(shape, dtype, dev):
    x, dy = randn(shape, dtype, dev, 2.0), randn(shape, dtype, dev)
    (xg,) = needs_grad(x)
    y = F.softmax(xg, dim=-1)
    y_value = y.detach()
    return {
        "fwd": Case(lambda m: (m.softmax_fwd(x),), lambda: (F.softmax(x, dim=-1),),
                    nbytes(x, x)),
        "bwd": Case(lambda m: (m.softmax_bwd(dy, y_value),),
                    lambda: torch.autograd.grad(y, xg, dy, retain_graph=True),
                    nbytes(dy, y_value, x)),
    }


def cross_entropy(shape, dtype, dev):
    rows, vocab = shape
    logits = randn(shape, dtype, dev, 2.0)
    target = torch.randint(0, vocab, (rows,), device=dev)
    target[torch.rand(rows, device=dev) < 0.05] = IGNORE  # padding
    counted = int((target != IGNORE).sum().item())
    work = logits.clone()  # the kernel writes the gradient over the logits
    (lg,) = needs_grad(logits)
    grad = torch.autograd.grad(F.cross_entropy(lg, target, ignore_index=IGNORE), lg)[0]
    grad_loss = torch.tensor([0.5], device=dev)

    def torch_fwd():
        loss = F.cross_entropy(lg, target, ignore_index=IGNORE)
        return loss, torch.autograd.grad(loss, lg)[0]

    def torch_bwd():
        return (work.mul_(grad_loss.to(dtype)),)

    return {
        "fwd": Case(lambda m: (m.cross_entropy_fwd(work, target, IGNORE, n_counted=counted), work),
                    torch_fwd, nbytes(logits, logits, target),
                    reset=lambda: work.copy_(logits)),
        "bwd": Case(lambda m: (m.cross_entropy_bwd(work, grad_loss),), torch_bwd,
                    nbytes(logits, logits), expect=lambda: (grad * grad_loss.to(dtype),),
                    reset=lambda: work.copy_(grad)),
    }


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def torch_rope(q, k, cos, sin):
    """As Hugging Face computes it, the tables broadcast over the heads."""
    cos, sin = cos[:, None, :], sin[:, None, :]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope(shape, dtype, dev, kernels):
    batch, seq, q_heads, k_heads, head_dim = shape
    q, dq = (randn((batch, seq, q_heads, head_dim), dtype, dev) for _ in range(2))
    k, dk = (randn((batch, seq, k_heads, head_dim), dtype, dev) for _ in range(2))
    cos, sin = kernels.rope_cos_sin(seq, head_dim, dev, dtype)
    qg, kg = needs_grad(q, k)
    out = torch_rope(qg, kg, cos, sin)
    tables = 2 * seq * head_dim // 2 * cos.element_size()  # the kernel reads half of each
    return {
        "fwd": Case(lambda m: m.rope_fwd(q, k, cos, sin), lambda: torch_rope(q, k, cos, sin),
                    2 * nbytes(q, k) + tables),
        "bwd": Case(lambda m: m.rope_bwd(dq, dk, cos, sin),
                    lambda: torch.autograd.grad(out, (qg, kg), (dq, dk), retain_graph=True),
                    2 * nbytes(q, k) + tables),
    }


def gated(act, name):
    def build(shape, dtype, dev):
        a, b, dc = randn(shape, dtype, dev, 2.0), randn(shape, dtype, dev), randn(shape, dtype, dev)
        ag, bg = needs_grad(a, b)
        c = act(ag) * bg
        fwd, bwd = f"{name}_fwd", f"{name}_bwd"
        return {
            "fwd": Case(lambda m: (getattr(m, fwd)(a, b),), lambda: (act(a) * b,), 3 * nbytes(a)),
            "bwd": Case(lambda m: getattr(m, bwd)(dc, a, b),
                        lambda: torch.autograd.grad(c, (ag, bg), dc, retain_graph=True),
                        5 * nbytes(a)),
        }
    return build


def group_norm(shape, dtype, dev):
    batch, channels, height, width = shape
    groups, eps = 32, 1e-5
    x = randn((batch, channels, height, width), dtype, dev, 2.0, 0.5)
    dy = randn(x.shape, dtype, dev)
    w, b = randn(channels, dtype, dev, 0.1, 1.0), randn(channels, dtype, dev, 0.1)
    grouped = x.float().view(batch * groups, -1)
    mean = grouped.mean(-1)
    rstd = torch.rsqrt(grouped.var(-1, unbiased=False) + eps)
    xg, wg, bg = needs_grad(x, w, b)
    y = F.group_norm(xg, groups, wg, bg, eps)
    return {
        "fwd": Case(lambda m: m.group_norm_fwd(x, w, b, groups, eps)[:1],
                    lambda: (F.group_norm(x, groups, w, b, eps),), nbytes(x, x, w, b, mean, rstd)),
        "bwd": Case(lambda m: m.group_norm_bwd(dy, x, w, mean, rstd, groups),
                    lambda: torch.autograd.grad(y, (xg, wg, bg), dy, retain_graph=True),
                    nbytes(dy, x, x, w, w, b, mean, rstd)),
    }


def kl_div(shape, dtype, dev):
    inp = F.log_softmax(torch.randn(shape, device=dev) * 2, dim=-1).to(dtype)
    target = F.softmax(torch.randn(shape, device=dev) * 2, dim=-1).to(dtype)
    grad_loss = torch.tensor([0.5], device=dev)
    (ig,) = needs_grad(inp)
    loss = F.kl_div(ig, target, reduction="batchmean")
    return {
        "fwd": Case(lambda m: (m.kl_div_fwd(inp, target),),
                    lambda: (F.kl_div(inp, target, reduction="batchmean"),), nbytes(inp, target),
                    # in fp32: torch's bf16 log(target) - inp loses digits to cancellation
                    expect=lambda: (F.kl_div(inp.float(), target.float(), reduction="batchmean"),)),
        "bwd": Case(lambda m: (m.kl_div_bwd(target, grad_loss),),
                    lambda: torch.autograd.grad(loss, ig, grad_loss[0], retain_graph=True),
                    nbytes(target, inp)),
    }


def dims(shape):
    return "x".join(map(str, shape))


def rope_dims(shape):
    batch, seq, q_heads, k_heads, _ = shape
    return f"{batch}x{seq} h{q_heads}/{k_heads}"


def kernels(kernels_module):
    """(name, builder, shapes, label) of each kernel: the first shape is
    --quick's. A shape is that of the rows (rope: batch, seq, q heads, k heads,
    head dim; group norm, with 32 groups: that of the tensor), with its dtype;
    label(shape) names it in the table, whose names get 28 columns."""
    norms = [((4096, 4096), BF16), ((8192, 2048), BF16), ((4096, 8192), FP32)]
    vocab = [((8192, 32000), BF16), ((4096, 128256), BF16)]
    glu = [((4096, 14336), BF16), ((8192, 11008), BF16)]
    return [
        ("rmsnorm", rmsnorm, norms, dims),
        ("layernorm", layernorm, norms, dims),
        ("add_rms", add_rmsnorm, norms[:2], dims),
        ("softmax", softmax, [((4096, 4096), FP32), ((8192, 2048), BF16), ((2048, 16384), FP32)],
         dims),
        ("xent", cross_entropy, vocab, dims),
        ("rope", lambda *a: rope(*a, kernels_module),
         [((4, 2048, 32, 32, 128), BF16), ((2, 4096, 32, 8, 128), BF16)], rope_dims),
        ("swiglu", gated(F.silu, "swiglu"), glu, dims),
        ("geglu", gated(lambda a: F.gelu(a, approximate="tanh"), "geglu"), glu, dims),
        ("gnorm", group_norm, [((32, 512, 64, 64), FP32), ((8, 256, 128, 128), BF16)], dims),
        ("kl_div", kl_div, [((8192, 32000), FP32), ((4096, 128256), BF16)], dims),
    ]


def relative_error(got, expected):
    """The worst over the outputs of max |got - expected| / max |expected|."""
    assert len(got) == len(expected), "a side returned other outputs than torch"
    worst = 0.0
    for g, e in zip(got, expected):
        g, e = g.float(), e.float()
        err = (g - e).abs().max().item() / max(e.abs().max().item(), 1e-30)
        if not math.isfinite(err):  # NaN or inf where torch has none
            return math.inf
        worst = max(worst, err)
    return worst


def outputs(case, fn):
    """fn's outputs, copied (a later run may overwrite them), the inputs reset first."""
    case.reset()
    result = fn()
    return [t.detach().clone() for t in result]


def check(case, modules, dtype):
    """Lines that say where tilec's outputs are wrong (none when right) and where
    Triton's disagree with torch's (the kernel's own fault); and the sides that
    failed to run."""
    expected = outputs(case, case.expect)
    got = {who: safe(lambda m=m: outputs(case, lambda: case.run(m))) for who, m in modules.items()}
    tol, lines = TOLERANCE[dtype], []
    if isinstance(got["tilec"], list):
        err = relative_error(got["tilec"], expected)
        if not err <= tol:
            lines.append(f"tilec wrong: {err:.1e} from torch (tolerance {tol:.0e})")
        if isinstance(got["triton"], list):
            err = relative_error(got["tilec"], got["triton"])
            if not err <= tol:
                lines.append(f"tilec wrong: {err:.1e} from Triton")
    if isinstance(got["triton"], list):
        err = relative_error(got["triton"], expected)
        if not err <= tol:
            lines.append(f"(Triton itself {err:.1e} from torch: the kernel's fault)")
    case.reset()
    return lines, [who for who, outs in got.items() if not isinstance(outs, list)]


def measure(case, modules, failed):
    gbs = lambda ms: case.nbytes / ms / 1e6
    res = {who: "failed" if who in failed else safe(lambda m=m: gbs(bench(lambda: case.run(m))))
           for who, m in modules.items()}
    res["torch"] = safe(lambda: gbs(bench(case.torch_run)))
    return res


def summary(ratios, wrong):
    if ratios:
        geomean = math.exp(sum(math.log(r) for _, r in ratios) / len(ratios))
        print(f"geomean tilec/Triton over {len(ratios)} rows: {geomean:.3f}")
    slow = [(name, r) for name, r in ratios if r < 1.0]
    print(f"rows below 1.0 ({len(slow)}):")
    for name, r in sorted(slow, key=lambda item: item[1]):
        print(f"  {r:6.3f}  {name}")
    if wrong:
        print(f"rows where tilec's output is wrong, left out of the geomean ({len(wrong)}):")
        for name in wrong:
            print(f"  {name}")


def table(modules, dev, quick=False, only=None):
    """Checks, times and prints each row; returns (name, tilec/Triton) of the
    rows where tilec is right, and the names of those where it is wrong."""
    ratios, wrong = [], []
    for kernel, build, shapes, label in kernels(modules["tilec"]):
        for shape, dtype in shapes[:1] if quick else shapes:
            names = {d: f"{kernel} {d} {label(shape)} {dtype_name(dtype)}"
                     for d in ("fwd", "bwd")}
            if only and not any(only in n for n in names.values()):
                continue
            cases = build(shape, dtype, dev)
            for direction, case in cases.items():
                name = names[direction]
                if only and only not in name:
                    continue
                problems, failed = check(case, modules, dtype)
                res = measure(case, modules, failed)
                row(name, "GB/s", res)
                for line in problems:
                    print(f"   {line}", flush=True)
                if any(line.startswith("tilec wrong") for line in problems):
                    wrong.append(name)
                elif all(isinstance(res[w], float) for w in ("tilec", "triton")):
                    ratios.append((name, res["tilec"] / res["triton"]))
            del cases
            if dev == "cuda":
                torch.cuda.empty_cache()
    return ratios, wrong


def compiled_kernels(fn):
    """The kernels a @jit function compiled so far, tilec's or Triton's."""
    if hasattr(fn, "device_caches"):  # Triton: per device, (kernels by key, ...)
        return [k for cache in fn.device_caches.values() for k in cache[0].values()]
    return list(getattr(fn, "cache", {}).values())


def kernel_stats(modules, ptx_dir=None):
    """Per kernel and side: registers, spilled bytes and PTX lines of each
    specialization compiled during the run (largest first); with ptx_dir,
    each side's PTX is written there."""
    print(f"{'kernel':<22} {'tilec regs/spills/lines':>28} {'triton regs/spills/lines':>28}")
    names = sorted(n for n, f in vars(modules["tilec"]).items() if hasattr(f, "fn") and n.startswith("_"))
    for name in names:
        cells = []
        for who in ("tilec", "triton"):
            stats = []
            for i, k in enumerate(compiled_kernels(getattr(modules[who], name))):
                ptx = k.asm.get("ptx", "")
                stats.append(f"{k.n_regs}/{k.n_spills}/{ptx.count(chr(10))}")
                if ptx_dir:
                    os.makedirs(ptx_dir, exist_ok=True)
                    with open(os.path.join(ptx_dir, f"{name}.{i}.{who}.ptx"), "w") as f:
                        f.write(ptx)
            cells.append(" ".join(stats) or "-")
        print(f"{name:<22} {cells[0]:>28} {cells[1]:>28}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one shape of each kernel")
    parser.add_argument("--only", default=None, metavar="NAME",
                        help="the rows whose name contains NAME")
    parser.add_argument("--stats", default=None, metavar="DIR", nargs="?", const="",
                        help="then each kernel's registers, spills and PTX lines on both "
                             "sides (and their PTX into DIR)")
    args = parser.parse_args()
    import triton
    modules = {"tilec": load_kernels("training_tilec", True, "training_kernels.py"),
               "triton": load_kernels("training_triton", False, "training_kernels.py")}
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}")
    print(f"{'kernel':<28} {'tilec':>10} {'triton':>10} {'torch':>10} {'t/tri':>8} unit")
    torch.manual_seed(0)
    summary(*table(modules, "cuda", args.quick, args.only))
    if args.stats is not None:
        kernel_stats(modules, args.stats or None)


if __name__ == "__main__":
    main()
