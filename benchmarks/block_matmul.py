"""Block-pointer matmuls on the GPU, tilec against Triton and torch in one run:
fp16, 4096^3, B row-major (NN) and column-major (NT: stored as B^T, read through
a block pointer with order (0, 1), as FA2 kernels read K), over a few tile
configurations. Prints TFLOP/s and the ratio tilec / Triton."""

import torch

from gpu import bench, load_kernels, row, safe

CONFIGS = ((128, 128, 64, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 4))


def main():
    import triton
    tk = load_kernels("tilec_kernels", True)
    rk = load_kernels("triton_kernels_real", False)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}")
    print(f"{'benchmark':<28} {'tilec':>10} {'triton':>10} {'torch':>10} {'t/tri':>8} unit")
    size = 4096
    A = torch.randn(size, size, device="cuda", dtype=torch.float16)
    B = torch.randn(size, size, device="cuda", dtype=torch.float16)
    Bt = B.T.contiguous()  # the NT case reads B through its transpose's storage
    C = torch.empty(size, size, device="cuda", dtype=torch.float16)
    ref = A.float() @ B.float()
    flops = lambda ms: 2 * size ** 3 / ms / 1e9  # noqa: E731
    for nt in (False, True):
        b, stride_bk, stride_bn = (Bt, 1, size) if nt else (B, size, 1)
        torch_ms = bench(lambda: torch.matmul(A, Bt.T if nt else B), reps=10)
        for BM, BN, BK, warps, stages in CONFIGS:
            grid = (triton.cdiv(size, BM) * triton.cdiv(size, BN),)
            launch = lambda m: m.block_matmul_kernel[grid](  # noqa: E731
                A, b, C, size, size, size, size, stride_bk, stride_bn, size, BLOCK_M=BM,
                BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, B_COLUMN_MAJOR=nt, num_warps=warps,
                num_stages=stages)
            res = {who: safe(lambda: flops(bench(lambda: launch(m), reps=10)))
                   for who, m in (("tilec", tk), ("triton", rk))}
            res["torch"] = flops(torch_ms)
            C.zero_()
            safe(lambda: launch(tk))
            err = ((C.float() - ref).norm() / ref.norm()).item()
            row(f"{'NT' if nt else 'NN'} {BM}x{BN}x{BK} w{warps} s{stages} ({err:.0e})", "TFLOP/s", res)


if __name__ == "__main__":
    main()
