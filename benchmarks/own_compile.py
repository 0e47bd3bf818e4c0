"""tilec's own compile time (source to PTX; ptxas not included) of the kernels the
GPU benchmarks compile, each compiled again and again in one process: min and
median per kernel, for a GPU target (the GPU's where there is one, else sm_90a).
Needs no GPU: the benchmarks' launch functions run with their launches caught,
which gives each kernel's arguments, and nothing runs. The kernels: those of
training.py (the first shape of each, with fewer rows: the same
specializations), gpu.py's vector add, softmax and matmul, attention.py's
forward at D 64 and 128, and tutorial 06's forward, backward and its
preprocess at D 64 and 128, causal and not (the config its tests use), and
tutorials 03 and 09's matmuls at every config their autotuners keep (the
tutorials need the conformance folder). The goal: <= 5 ms each.

    python benchmarks/own_compile.py [--reps 30] [--only NAME]
"""

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
import types
import warnings
from unittest import mock

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTEST_VERSION"] = "1"  # tutorial 06 keeps the one config its tests use

import tilec
from gpu import load_kernels
from tilec.compiler.compiler import DEFAULT_GPU_OPTIONS, emit_ptx
from tilec.runtime.autotuner import Autotuner
from tilec.runtime.jit import JITFunction
from tilec.runtime.launch import gpu_options

GOAL_MS = 5.0


class Launches:
    """While active, a @jit kernel's launch records (kernel, specialization, GPU
    options), as its arguments are then (a config's pre-hook changes them), and
    runs nothing; an autotuner launches each config once, and do_bench times
    one call, as 1 ms."""

    def __init__(self):
        self.seen = []

    def __enter__(self):
        self.saved = JITFunction.run
        seen = self.seen

        def record(fn, *args, grid, **kwargs):
            values, options = fn._bind(args, dict(kwargs))
            seen.append((fn, fn._specialize(values)[0], gpu_options(options)))

        def one_call(fn, *args, quantiles=None, **kwargs):
            fn()
            return [1.0] * len(quantiles) if quantiles else 1.0

        self.saved_bench = Autotuner._do_bench, tilec.testing.do_bench
        JITFunction.run = record
        Autotuner._do_bench = lambda tuner, device: one_call
        tilec.testing.do_bench = one_call
        return self

    def __exit__(self, *exc):
        JITFunction.run = self.saved
        Autotuner._do_bench, tilec.testing.do_bench = self.saved_bench


def training_launches(launches, stack):
    import training
    module = load_kernels("own_compile_training", True, "training_kernels.py")
    for name, build, shapes, _ in training.kernels(module):
        shape, dtype = shapes[0]
        # Rows (and rope's sequence) change no specialization: far fewer of them.
        shape = (64,) + tuple(shape[1:]) if name != "rope" else (1, 64) + tuple(shape[2:])
        for direction, case in build(shape, dtype, "cpu").items():
            before = len(launches.seen)
            case.run(module)
            yield from ((f"{name} {direction} {fn.__name__}", fn, a, k)
                        for fn, a, k in launches.seen[before:])


def gpu_py_launches(launches, stack):
    m = load_kernels("own_compile_gpu", True)
    x = torch.empty(1 << 20)
    h = torch.empty(512, 512, dtype=torch.float16)
    m.add_kernel[(256,)](x, x, x, x.numel(), BLOCK=4096)
    m.softmax_kernel[(4,)](x, x, 4096, 4096, 4096, BLOCK=4096)
    m.matmul_kernel[(16,)](h, h, h, 512, 512, 512, 512, 1, 512, 1, 512, 1, BLOCK_M=128,
                           BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3)
    yield from ((f"gpu.py {fn.__name__}", fn, a, k) for fn, a, k in launches.seen)


def attention_launches(launches, stack):
    m = load_kernels("own_compile_attention", True, "attention_kernels.py")
    for d in (64, 128):
        q = torch.empty(1, 2, 1024, d, dtype=torch.float16)
        before = len(launches.seen)
        m.forward(q, q, q, False, 0.5)
        yield from ((f"attention.py D={d} {fn.__name__}", fn, a, k)
                    for fn, a, k in launches.seen[before:])


def tutorial06_launches(launches, stack):
    from tutorials import tutorial_path
    t06 = load_kernels("own_compile_t06", True, tutorial_path("06-fused-attention.py"))
    for d in (64, 128):
        for causal in (False, True):
            q = torch.empty(1, 2, 1024, d, dtype=torch.float16, requires_grad=True)
            before = len(launches.seen)
            t06.attention(q, q, q, causal, 0.5, False).backward(torch.empty_like(q))
            yield from ((f"t06 D={d} causal={int(causal)} {fn.__name__}", fn, a, k)
                        for fn, a, k in launches.seen[before:])


