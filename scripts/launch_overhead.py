"""Where a launch's host time goes: the whole `kernel[grid](...)`, the fast path
with the grid bound once, the bare C++ launch, and torch's own smallest op."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import tilec.compat  # noqa: E402,F401
import triton_kernels as k  # noqa: E402
from gpu import launch_us  # noqa: E402

t = torch.zeros(64, device="cuda")
kern = k.tiny_kernel[(1,)](t, 64, BLOCK=64)
bound = k.tiny_kernel[(1,)]
stream = torch.cuda.current_stream().cuda_stream
args = [t.data_ptr(), 64]
rows = [
    ("kernel[grid](...)", lambda: k.tiny_kernel[(1,)](t, 64, BLOCK=64)),
    ("bound grid, call", lambda: bound(t, 64, BLOCK=64)),
    ("fast path only", lambda: k.tiny_kernel._fast.launch((1,), (t, 64), {"BLOCK": 64})),
    ("GpuKernel.launch", lambda: kern.gpu.launch((1, 1, 1), args, stream, 0)),
    ("t.data_ptr()", lambda: t.data_ptr()),
    ("current raw stream", lambda: torch._C._cuda_getCurrentRawStream(0)),
    ("torch t.add_(1)", lambda: t.add_(1)),
]
for name, fn in rows:
    print(f"{name:<22} {launch_us(fn, n=20000):6.2f} us")
