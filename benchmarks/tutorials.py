"""Triton's persistent-matmul tutorial (09), its kernels unchanged, timed with
tilec and with Triton in one run: the plain and the persistent matmul (pointer
tensors), and the TMA ones (host tensor descriptors; persistent; descriptors
made in the kernel), each autotuned over the tutorial's own configs, beside
cuBLAS, in TFLOP/s: both sides tuned first, then timed in turn (median of three).
Needs the conformance folder: ../shared/conformance, or
.conformance (as scripts/gpu_check.sh carries it).

    python benchmarks/tutorials.py [--k 512 4096] [--prec fp16|fp8] [--only tma ...]
                                   [--each-config] [--timings] [--verify-tuning]
"""

import argparse
import contextlib
import io
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu import bench, load_kernels, safe  # sets fresh cache folders: cold compiles


def tutorial_path(name):
    for root in (os.path.join(HERE, "..", ".conformance"),
                 os.path.join(HERE, "..", "..", "shared", "conformance")):
        path = os.path.join(root, "triton-3.6", "python", "tutorials", name)
        if os.path.exists(path):
            return os.path.abspath(path)
    raise SystemExit(f"{name} not found: copy ../shared/conformance to .conformance")


# The tutorial's entry points: (label, function name, extra arguments, takes
# b^T, the autotuned kernel).
VARIANTS = [
    ("naive", "matmul", (), True, "matmul_kernel"),
    ("persistent", "matmul_persistent", (), True, "matmul_kernel_persistent"),
    ("tma", "matmul_tma", (False,), False, "matmul_kernel_tma"),
    ("tma_persistent", "matmul_tma_persistent", (False,), False, "matmul_kernel_tma_persistent"),
    ("descriptor_persistent", "matmul_descriptor_persistent", (False,), False,
     "matmul_kernel_descriptor_persistent"),
    # warp_specialize=True: the variant the tutorial runs on Hopper (not flattened)
    ("descriptor_persistent_ws", "matmul_descriptor_persistent", (True,), False,
     "matmul_kernel_descriptor_persistent"),
]


def config_text(config):
    if config is None:
        return "-"
    k = config.kwargs
    return (f"{k.get('BLOCK_SIZE_M')}x{k.get('BLOCK_SIZE_N')}x{k.get('BLOCK_SIZE_K')} "
            f"w{config.num_warps} s{config.num_stages}"
            + (" sub" if k.get("EPILOGUE_SUBTILE") else ""))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--prec", choices=["fp16", "fp8"], default="fp16")
    parser.add_argument("--only", nargs="+", help="the kernels to time (naive, tma, ...)")
    parser.add_argument("--each-config", action="store_true",
                        help="time every config of the tutorial, not only the autotuned best")
    parser.add_argument("--timings", action="store_true",
                        help="print what each autotuner measured for every config")
    parser.add_argument("--verify-tuning", action="store_true",
                        help="time tilec's chosen config and the tuning's three fastest alone, "
                             "beside what tuning measured for them")
    args = parser.parse_args()
    path = tutorial_path("09-persistent-matmul.py")
    import triton  # noqa: F401  Triton itself first: its compiled modules stay registered
    import triton.tools.tensor_descriptor  # noqa: F401  (Triton's own, for its side)
    with contextlib.redirect_stdout(io.StringIO()):  # the module prints nothing; be sure
        triton_side = load_kernels("t09_triton", False, path)
        sides = {"tilec": load_kernels("t09_tilec", True, path), "triton": triton_side}
    dtype = torch.float8_e4m3fn if args.prec == "fp8" else torch.float16
    M = N = 8192
    print(f"tutorial 09 (persistent matmul), {args.prec}, M=N={M}, TFLOP/s; "
          f"{torch.cuda.get_device_name()}")
    print(f"{'kernel':<24} {'K':>6} {'tilec':>8} {'triton':>8} {'t/tri':>7}   configs chosen")
    for K in args.k:
        torch.manual_seed(0)
        a = torch.randn((M, K), device="cuda", dtype=torch.float16).to(dtype)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16).to(dtype)
        bt = b.T.contiguous()  # [N, K], as the tutorial keeps it
        flops = 2.0 * M * N * K
        expect = (a.float() @ b.float()).half() if dtype == torch.float16 else None
        blas = sides["triton"].device_blas
        if blas is not None:
            ms = bench(lambda: sides["triton"].device_blas_matmul(a, bt))
            print(f"{'cuBLAS':<24} {K:>6} {flops / ms * 1e-9:>8.1f}")
        for label, name, extra, transposed, kernel in VARIANTS:
            if args.only and label not in args.only:
                continue
            tuners = {who: getattr(m, kernel) for who, m in sides.items()}
            configs = {who: list(t.configs) for who, t in tuners.items()}
            for c in range(len(configs["tilec"]) if args.each_config else 1):
                runs = {}
                for who, module in sides.items():
                    if args.each_config:  # one config: nothing to tune
                        tuners[who].configs = [configs[who][c]]
                        tuners[who].cache.clear()
                    runs[who] = safe(lambda: tuned_run(module, name, extra, transposed, a, bt,
                                                       expect))
                report(label, K, time_alternately(runs, flops), tuners)
                if args.timings:
                    print_timings(tuners)
                if args.verify_tuning and not args.each_config:
                    verify_tuning(tuners["tilec"], lambda: time_one(
                        sides["tilec"], name, extra, transposed, a, bt, expect, flops), flops)
            for who, t in tuners.items():
                t.configs = configs[who]


