"""tilec against torch and Triton on the GPU, measured in one run: bandwidth of
vector add and softmax, matmul throughput, host time per launch, and the cold
compile time of each kernel. Prints a table; `--plot DIR` also draws the
softmax and matmul sweeps."""

import argparse
import importlib.util
import os
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))
os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-cache-"))  # cold compiles


def load_kernels(name, alias_tilec, filename="triton_kernels.py"):
    """benchmarks/<filename> as a module, with Triton or with tilec as `triton`."""
    saved = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
    if alias_tilec:
        import tilec.compat  # noqa: F401  (points `triton` at tilec)
        tilec.compat.install()
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if alias_tilec:
        tilec.compat.uninstall()  # later `triton.*` imports (Triton's own, lazy ones) find Triton
    for k in [k for k in sys.modules if k == "triton" or k.startswith("triton.")]:
        del sys.modules[k]
    sys.modules.update(saved)
    return module


def bench(fn, reps=30):
    """Median device time of one fn() in ms: CUDA events around enough
    back-to-back launches to last about a millisecond, so that host launch
    time hides behind the device's work, as it does in a real program."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    inner = max(1, min(100, int(1.0 / max(start.elapsed_time(end), 1e-3))))
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    times.sort()
    return times[len(times) // 2]


def launch_us(fn, n=2000):
    """Host time per launch: n back-to-back launches, synchronized once."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / n * 1e6


def row(name, unit, results):
    cells = [f"{name:<28}"]
    base = results.get("triton")
    for who in ("tilec", "triton", "torch"):
        v = results.get(who)
        cells.append(f"{v:>10.1f}" if isinstance(v, float) else f"{str(v):>10}")
    ratio = results["tilec"] / base if isinstance(results.get("tilec"), float) and isinstance(base, float) else None
    cells.append(f"{ratio:>8.2f}" if ratio else f"{'-':>8}")
    cells.append(unit)
    print(" ".join(cells), flush=True)


