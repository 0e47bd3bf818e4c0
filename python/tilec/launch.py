"""Launching a kernel: where it runs (CPU backend, GPU, or the interpreter for
GPU tensors), compiling the specialization, and the launch itself."""

from . import _C, _args
from .errors import KernelError
from .jit import _gpu_options, interpreting, normalize_grid


def _device_index(device):
    if ":" in device:
        return int(device.split(":")[1])
    from .runtime import driver
    return driver.active.get_current_device()


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
        from .runtime import driver
        devices = {f"cuda:{driver.active.get_current_device()}"}
    device = next(iter(devices))
    if not device.startswith("cuda") or interpreting():
        return None, None
    from .runtime import driver
    if not driver.cuda_available():
        _, why = _C.cuda_available()
        raise RuntimeError(f"{fn.__name__}: tensors are on {device} but CUDA is not usable: {why}")
    index = _device_index(device)
    return driver.arch_of(index), index


def _check_resources(kernel, device):
    from .runtime import driver
    from .runtime.errors import OutOfResources
    limit = driver.active.utils.get_device_properties(device)["max_shared_mem"]
    if kernel.metadata.shared > limit:
        raise OutOfResources(kernel.metadata.shared, limit, "shared memory")


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
        kernel._compiled.launch_cpu(grid, runtime, memory, options.get("num_threads", 0))
    except _C.KernelError as e:
        raise KernelError(str(e)) from None
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
        try:
            kernel._compiled.launch_cpu(grid, runtime, memory, options.get("num_threads", 0))
        except _C.KernelError as e:
            raise KernelError(str(e)) from None
        return kernel
    kernel = fn._compile(specs, arch, _gpu_options(options))
    _check_resources(kernel, device)
    stream = options.get("stream")
    if stream is None:
        from .runtime import driver
        stream = driver.active.get_current_stream(device)
    kernel.gpu.launch(grid, runtime, int(stream), device)
    fn._fast.add(args, kwargs, kernel, kernel.gpu, fn._globals_checks(kernel))
    return kernel


def launch_compiled(kernel, grid, args, stream):
    """Launches a CompiledKernel returned by warmup or tilec.compile."""
    if kernel.gpu is None:
        raise RuntimeError(f"'{kernel.name}' was compiled for the CPU; launch it through its @jit")
    from .runtime import driver
    device = driver.active.get_current_device()
    runtime = []

    def flatten(a):
        if isinstance(a, tuple):
            for v in a:
                flatten(v)
        elif _args.is_tensor(a):
            runtime.append(_args.data_pointer(a))
        elif _args.is_descriptor(a):
            runtime.extend([_args.data_pointer(a.base), *a.shape, *a.strides])
        elif not (a is None or isinstance(a, str)):
            runtime.append(a)

    for a in args:
        flatten(a)
    grid = normalize_grid(kernel.name, grid, {})
    if stream is None:
        stream = driver.active.get_current_stream(device)
    kernel.gpu.launch(grid, runtime, int(stream), device)
    return kernel
