"""Cold first launches of Triton's fused-attention tutorial (06), its code
unchanged, with tilec and with Triton, each side in a fresh process with empty
caches: the wall time of the first forward call and of the first backward call
(compile, ptxas and the run included). fp16, Z=1, H=2, N=1024.

What a process pays once, before its first kernel, is paid before the clock
starts, so that the numbers are the kernels' own: torch's lazily loaded
kernels, autograd's device thread, each compiler's driver and launcher set-up,
and the tutorial's forward and backward once at the other head dim (their
kernels are other kernels; the tutorial's first backward in a process costs
both sides about two seconds more than its compiles and runs, for reasons not
known).

By default the tutorial keeps the one config of its tests (`PYTEST_VERSION`
set), so neither side autotunes; for tilec its own compile (source to PTX) and
ptxas are given, summed over the kernels each call compiled. `--tuned` times
the first forward with the tutorial's autotuning over all its configs instead
(tilec compiles the configs on several threads before timing them).

    python benchmarks/cold_start.py [--d 64 128] [--causal 0 1] [--tuned]
"""

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def sampled_stacks(interval=0.005):
    """Samples every thread's Python stack while the block runs (autograd runs
    the backward on a thread of its own) and prints the most frequent ones.
    A thread that holds the GIL in C++ is not sampled meanwhile."""
    counts, done = collections.Counter(), threading.Event()

    def sample():
        me = threading.get_ident()
        while not done.wait(interval):
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    stack = traceback.extract_stack(frame)[-8:]
                    counts[" < ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}"
                                      for f in reversed(stack))] += 1
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        for stack, n in counts.most_common(15):
            print(f"{n * interval * 1e3:8.0f} ms  {stack}", file=sys.stderr)


def timed(fn, profile=False):
    """Wall time of fn() in ms, the GPU's work included."""
    import torch
    start = time.perf_counter()
    with sampled_stacks() if profile else contextlib.nullcontext():
        result = fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3, result


def child(impl, d, causal, tuned):
    """Runs in a fresh process: prints one JSON line of timings."""
    if impl == "tilec":
        import tilec.compat  # noqa: F401  (`import triton` gives tilec)
    import importlib.util

    import torch
    import triton
    import triton.language as tl
    sys.path.insert(0, HERE)
    from tutorials import tutorial_path

    spec = importlib.util.spec_from_file_location("t06", tutorial_path("06-fused-attention.py"))
    t06 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t06)

    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    torch.manual_seed(0)
    other = 128 if d == 64 else 64
    x = torch.randn((1, 2, 1024, other), device="cuda", dtype=torch.float16, requires_grad=True)
    (torch.empty_like(x).zero_() + x * 0.5).float().sum().backward()
    scale[(4,)](x.detach(), x.numel(), BLOCK=1024)
    out = {}
    if not tuned:  # tuned: the first forward would tune at that head dim too
        out["warmup_ms"], _ = timed(
            lambda: t06.attention(x, x, x, bool(causal), 0.5, False).backward(x.detach()))
    fns = {"fwd": t06._attn_fwd.fn, "bwd": t06._attn_bwd, "pre": t06._attn_bwd_preprocess}
    warm = {id(c) for fn in fns.values() for c in getattr(fn, "cache", {}).values()}
    shape = (1, 2, 1024, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16, requires_grad=True)
               for _ in range(3))
    do = torch.randn(shape, device="cuda", dtype=torch.float16)
    out["fwd_ms"], o = timed(lambda: t06.attention(q, k, v, bool(causal), 0.5, False))
    if tuned:
        out["configs"] = len(getattr(t06._attn_fwd, "configs_timings", None) or {})
    else:
        out["bwd_ms"], _ = timed(lambda: o.backward(do), bool(os.environ.get("COLD_PROFILE")))
    if impl == "tilec":  # the kernels these calls compiled
        for name, fn in fns.items():
            kernels = [c for c in fn.cache.values()
                       if getattr(c, "gpu", None) is not None and id(c) not in warm]
            out[name + "_own_ms"] = sum(c._compiled.compile_ms + c.gpu.emit_ms for c in kernels)
            out[name + "_ptxas_ms"] = sum(c.gpu.assemble_ms for c in kernels)
            out[name + "_ptx_lines"] = sum(c.asm["ptx"].count("\n") for c in kernels)
    print(json.dumps(out))


def measure(impl, d, causal, tuned):
    env = dict(os.environ, TILEC_CACHE_DIR=tempfile.mkdtemp(prefix="tilec-cold-"),
               TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-cold-"))
    if tuned:
        env.pop("PYTEST_VERSION", None)
    else:
        env["PYTEST_VERSION"] = "1"
    run = subprocess.run([sys.executable, __file__, "--child", impl, str(d), str(causal),
                          str(int(tuned))], env=env, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode or not lines:
        return {"error": (run.stderr.strip().splitlines() or ["no output"])[-1][:120]}
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--d", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--causal", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--tuned", action="store_true",
                        help="the first forward autotunes over the tutorial's configs")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        impl, d, causal, tuned = args.child
        return child(impl, int(d), int(causal), tuned == "1")
    what = "first forward, autotuned over the tutorial's configs" if args.tuned else \
        "first forward and backward, the tests' one config; tilec's own compile / ptxas"
    print(f"tutorial 06, cold (fresh process, empty caches), ms: {what}")
    print(f"{'D':>4} {'causal':>6} {'call':>5} {'tilec':>9} {'triton':>9} {'t/tri':>6}   tilec")
    for d in args.d:
        for causal in args.causal:
            t, r = measure("tilec", d, causal, args.tuned), measure("triton", d, causal, args.tuned)
            for call in ("fwd",) if args.tuned else ("fwd", "bwd"):
                if "error" in t or "error" in r:
                    print(f"{d:>4} {causal:>6} {call:>5}  tilec: {t.get('error', 'ok')}  "
                          f"triton: {r.get('error', 'ok')}")
                    break
                parts = ("fwd",) if call == "fwd" else ("pre", "bwd")
                detail = (f"{t.get('configs')} configs tuned" if args.tuned else
                          f"{sum(t[p + '_own_ms'] for p in parts):.1f} / "
                          f"{sum(t[p + '_ptxas_ms'] for p in parts):.1f}; "
                          f"{sum(t[p + '_ptx_lines'] for p in parts)} PTX lines")
                key = call + "_ms"
                print(f"{d:>4} {causal:>6} {call:>5} {t[key]:>9.1f} {r[key]:>9.1f} "
                      f"{t[key] / r[key]:>6.2f}   {detail}", flush=True)


if __name__ == "__main__":
    main()
