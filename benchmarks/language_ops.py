"""The wider language on the GPU, tilec against Triton in one run: sort, topk,
cumsum, a scan and a reduction with @jit combine functions, gather, histogram
and an mxfp8 matmul through tl.dot_scaled (benchmarks/triton_language_kernels.py,
loaded once per compiler). Each row checks the two results against torch (or
against each other), then gives the device time as bandwidth or TFLOP/s, and the
cold compile time of each side."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu import bench, load_kernels, safe  # noqa: E402  (sets the cold cache folders)


def timed_first_call(fn):
    t0 = time.perf_counter()
    out = safe(fn)
    torch.cuda.synchronize()
    return out, (time.perf_counter() - t0) * 1e3


def main():
    import triton
    tk = load_kernels("tilec_language", True, "triton_language_kernels.py")
    rk = load_kernels("triton_language", False, "triton_language_kernels.py")
    g = torch.Generator(device="cuda").manual_seed(0)
    rows, cols = 16384, 1024
    x = torch.randn(rows, cols, device="cuda", generator=g)
    near1 = 1 + torch.randn(rows, cols, device="cuda", generator=g) * 1e-3
    idx = torch.randint(0, cols, (rows, cols), device="cuda", generator=g, dtype=torch.int32)
    narrow = torch.randn(rows, 128, device="cuda", generator=g)
    values = torch.randint(0, 256, (1 << 24,), device="cuda", generator=g, dtype=torch.int32)
    mnk = 4096
    a8 = torch.randint(0, 0x7E, (mnk, mnk), device="cuda", generator=g, dtype=torch.uint8)
    b8 = torch.randint(0, 0x7E, (mnk, mnk), device="cuda", generator=g, dtype=torch.uint8)
    sa = torch.randint(120, 130, (mnk, mnk // 32), device="cuda", generator=g, dtype=torch.uint8)
    sb = torch.randint(120, 130, (mnk, mnk // 32), device="cuda", generator=g, dtype=torch.uint8)

    # name, unit, amount (bytes or flops per call), output factory, launch(module, out),
    # reference (None: tilec's output against Triton's), tolerance
    cases = [
        ("sort 16384 rows x 128", "GB/s", 2 * narrow.numel() * 4, lambda: torch.empty_like(narrow),
         lambda m, o: m.sort_rows_kernel[(rows // 8,)](narrow, o, ROWS=8, COLS=128),
         lambda: torch.sort(narrow, dim=1).values, 0),
        ("topk 8 of 16384 rows x 128", "GB/s", narrow.numel() * 4,
         lambda: torch.empty(rows, 8, device="cuda"),
         lambda m, o: m.topk_rows_kernel[(rows // 8,)](narrow, o, ROWS=8, COLS=128, K=8),
         lambda: torch.topk(narrow, 8, dim=1).values, 0),
        ("cumsum 16384 rows x 1024", "GB/s", 2 * x.numel() * 4, lambda: torch.empty_like(x),
         lambda m, o: m.cumsum_rows_kernel[(rows,)](x, o, COLS=cols),
         lambda: torch.cumsum(x, dim=1), 1e-4),
        ("scan (a*b) 16384 x 1024", "GB/s", 2 * x.numel() * 4, lambda: torch.empty_like(x),
         lambda m, o: m.cumprod_scan_kernel[(rows,)](near1, o, COLS=cols),
         lambda: torch.cumprod(near1, dim=1), 1e-5),
        ("reduce argmax 16384 x 1024", "GB/s", x.numel() * 4,
         lambda: torch.empty(rows, device="cuda", dtype=torch.int32),
         lambda m, o: m.argmax_reduce_kernel[(rows,)](x, o, COLS=cols),
         lambda: torch.argmax(x, dim=1).int(), 0),
        ("gather 16384 x 1024", "GB/s", 3 * x.numel() * 4, lambda: torch.empty_like(x),
         lambda m, o: m.gather_rows_kernel[(rows,)](x, idx, o, COLS=cols),
         lambda: torch.gather(x, 1, idx.long()), 0),
        ("histogram 2^24 -> 256 bins", "GB/s", values.numel() * 4,
         lambda: torch.zeros(256, device="cuda", dtype=torch.int32),
         lambda m, o: (o.zero_(), m.histogram_kernel[(values.numel() // 4096,)](
             values, o, BLOCK=4096, BINS=256)),
         lambda: torch.bincount(values, minlength=256).int(), 0),
        ("mxfp8 dot_scaled 4096^3", "TFLOP/s", 2 * mnk ** 3,
         lambda: torch.empty(mnk, mnk, device="cuda"),
         lambda m, o: m.mxfp8_matmul_kernel[(mnk // 128, mnk // 128)](
             a8, sa, b8, sb, o, mnk, mnk, mnk, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
             num_warps=8, num_stages=3),
         None, 1e-3),
    ]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}")
    print(f"{'benchmark':<30} {'tilec':>9} {'triton':>9} {'t/tri':>6} {'unit':<8} "
          f"{'compile tilec':>13} {'triton':>9}  check")
    for name, unit, amount, make_out, launch, reference, tol in cases:
        outs, speed, compile_ms = {}, {}, {}
        for who, m in (("tilec", tk), ("triton", rk)):
            o = make_out()
            outs[who] = o
            _, compile_ms[who] = timed_first_call(lambda: launch(m, o))
            ms = safe(lambda: bench(lambda: launch(m, o)))
            speed[who] = amount / (ms * 1e-3) / (1e9 if unit == "GB/s" else 1e12) \
                if isinstance(ms, float) else ms
        ref = reference() if reference else outs["triton"]

        def close(a, b):
            if tol == 0:
                return bool(torch.equal(a, b))
            return bool(torch.allclose(a.float(), b.float(), rtol=tol, atol=tol * b.abs().max()))
        check = f"tilec {'ok' if close(outs['tilec'], ref) else 'WRONG'}"
        if reference:
            check += f", triton {'ok' if close(outs['triton'], ref) else 'differs'}"
        ratio = (f"{speed['tilec'] / speed['triton']:6.2f}"
                 if all(isinstance(v, float) for v in speed.values()) else f"{'-':>6}")
        cells = [f"{v:9.1f}" if isinstance(v, float) else f"{str(v):>9}" for v in speed.values()]
        print(f"{name:<30} {cells[0]} {cells[1]} {ratio} {unit:<8} "
              f"{compile_ms['tilec']:10.1f} ms {compile_ms['triton']:6.0f} ms  {check}", flush=True)


if __name__ == "__main__":
    main()
