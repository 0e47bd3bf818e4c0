"""What the examples share: where they run, their inputs, timing, and the line
each prints.

The examples run on the GPU with torch CUDA tensors when torch sees one, else
on tilec's CPU backend with numpy arrays. The kernels are the same either way:
a launch runs where its tensors are.
"""

import os
import statistics
import time

import numpy as np

from tilec.runtime.launch import interpreting

try:
    import torch
except ImportError:
    torch = None

# True: CUDA tensors, timed with CUDA events, checked against torch.
# TILEC_INTERPRET=1 asks for the CPU backend, so it keeps the examples there too.
GPU = torch is not None and torch.cuda.is_available() and not interpreting()


def header():
    if not GPU:
        return f"tilec examples on the CPU backend ({os.cpu_count()} host threads)"
    major, minor = torch.cuda.get_device_capability()
    return f"tilec examples on {torch.cuda.get_device_name()} (sm_{major}{minor})"


class Random:
    """Seeded standard normal tensors: torch CUDA tensors on the GPU, numpy arrays on the CPU."""

    def __init__(self, seed):
        if GPU:
            self.generator = torch.Generator(device="cuda").manual_seed(seed)
        else:
            self.generator = np.random.default_rng(seed)

    def randn(self, *shape, dtype="float32"):
        if GPU:
            return torch.randn(shape, generator=self.generator, device="cuda",
                               dtype=getattr(torch, dtype))
        return self.generator.standard_normal(shape, dtype=np.dtype(dtype))


def empty(shape, dtype="float32"):
    if GPU:
        return torch.empty(shape, device="cuda", dtype=getattr(torch, dtype))
    return np.empty(shape, np.dtype(dtype))


def empty_like(t):
    return torch.empty_like(t) if GPU else np.empty_like(t)


def strides(t):
    """The strides of a tensor in elements, as kernels count them (numpy's are in bytes)."""
    if isinstance(t, np.ndarray):
        return tuple(s // t.itemsize for s in t.strides)
    return t.stride()


def best_ms(fn, repeat=5):
    """The fastest of `repeat` runs of fn(), in milliseconds (host time: the CPU backend)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def gpu_ms(fn, repeat=11, inner=10):
    """Median GPU time of one fn(), in milliseconds: CUDA events around `inner`
    back-to-back calls, so that the host's launch time hides behind the GPU's work."""
    for _ in range(3):  # warm up
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def synchronize():
    if GPU:
        torch.cuda.synchronize()


def max_error(out, ref):
    if GPU:
        return (out.float() - ref.float()).abs().max().item()  # .item() waits for the GPU
    return float(np.abs(out - ref).max())


_header_printed = False


def bench(name, launch, out, reference, nbytes=0, flops=0):
    """Runs one example and prints its line: the first launch (it compiles the
    kernel), then timed launches; compares `out` with reference(). On the GPU,
    reference() is the same operation in torch, and is timed too. `nbytes` or
    `flops`, the work of one launch, gives its throughput."""
    global _header_printed
    if not _header_printed:
        print(header())
        _header_printed = True
    synchronize()  # the inputs are ready
    start = time.perf_counter()
    kernel = launch()
    synchronize()
    cold_ms = (time.perf_counter() - start) * 1e3
    run_ms = gpu_ms(launch) if GPU else best_ms(launch)
    err = max_error(out, reference())
    torch_ms = gpu_ms(reference) if GPU else None
    print(_line(name, kernel, cold_ms, run_ms, torch_ms, err, nbytes, flops), flush=True)


def _line(name, kernel, cold_ms, run_ms, torch_ms, err, nbytes, flops):
    def timed(ms):
        ms_text = f"{ms:8.4f} ms" if ms < 1 else f"{ms:8.2f} ms"
        if not flops:
            return f"{ms_text} {nbytes / ms / 1e6:8.2f} GB/s"
        if GPU:
            return f"{ms_text} {flops / ms / 1e9:8.2f} TFLOP/s"
        return f"{ms_text} {flops / ms / 1e6:8.2f} GFLOP/s"

    # A cubin read from the disk cache skipped ptxas: compile_ms is then the front end alone.
    cached = ", from disk cache" if kernel.gpu is not None and kernel.gpu.from_cache else ""
    line = (f"{name:<12} compile {kernel.compile_ms:7.2f} ms (cold launch {cold_ms:7.2f} ms"
            f"{cached})   run {timed(run_ms)}")
    if torch_ms is not None:
        line += f"   torch {timed(torch_ms)}"
    return f"{line}   max |err| {err:.2e}"
