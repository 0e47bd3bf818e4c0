"""Timing helpers the examples share."""

import time


def best_ms(fn, repeat=5):
    """The fastest of `repeat` runs of fn(), in milliseconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def report(name, kernel, compile_wall_ms, run_ms, max_err):
    print(f"{name:<12} compile {kernel.compile_ms:7.2f} ms (cold launch {compile_wall_ms:7.2f} ms)"
          f"   run {run_ms:8.2f} ms   max |err| {max_err:.2e}")
