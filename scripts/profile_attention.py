"""Triton's fused-attention tutorial (06), unchanged, run by tilec or, with
IMPL=triton, by Triton: fp16 forward and backward at batch 4, 32 heads (D=64,
N=4096, CAUSAL=0 by default), for ncu to profile (scripts/profile.sh ...
_attn_bwd or _attn_fwd); writes the kernel's cubin to $OUT/KERNEL-IMPL.cubin
(KERNEL=_attn_bwd by default) and prints each kernel's run time outside ncu.
The forward runs its one test config (as under pytest) for both."""

import os
import runpy
import sys

import torch

IMPL = os.environ.get("IMPL", "tilec")
if IMPL == "tilec":
    import tilec.compat  # noqa: F401  (`import triton` gives tilec)
os.environ["PYTEST_VERSION"] = "1"  # the tutorial's one forward config, the same for both
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tutorial = runpy.run_path(os.path.join(ROOT, ".conformance", "triton-3.6", "python", "tutorials",
                                       "06-fused-attention.py"), run_name="tutorial06")
D, N = int(os.environ.get("D", 64)), int(os.environ.get("N", 4096))
causal = os.environ.get("CAUSAL", "0") == "1"
q, k, v = (torch.randn(4, 32, N, D, device="cuda", dtype=torch.float16, requires_grad=True)
           for _ in range(3))
fwd = lambda: tutorial["attention"](q, k, v, causal, 1.3, False)  # noqa: E731
o = fwd()
do = torch.randn_like(o)
bwd = lambda: o.backward(do, retain_graph=True)  # noqa: E731
for _ in range(3):
    fwd()
    bwd()
torch.cuda.synchronize()
name = os.environ.get("KERNEL", "_attn_bwd")
kernel = tutorial[name]
# The kernel's last compiled variant: Triton keeps them per device, tilec in `cache`.
variants = kernel.device_caches[0][0] if IMPL == "triton" else kernel.cache
compiled = list(variants.values())[-1]
out = os.environ.get("OUT", "/tmp")
open(os.path.join(out, f"{name}-{IMPL}.cubin"), "wb").write(compiled.asm["cubin"])
print(IMPL, name, "regs", compiled.n_regs, "spills", compiled.n_spills, "shared",
      compiled.metadata.shared)
if not os.environ.get("NCU_PROFILING"):
    for label, fn in (("fwd", fwd), ("bwd", bwd)):
        ms = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(10):
            ms[0].record()
            fn()
            ms[1].record()
            ms[1].synchronize()
            times.append(ms[0].elapsed_time(ms[1]))
        t = sorted(times)[len(times) // 2]
        flops = 4.0 * 4 * 32 * N * N * D * (0.5 if causal else 1) * (2.5 if label == "bwd" else 1)
        print(f"{IMPL} {label}: {t:.3f} ms, {flops / t * 1e-9:.0f} TFLOP/s")