def tuned_run(module, name, extra, transposed, a, bt, expect):
    """The tutorial's call, once its first call autotuned it and its result checked."""
    fn = getattr(module, name)
    run = (lambda: fn(a, bt.T, *extra)) if transposed else (lambda: fn(a, bt, *extra))
    out = run()  # autotunes on the first call
    if expect is not None:
        torch.testing.assert_close(out.float(), expect.float(), atol=1.0, rtol=0.05)
    return run


def time_one(module, name, extra, transposed, a, bt, expect, flops):
    return flops / bench(tuned_run(module, name, extra, transposed, a, bt, expect)) * 1e-9


def time_alternately(runs, flops, rounds=3):
    """TFLOP/s of each side's run (or its error text), the median of `rounds`
    timings taken in turn: a card's clocks drift over minutes of matmuls, and
    timing each side right after its own tuning measured that drift (10% at
    K=4096 on an H200)."""
    results = {who: r for who, r in runs.items() if not callable(r)}
    timings = {who: [] for who, r in runs.items() if callable(r)}
    for _ in range(rounds):
        for who in timings:
            timings[who].append(safe(lambda: flops / bench(runs[who]) * 1e-9))
    for who, ts in timings.items():
        ok = sorted(t for t in ts if isinstance(t, float))
        results[who] = ok[len(ok) // 2] if ok else ts[0]
    return results


def report(label, K, results, tuners):
    t, r = results["tilec"], results["triton"]
    ratio = f"{t / r:>7.2f}" if isinstance(t, float) and isinstance(r, float) else "      -"
    cells = [f"{v:>8.1f}" if isinstance(v, float) else f"{v:>8}" for v in (t, r)]
    chosen = "  ".join(f"{who}: {config_text(getattr(tuner, 'best_config', None))}"
                       for who, tuner in tuners.items())
    print(f"{label:<24} {K:>6} {cells[0]} {cells[1]} {ratio}   {chosen}", flush=True)


def print_timings(tuners):
    """Each autotuner's measurements (median ms per config) and its tuning time."""
    for who, tuner in tuners.items():
        timings = getattr(tuner, "configs_timings", None) or {}
        spent = getattr(tuner, "bench_time", None)
        print(f"  {who} tuned in {spent if spent is None else round(spent, 2)} s:")
        for config, t in sorted(timings.items(), key=lambda kv: kv[1]):
            ms = t[0] if isinstance(t, (list, tuple)) else t
            print(f"    {config_text(config):<24} {ms:.4f} ms")


def verify_tuning(tuner, run, flops):
    """tilec's tuning measurements against the same configs timed alone: a
    config tuned fast but slow alone (or the reverse) means tuning measured
    something else."""
    timings = getattr(tuner, "configs_timings", None) or {}
    if not timings:
        return
    ms = lambda t: t[0] if isinstance(t, (list, tuple)) else t
    ranked = sorted(timings, key=lambda c: ms(timings[c]))
    chosen = getattr(tuner, "best_config", None)
    picks = ([chosen] if chosen is not None else []) + [c for c in ranked[:3] if c is not chosen]
    configs = list(tuner.configs)
    for config in picks:
        tuner.configs = [config]
        tuner.cache.clear()
        alone = run()
        alone_ms = flops / alone * 1e-9 if isinstance(alone, float) else float("nan")
        print(f"  tuned {ms(timings[config]):.4f} ms, alone {alone_ms:.4f} ms: "
              f"{config_text(config)}{'  (chosen)' if config is chosen else ''}", flush=True)
    tuner.configs = configs
    tuner.cache.clear()


if __name__ == "__main__":
    main()