def safe(fn):
    try:
        return fn()
    except Exception as e:  # a failing side shows in the table, not as a crash
        print(f"   ({type(e).__name__}: {str(e).splitlines()[0][:150]})", flush=True)
        return "failed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plot", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import triton
    tk = load_kernels("tilec_kernels", True)
    rk = load_kernels("triton_kernels_real", False)
    dev = "cuda"
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}")
    print(f"{'benchmark':<28} {'tilec':>10} {'triton':>10} {'torch':>10} {'t/tri':>8} unit")

    # cold compile times
    x = torch.randn(1 << 20, device=dev)
    h = torch.randn(512, 512, device=dev, dtype=torch.float16)
    compile_rows = {}
    for name, launch in [
        ("add_kernel", lambda m: m.add_kernel[(256,)](x, x, x, x.numel(), BLOCK=4096)),
        ("softmax_kernel", lambda m: m.softmax_kernel[(4,)](x, x, 4096, 4096, 4096, BLOCK=4096)),
        ("matmul_kernel", lambda m: m.matmul_kernel[(16,)](h, h, h, 512, 512, 512, 512, 1, 512, 1,
                                                           512, 1, BLOCK_M=128, BLOCK_N=128,
                                                           BLOCK_K=32, GROUP_M=8, num_warps=8)),
    ]:
        t0 = time.perf_counter()
        k = safe(lambda: launch(tk))
        torch.cuda.synchronize()
        tt = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        safe(lambda: launch(rk))
        torch.cuda.synchronize()
        tr = (time.perf_counter() - t0) * 1e3
        if not isinstance(k, str):
            compile_rows[name] = (k._compiled.compile_ms, k.gpu.emit_ms, k.gpu.assemble_ms)
        row(f"cold compile+launch {name}", "ms", {"tilec": tt, "triton": tr})

    n = 1 << (24 if args.quick else 28)
    a, b, c = (torch.randn(n, device=dev) for _ in range(3))
    gbs = lambda ms, nbytes: nbytes / ms / 1e6  # noqa: E731
    res = {}
    for who, m in (("tilec", tk), ("triton", rk)):
        res[who] = safe(lambda: gbs(bench(lambda: m.add_kernel[(triton.cdiv(n, 4096),)](a, b, c, n, BLOCK=4096)), 12 * n))
    res["torch"] = gbs(bench(lambda: torch.add(a, b, out=c)), 12 * n)
    ok = safe(lambda: (tk.add_kernel[(triton.cdiv(n, 4096),)](a, b, c, n, BLOCK=4096), bool(torch.equal(c, a + b)))[1])
    row(f"vector add 2^{n.bit_length() - 1} fp32 (ok={ok})", "GB/s", res)

    softmax_rows = []
    for cols in ([4096] if args.quick else [256, 1024, 2048, 4096, 8192]):
        rows = 16384
        xs = torch.randn(rows, cols, device=dev)
        ys = torch.empty_like(xs)
        block = triton.next_power_of_2(cols)
        warps = 8 if block >= 2048 else 4
        res = {}
        for who, m in (("tilec", tk), ("triton", rk)):
            res[who] = safe(lambda: gbs(bench(lambda: m.softmax_kernel[(rows,)](ys, xs, cols, cols, cols, BLOCK=block, num_warps=warps)), 8 * rows * cols))
        res["torch"] = gbs(bench(lambda: torch.softmax(xs, dim=1)), 8 * rows * cols)
        tk.softmax_kernel[(rows,)](ys, xs, cols, cols, cols, BLOCK=block, num_warps=warps)
        err = (ys - torch.softmax(xs, dim=1)).abs().max().item()
        row(f"softmax {rows}x{cols} fp32 (err {err:.0e})", "GB/s", res)
        softmax_rows.append((cols, res))

    matmul_rows = []
    for size in ([2048] if args.quick else [1024, 2048, 4096, 8192]):
        A = torch.randn(size, size, device=dev, dtype=torch.float16)
        B = torch.randn(size, size, device=dev, dtype=torch.float16)
        C = torch.empty(size, size, device=dev, dtype=torch.float16)
        BM, BN, BK = 128, 128, 32
        grid = (triton.cdiv(size, BM) * triton.cdiv(size, BN),)
        tflops = lambda ms: 2 * size ** 3 / ms / 1e9  # noqa: E731
        res = {}
        for who, m in (("tilec", tk), ("triton", rk)):
            res[who] = safe(lambda: tflops(bench(lambda: m.matmul_kernel[grid](A, B, C, size, size, size, size, 1, size, 1, size, 1, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=8, num_stages=3), reps=10)))
        res["torch"] = tflops(bench(lambda: torch.matmul(A, B), reps=10))
        safe(lambda: tk.matmul_kernel[grid](A, B, C, size, size, size, size, 1, size, 1, size, 1, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=8, num_stages=3))
        ref = (A.float() @ B.float())
        err = ((C.float() - ref).norm() / ref.norm()).item()
        row(f"matmul fp16 {size}^3 (rel {err:.0e})", "TFLOP/s", res)
        matmul_rows.append((size, res))

    # tilec's matmul over a few tile configurations (the table above uses Triton's
    # tutorial config for both)
    size = 2048 if args.quick else 4096
    A = torch.randn(size, size, device=dev, dtype=torch.float16)
    B = torch.randn(size, size, device=dev, dtype=torch.float16)
    C = torch.empty(size, size, device=dev, dtype=torch.float16)

    def config_rows(label, a, b, configs):
        """A row per (BM, BN, BK, warps, stages): both sides' TFLOP/s for C = a @ b
        (f16 out), and tilec's error against an f32 product of the same inputs."""
        ref = a.float() @ b.float()
        for BM, BN, BK, warps, stages in configs:
            grid = (triton.cdiv(size, BM) * triton.cdiv(size, BN),)
            launch = lambda m: m.matmul_kernel[grid](a, b, C, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), size, 1, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=warps, num_stages=stages)  # noqa: E731
            res = {}
            for who, m in (("tilec", tk), ("triton", rk)):
                res[who] = safe(lambda: 2 * size ** 3 / bench(lambda: launch(m), reps=10) / 1e9)
            C.zero_()
            safe(lambda: launch(tk))
            err = ((C.float() - ref).norm() / ref.norm()).item()
            row(f"  {label} {BM}x{BN}x{BK} w{warps} s{stages} ({err:.0e})", "TFLOP/s", res)

    config_rows(f"mm {size}", A, B, ((128, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 4),
                                     (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 128, 64, 4, 4)))
    # fp8 inputs, B K-major (tutorial 03's fp8 case, e5m2: b = b.T), and e4m3.
    for name, fp8 in (("fp8", torch.float8_e5m2), ("fp8e4m3", torch.float8_e4m3fn)):
        config_rows(f"{name} {size}", A.to(fp8), B.T.contiguous().to(fp8).T,
                    ((128, 256, 128, 8, 3), (128, 128, 128, 8, 3), (128, 128, 128, 4, 4),
                     (64, 128, 128, 4, 4)))
    # fp32 inputs (tf32 dots, the default input_precision); B as a plain `a @ b`
    # passes it ([K][N]) and K-major (b = b.T).
    for b_name, b32 in (("B[K][N]", B.float()), ("B K-major", B.float().T.contiguous().T)):
        config_rows(f"tf32 {b_name}", A.float(), b32,
                    ((128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 64, 4, 3)))

    # Autotuning over those six configs, 4096^3 (kernels compiled above, so this is
    # the timing of each config): the first call's wall time, then the tuned kernel.
    import tilec
    configs = ((128, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 4),
               (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 128, 64, 4, 4))
    grid = lambda meta: (triton.cdiv(size, meta["BLOCK_M"]) * triton.cdiv(size, meta["BLOCK_N"]),)  # noqa: E731
    tune_s, tuned_tf, chosen = {}, {}, {}
    for who, mod, m in (("tilec", tilec, tk), ("triton", triton, rk)):
        def tune():
            cfgs = [mod.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                               num_warps=w, num_stages=s) for bm, bn, bk, w, s in configs]
            kernel = mod.autotune(configs=cfgs, key=["M", "N", "K"])(m.matmul_kernel)
            run = lambda: kernel[grid](A, B, C, size, size, size, size, 1, size, 1, size, 1)  # noqa: E731
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize()
            tune_s[who] = time.perf_counter() - t0
            chosen[who] = str(kernel.best_config)
            tuned_tf[who] = 2 * size ** 3 / bench(run, reps=10) / 1e9
        safe(tune)
    row(f"autotune 6 configs {size}^3 (first call)", "s", tune_s)
    row(f"autotuned matmul {size}^3", "TFLOP/s", tuned_tf)
    for who, c in chosen.items():
        print(f"  {who} chose {c}")

    t = torch.zeros(64, device=dev)
    res = {}
    for who, m in (("tilec", tk), ("triton", rk)):
        res[who] = safe(lambda: launch_us(lambda: m.tiny_kernel[(1,)](t, 64, BLOCK=64)))
    res["torch"] = launch_us(lambda: t.add_(1))
    row("host time per launch", "us", res)
    for name, (front, emit, asm) in compile_rows.items():
        print(f"tilec compile {name}: source->IR {front:.2f} ms, IR->PTX {emit:.2f} ms, "
              f"ptxas {asm:.1f} ms")

    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, data, xlabel, unit in ((axes[0], softmax_rows, "columns (16384 rows)", "GB/s"),
                                       (axes[1], matmul_rows, "M = N = K", "TFLOP/s")):
            for who in ("tilec", "triton", "torch"):
                pts = [(x, r[who]) for x, r in data if isinstance(r.get(who), float)]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=who)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(unit)
            ax.grid(True, alpha=0.3)
            ax.legend()
        axes[0].set_title("softmax fp32")
        axes[1].set_title("matmul fp16")
        fig.tight_layout()
        os.makedirs(args.plot, exist_ok=True)
        fig.savefig(os.path.join(args.plot, "gpu_sweeps.png"), dpi=110)


if __name__ == "__main__":
    main()