def matmul_tutorial_launches(launches, stack):
    """Tutorials 03 and 09 (each config their autotuners keep), fp16 512^3."""
    from tutorials import tutorial_path
    a = torch.empty(512, 512, dtype=torch.float16)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its module-level benchmark prints a table)
        t03 = load_kernels("own_compile_t03", True, tutorial_path("03-matrix-multiplication.py"))
    t03.matmul(a, a)  # (its module-level benchmark launched it already, at other sizes)
    yield from ((f"t03 {fn.__name__}", fn, args, k) for fn, args, k in launches.seen)
    t09 = load_kernels("own_compile_t09", True, tutorial_path("09-persistent-matmul.py"))
    if not torch.cuda.is_available():  # the persistent kernels' grids read the SM count: an H100's
        sms = types.SimpleNamespace(multi_processor_count=132)
        stack.enter_context(mock.patch.object(torch.cuda, "get_device_properties",
                                              lambda *a, **k: sms))
    for name, extra in [("matmul", ()), ("matmul_persistent", ()), ("matmul_tma", (False,)),
                        ("matmul_tma_persistent", (False,)),
                        ("matmul_descriptor_persistent", (False,))]:
        before = len(launches.seen)
        try:
            getattr(t09, name)(a, a, *extra)
        except Exception as e:  # noqa: BLE001  (a CPU-only torch, no TMA on this machine)
            print(f"(t09 {name} left out: {type(e).__name__}: {str(e)[:80]})")
            continue
        yield from ((f"t09 {name} {fn.__name__}", fn, args, k)
                    for fn, args, k in launches.seen[before:])


SOURCES = {"training": training_launches, "gpu": gpu_py_launches,
           "attention": attention_launches, "t06": tutorial06_launches,
           "t03-t09": matmul_tutorial_launches}


def config_name(fn, specs, options):
    """The kernel's first integer constexpr parameters (its block sizes, mostly),
    its warps and stages."""
    ints = [specs[i][1] for i in fn.constexprs if type(specs[i][1]) is int][:4]
    o = {**DEFAULT_GPU_OPTIONS, **options}
    return "x".join(map(str, ints)) + f" w{o['num_warps']}s{o['num_stages']}"


def own_compile_ms(fn, specs, options, arch, reps):
    """The kernel compiled `reps` times for `arch` as its launch would: its times
    (Tile IR + PTX) and its PTX lines."""
    o = {**DEFAULT_GPU_OPTIONS, **options}
    times, lines = [], 0
    for _ in range(reps):
        start = time.perf_counter()
        compiled, _ = fn._compile_ir(specs, arch)
        gpu = emit_ptx(compiled, arch, o, o["num_stages"])
        times.append((time.perf_counter() - start) * 1e3)
        lines = gpu.ptx.count("\n")
    return times, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--only", default=None, metavar="NAME",
                        help="the kernels whose row (name and config) contains NAME")
    parser.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES),
                        help="whose launches to catch (fewer start faster)")
    args = parser.parse_args()
    arch = "sm_90a"
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    sources = [SOURCES[name] for name in args.sources]
    try:
        from tutorials import tutorial_path
        tutorial_path("06-fused-attention.py")
    except SystemExit as e:
        print(f"(the tutorials left out: {e})")
        sources = [s for s in sources if s not in (tutorial06_launches, matmul_tutorial_launches)]
    rows, seen = [], set()
    for source in sources:
        with Launches() as launches, contextlib.ExitStack() as stack:
            found = list(source(launches, stack))
        for name, fn, a, k in found:
            name = f"{name} {config_name(fn, a, k)}"
            if args.only and args.only not in name:
                continue
            key = (id(fn), a, tuple(sorted(k.items())))
            if key in seen:  # the same kernel launched again
                continue
            seen.add(key)
            times, lines = own_compile_ms(fn, a, k, arch, args.reps)
            rows.append((name, min(times), statistics.median(times), lines))
            print(f"{name:<60} {rows[-1][1]:7.2f} {rows[-1][2]:7.2f} {lines:7d}", flush=True)
    print(f"\nown compile for {arch}, ms (min, median of {args.reps}), PTX lines; "
          f"{tilec.__name__} on {os.cpu_count()} CPUs")
    over = [r for r in rows if r[2] > GOAL_MS]
    print(f"{len(rows)} kernels; median above {GOAL_MS} ms: {len(over)}")
    for name, low, mid, lines in sorted(over, key=lambda r: -r[2]):
        print(f"  {name:<58} {low:7.2f} {mid:7.2f} {lines:7d}")


if __name__ == "__main__":
    main()
