"""``nvidia.cublas.CublasLt``: cuBLAS matmuls as Triton's tutorials call them
(``matmul(a, b, c)`` writes ``a @ b.T``), through torch, which calls cuBLASLt;
tilec's build links no CUDA library."""


class CublasLt:
    def __init__(self, workspace):
        self.workspace = workspace  # torch keeps its own cuBLAS workspace

    def matmul(self, a, b, c):
        """c = a @ b.T for a (M, K), b (N, K), c (M, N) of one dtype: fp16, bf16,
        fp32, or fp8 (e4m3/e5m2, unscaled)."""
        import torch
        if a.dtype != b.dtype or a.dtype != c.dtype:
            raise TypeError(f"CublasLt.matmul: a, b and c must have one dtype, got {a.dtype}, "
                            f"{b.dtype} and {c.dtype}")
        if a.shape[1] != b.shape[1] or c.shape != (a.shape[0], b.shape[0]):
            raise ValueError(f"CublasLt.matmul: shapes {tuple(a.shape)} x {tuple(b.shape)}^T -> "
                             f"{tuple(c.shape)} do not fit")
        if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            one = torch.ones((), device=a.device, dtype=torch.float32)
            c.copy_(torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=c.dtype))
        else:
            torch.matmul(a, b.t(), out=c)
