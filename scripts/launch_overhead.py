"""Where a launch's host time goes: the whole `kernel[grid](...)`, the fast path
with the grid bound once, the bare C++ launch, and torch's own smallest op."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import tilec.compat  # noqa: E402,F401
import triton_kernels as k  # noqa: E402


def per_call_us(fn, n=20000):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / n * 1e6


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
    print(f"{name:<22} {per_call_us(fn):6.2f} us")
