"""Launching a kernel: where it runs (CPU backend, GPU, or the interpreter for
GPU tensors), compiling the specialization, and the launch itself."""

import os

import contextlib

from .. import _C, _args, knobs
from .._args import normalize_grid
from ..backends.nvidia.driver import CudaDriver, arch_of, cuda_available
from ..compiler.compiler import DEFAULT_GPU_OPTIONS
from ..errors import KernelError
from .errors import OutOfResources

# Keyword arguments of a launch that configure it rather than feed the kernel.
LAUNCH_OPTIONS = (
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid",
    "warmup", "stream", "device", "device_type", "launch_cooperative_grid", "debug",
    "num_threads", "launch_pdl", "extern_libs", "warp_specialize_loops",
    # AMD's options, which Triton takes and ignores on NVIDIA (and tilec everywhere):
    # configs shared between the vendors pass them.
    "waves_per_eu", "matrix_instr_nonkdim", "kpack", "allow_flush_denorm", "schedule_hint",
)


def interpreting():
    """TILEC_INTERPRET=1 (or TRITON_INTERPRET=1): every launch runs on the CPU backend."""
    for name in ("TILEC_INTERPRET", "TRITON_INTERPRET"):
        if os.environ.get(name, "0") not in ("", "0"):
            return True
    return False


def gpu_options(options):
    """The launch options that change the GPU code, from a launch's keywords."""
    out = {k: options[k] for k in DEFAULT_GPU_OPTIONS if options.get(k) is not None}
    if "debug" in out:
        out["debug"] = bool(out["debug"])
    return out


def _device_index(device):
    if ":" in device:
        return int(device.split(":")[1])
    return CudaDriver().get_current_device()


def target_of(fn, devices, options):
    """(arch, device index) for a GPU launch, (None, None) for the CPU backend."""
    devices = set(devices)
    kinds = {d.split(":")[0] for d in devices}
    if len(kinds) > 1:
        raise RuntimeError(
            f"{fn.__name__}: tensors on {sorted(devices)} in one launch; a kernel runs on one "
            "device, so move them all to the CPU or all to the same GPU"
        )
    if len(devices) > 1:
        raise RuntimeError(
            f"{fn.__name__}: tensors on different GPUs ({sorted(devices)}) in one launch; "
            "move them to one device"
        )
    if not devices:
        if options.get("device_type") != "cuda" or interpreting():
            return None, None
        devices = {f"cuda:{CudaDriver().get_current_device()}"}
    device = next(iter(devices))
    if not device.startswith("cuda") or interpreting():
        return None, None
    if not cuda_available():
        _, why = _C.cuda_available()
        raise RuntimeError(f"{fn.__name__}: tensors are on {device} but CUDA is not usable: {why}")
    index = _device_index(device)
    return arch_of(index), index


def _check_resources(kernel, device):
    limit = CudaDriver.utils.get_device_properties(device)["max_shared_mem"]
    if kernel.metadata.shared > limit:
        raise OutOfResources(kernel.metadata.shared, limit, "shared memory")


def _check_read_only(fn, kernel, memory):
    """Refuses a read-only array (a read-only memmap, np.frombuffer of bytes)
    passed where the kernel stores, before anything runs."""
    read_only = {name for _, _, name, writable in memory if not writable}
    if not read_only:
        return
    compiled = kernel._compiled
    stored = [n for n, s in zip(compiled.arg_names, compiled.stored_args) if s]
    for name in sorted(read_only):
        if any(n == name or n.startswith(name + "[") for n in stored):
            raise ValueError(f"{fn.__name__}: argument '{name}' is read-only but the kernel "
                             "stores through it")


def hooks_set():
    """Whether a launch hook (a profiler's) wants to see every launch; then the
    launches skip the C++ fast path."""
    return (knobs.runtime.launch_enter_hook is not None
            or knobs.runtime.launch_exit_hook is not None)


class LaunchMetadata:
    """What a launch hook is given: ``.get()`` is a dict of the kernel's name,
    stream and device, and what the kernel's ``launch_metadata(grid, kernel,
    args)`` adds (a name, flops, bytes), computed only when asked."""

    def __init__(self, fn, kernel, grid, values, stream, device):
        self._parts = (fn, kernel, grid, values, stream, device)
        self._data = None

    def get(self):
        if self._data is None:
            fn, kernel, grid, values, stream, device = self._parts
            self._data = {"name": kernel.name, "function": None, "stream": stream,
                          "device": device}
            describe = fn.options.get("launch_metadata")
            if describe is not None:
                self._data.update(describe(grid, kernel.metadata, values) or {})
        return self._data


@contextlib.contextmanager
def _hooked(fn, kernel, grid, values, stream, device):
    """Calls the launch hooks around a launch, when set."""
    enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    if enter is None and leave is None:
        yield
        return
    metadata = LaunchMetadata(fn, kernel, grid, values, stream, device)
    if enter is not None:
        enter(metadata)
    try:
        yield
    finally:
        if leave is not None:
            leave(metadata)


def _launch_cpu(fn, kernel, grid, runtime, memory, options, values=None):
    _check_read_only(fn, kernel, memory)
    try:
        with _hooked(fn, kernel, grid, values or {}, None, "cpu"):
            kernel._compiled.launch_cpu(grid, runtime, memory, options.get("num_threads", 0))
    except _C.KernelError as e:
        raise KernelError(str(e)) from None


def _interpret(fn, args, kwargs, grid):
    """Runs a launch with GPU tensors on the CPU backend: copies in, runs, copies back."""
    values, options = fn._bind(args, dict(kwargs))
    copies = []

    def to_host(tensor):
        device = getattr(tensor, "device", None)
        if device is not None and str(device).startswith("cuda") and hasattr(tensor, "cpu"):
            copies.append((tensor, tensor.detach().cpu()))
            return copies[-1][1]
        return tensor

    for name, value in values.items():
        values[name] = _args.map_tensors(value, to_host)
    specs, runtime, memory, _ = fn._specialize(values)
    kernel = fn._compile(specs)
    grid = normalize_grid(fn.__name__, grid, {**values, **options})
    try:
        _launch_cpu(fn, kernel, grid, runtime, memory, options, values)
    finally:
        for original, copy in copies:
            original.copy_(copy)
    return kernel


def run_kernel(fn, args, kwargs, grid):
    values, options = fn._bind(args, dict(kwargs))
    specs, runtime, memory, devices = fn._specialize(values)
    arch, device = target_of(fn, devices, options)
    if arch is None and any(d.startswith("cuda") for d in devices):
        return _interpret(fn, args, kwargs, grid)
    grid = normalize_grid(fn.__name__, grid, {**values, **options})
    if arch is None:
        kernel = fn._compile(specs)
        _launch_cpu(fn, kernel, grid, runtime, memory, options, values)
        return kernel
    kernel = fn._compile(specs, arch, gpu_options(options))
    _check_resources(kernel, device)
    stream = options.get("stream")
    if stream is None:
        stream = CudaDriver().get_current_stream(device)
    with _hooked(fn, kernel, grid, values, int(stream), device):
        kernel.gpu.launch(grid, runtime, int(stream), device)
    fn._fast.add(args, kwargs, kernel, kernel.gpu, fn._globals_checks(kernel))
    return kernel
