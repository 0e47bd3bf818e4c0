import atexit
import ctypes
import os
import re
import shutil
import sys
import tempfile

# Every test (and each process it starts) uses a fresh disk cache, never the user's.
if "TILEC_CACHE_DIR" not in os.environ:
    os.environ["TILEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilec-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TILEC_CACHE_DIR"], ignore_errors=True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tilec  # noqa: E402
import tilec.runtime.jit  # noqa: E402,F401

# The module, not tilec.jit the decorator.
jitmod = sys.modules["tilec.runtime.jit"]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def nonzero(rng, shape, dtype=np.float32, low=0.5, high=2.0):
    """Random values away from zero, with random signs."""
    x = rng.uniform(low, high, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x.astype(dtype)


def gpu_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and tilec._C.cuda_available()[0]


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only: checks behaviour of the CPU backend alone")


class GpuView:
    """A device pointer with a dtype, standing in for a host array at launch."""

    def __init__(self, ptr, dtype, device):
        self._ptr, self.dtype, self.device = ptr, dtype, device

    def data_ptr(self):
        return self._ptr


def _host_bytes(low, high):
    return np.ctypeslib.as_array((ctypes.c_ubyte * (high - low)).from_address(low))


class GpuShim:
    """Runs a launch whose arguments are host arrays on the GPU: each array's
    whole allocation is copied to the device (so views and aliases keep their
    offsets), the kernel runs there, and the allocations are copied back."""

    def __init__(self, run_on_host):
        self.run_on_host = run_on_host

    def __call__(self, fn, *args, grid, **kwargs):
        import torch
        buffers = {}  # host address of an allocation -> (host bytes, device bytes)

        def moved(value):
            if isinstance(value, np.ndarray):
                low, high = tilec._args.memory_range(value)
                dtype = value.dtype
            elif isinstance(value, torch.Tensor) and value.device.type == "cpu":
                storage = value.untyped_storage()
                low, high = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
                dtype = value.dtype
            else:
                return value
            if low not in buffers:
                host = _host_bytes(low, max(high, low + 1))
                buffers[low] = (host, torch.from_numpy(host.copy()).cuda())
            device = buffers[low][1]
            offset = tilec._args.data_pointer(value) - low
            return GpuView(device.data_ptr() + offset, dtype, device.device)

        def on_device(value):  # tensors move, in tuples and descriptors too
            return tilec._args.map_tensors(value, moved)

        # Separately rounded multiplies and adds, so that results are bit-exact
        # with the CPU backend; fused multiply-add is tested on its own.
        kwargs.setdefault("enable_fp_fusion", False)
        # TILEC_TEST_NUM_WARPS reruns the suite with other warp counts, which
        # change every layout (replicated threads, reductions across warps).
        if os.environ.get("TILEC_TEST_NUM_WARPS"):
            kwargs.setdefault("num_warps", int(os.environ["TILEC_TEST_NUM_WARPS"]))
        args = [on_device(a) for a in args]
        kwargs = {k: on_device(v) for k, v in kwargs.items()}
        try:
            return self.run_on_host(fn, *args, grid=grid, **kwargs)
        finally:
            torch.cuda.synchronize()
            for host, device in buffers.values():
                host[:] = device.cpu().numpy()


# An instruction's braced first operand: its destinations (a vector load, an
# mma's accumulator, a split move), after an optional guard.
_BRACED_DESTINATIONS = re.compile(r"\s*(?:@!?%\w+\s+)?[\w.:]+\s+\{([^}]*)\}")


def gpu_ir_lines(kernel):
    """asm['tilegpu'] line by line, without the alias definitions ahead of the
    function, each layout alias (#blocked0) replaced by the layout's text."""
    import re

    text = kernel.asm["tilegpu"].splitlines()
    aliases = dict(line.split(" = ", 1) for line in text if line.startswith("#"))
    return [re.sub(r"#[a-z]+[0-9]+", lambda m: aliases.get(m.group(0), m.group(0)), line)
            for line in text if not line.startswith("#")]


def assert_destinations_distinct(ptx, name):
    """No instruction writes one register twice: one of the values it
    produces would be lost (ptxas takes such PTX without a word)."""
    for line in ptx.split("\n"):
        m = _BRACED_DESTINATIONS.match(line)
        if m:
            regs = re.findall(r"%\w+", m.group(1))
            assert len(regs) == len(set(regs)), f"{name}: a register written twice: {line.strip()}"


def assemble_for_gpus(run_on_host):
    """Runs on the CPU backend, and compiles each launch's kernel for sm_80 and
    sm_90a too, through ptxas: every kernel of the suite must assemble."""

    def run(fn, *args, grid, **kwargs):
        out = run_on_host(fn, *args, grid=grid, **kwargs)
        values, options = fn._bind(args, dict(kwargs))
        specs, _, _, _ = fn._specialize(values)
        for arch in ("sm_80", "sm_90a"):
            try:
                kernel = fn._compile(specs, arch, tilec.runtime.launch.gpu_options(options))
            except tilec.CompilationError as e:
                if f"is not supported on {arch}" in str(e) and arch != "sm_90a":
                    continue  # fp8 on sm_80: a clear error, as Triton gives
                raise
            assert kernel.asm.get("cubin"), f"{fn.__name__}: no cubin for {arch}"
            assert_destinations_distinct(kernel.asm["ptx"], f"{fn.__name__} on {arch}")
        return out

    return run


@pytest.fixture(params=["cpu", "ptx", "cuda"])
def device(request, monkeypatch):
    """Runs a test on the CPU backend; then where ptxas is found, on the CPU
    again with every kernel also compiled and assembled for sm_80 and sm_90a;
    then on the GPU (host arrays moved there at each launch), where there is one."""
    if request.param == "ptx":
        if request.node.get_closest_marker("cpu_only") or not tilec._C.find_ptxas():
            pytest.skip("ptxas not found")
        if gpu_available():
            pytest.skip("the GPU run assembles every kernel")
        run = assemble_for_gpus(jitmod.JITFunction.run)
        monkeypatch.setattr(jitmod.JITFunction, "run", run)
    if request.param == "cuda":
        if request.node.get_closest_marker("cpu_only"):
            pytest.skip("checks the CPU backend alone")
        if not gpu_available():
            pytest.skip("no CUDA GPU")
        shim = GpuShim(jitmod.JITFunction.run)
        monkeypatch.setattr(jitmod.JITFunction, "run",
                            lambda fn, *a, grid, **k: shim(fn, *a, grid=grid, **k))
    return request.param
