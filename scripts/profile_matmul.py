"""One matmul (SIZE^3, default 4096, or M, N, K; CONFIG=BM,BN,BK,warps,stages,
default 128x128x32 w8 s3; B_KMAJOR=1 for B as tutorial 09 passes it, the
transpose of an [N, K] tensor; DTYPE=float32 for tf32 dots, or float8_e4m3fn) by tilec, or by Triton with IMPL=triton, for ncu
to profile; also writes its cubin and PTX (matmul_kernel-IMPL.*) to $OUT for cuobjdump.
Outside ncu it prints its run time: the median of 20 timings of BACK_TO_BACK launches each."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
IMPL = os.environ.get("IMPL", "tilec")
if IMPL == "tilec":
    import tilec.compat  # noqa: E402,F401  (Triton's tutorial kernel, run by tilec)
import triton_kernels as k  # noqa: E402


def triton_cdiv(a, b):
    return (a + b - 1) // b


size = int(os.environ.get("SIZE", 4096))
M, N, K = (int(os.environ.get(d, size)) for d in "MNK")
BM, BN, BK, W, S = (int(x) for x in os.environ.get("CONFIG", "128,128,32,8,3").split(","))
dtype = getattr(torch, os.environ.get("DTYPE", "float16"))
A = torch.randn(M, K, device="cuda").to(dtype)
if os.environ.get("B_KMAJOR") == "1":
    B = torch.randn(N, K, device="cuda").to(dtype).T
else:
    B = torch.randn(K, N, device="cuda").to(dtype)
C = torch.empty(M, N, device="cuda", dtype=torch.float16)
grid = (triton_cdiv(M, BM) * triton_cdiv(N, BN),)
for _ in range(3):
    kern = k.matmul_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0),
                                 B.stride(1), C.stride(0), C.stride(1),
                                 BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=W,
                                 num_stages=S)
torch.cuda.synchronize()
out = os.environ.get("OUT", "/tmp")
open(os.path.join(out, f"matmul_kernel-{IMPL}.cubin"), "wb").write(kern.asm["cubin"])
open(os.path.join(out, f"matmul_kernel-{IMPL}.ptx"), "w").write(kern.asm["ptx"])
print(IMPL, "regs", kern.n_regs, "shared", kern.metadata.shared)
if not os.environ.get("NCU_PROFILING"):  # the run time, outside ncu
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    inner = int(os.environ.get("BACK_TO_BACK", 1))  # launches per timing, as benchmarks/gpu.py
    for _ in range(20):
        start.record()
        for _ in range(inner):
            k.matmul_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0),
                                  B.stride(1), C.stride(0), C.stride(1), BLOCK_M=BM,
                                  BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=W, num_stages=S)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    ms = sorted(times)[len(times) // 2]
    print(f"{IMPL}: {ms:.4f} ms, {2.0 * M * N * K / ms * 1e-9:.1f} TFLOP/s")
