"""One fp16 matmul (4096^3, CONFIG=BM,BN,BK,warps,stages, default 128x128x32
w8 s3) by tilec, or by Triton with IMPL=triton, for ncu to profile; also
writes its cubin and PTX (matmul-IMPL.*) to $OUT for cuobjdump."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
IMPL = os.environ.get("IMPL", "tilec")
if IMPL == "tilec":
    import tilec.compat  # noqa: E402,F401  (Triton's tutorial kernel, run by tilec)
import triton_kernels as k  # noqa: E402

size = int(os.environ.get("SIZE", 4096))
BM, BN, BK, W, S = (int(x) for x in os.environ.get("CONFIG", "128,128,32,8,3").split(","))
A = torch.randn(size, size, device="cuda", dtype=torch.float16)
B = torch.randn(size, size, device="cuda", dtype=torch.float16)
C = torch.empty(size, size, device="cuda", dtype=torch.float16)
grid = ((size // BM) * (size // BN),)
for _ in range(3):
    kern = k.matmul_kernel[grid](A, B, C, size, size, size, size, 1, size, 1, size, 1,
                                 BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=W,
                                 num_stages=S)
torch.cuda.synchronize()
out = os.environ.get("OUT", "/tmp")
open(os.path.join(out, f"matmul-{IMPL}.cubin"), "wb").write(kern.asm["cubin"])
open(os.path.join(out, f"matmul-{IMPL}.ptx"), "w").write(kern.asm["ptx"])
print(IMPL, "regs", kern.n_regs, "shared", kern.metadata.shared)
