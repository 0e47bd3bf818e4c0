"""What Triton's own tests import from ``triton._internal_testing``: the dtype
lists they parametrize over, which device they run on, and moving numpy data
to and from torch (unsigned integers and fp8 travel as ``TensorWrapper``s)."""

import multiprocessing
import os
import queue
import re
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from . import knobs
from . import language as tl
from .runtime.driver import driver
from .runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
# Element types a TMA descriptor can move (no 64-bit ones).
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter():
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def get_current_target():
    """The GPU tests run on, or None when they run on the CPU."""
    if is_interpreter():
        return None
    try:
        return driver.active.get_current_target()
    except RuntimeError:  # no GPU: the CPU driver has no target
        return None


def _backend():
    target = get_current_target()
    return None if target is None else target.backend


def _capability():
    import torch
    return torch.cuda.get_device_capability() if _backend() == "cuda" else (0, 0)


def is_cuda():
    return _backend() == "cuda"


def is_ampere_or_newer():
    return _capability()[0] >= 8


def is_hopper_or_newer():
    return _capability()[0] >= 9


def is_hopper():
    return _capability()[0] == 9


def is_blackwell():
    return _capability()[0] in (10, 11)


def is_blackwell_ultra():
    return _capability()[:2] == (10, 3)


def is_sm12x():
    return _capability()[0] == 12


def is_hip():
    return _backend() == "hip"


def _hip_arch(*names):
    return is_hip() and get_arch() in names


def is_hip_cdna2():
    return _hip_arch("gfx90a")


def is_hip_cdna3():
    return _hip_arch("gfx942")


def is_hip_cdna4():
    return _hip_arch("gfx950")


def is_hip_rdna3():
    return _hip_arch("gfx1100", "gfx1101", "gfx1102", "gfx1103")


def is_hip_rdna4():
    return _hip_arch("gfx1200", "gfx1201")


def is_hip_gfx1250():
    return _hip_arch("gfx1250")


def is_hip_cdna():
    return is_hip_cdna2() or is_hip_cdna3() or is_hip_cdna4()


def is_hip_rdna():
    return is_hip_rdna3() or is_hip_rdna4()


def get_hip_lds_size():
    return 163840 if is_hip_cdna4() else 65536


def is_xpu():
    return _backend() == "xpu"


def get_arch():
    target = get_current_target()
    return "" if target is None else str(target.arch)


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Random test data of `dtype_str` (seeded with 17 unless `rs` is given):
    integers over the type's range (or [low, high)), never 0 so that division
    tests do not divide by it; normal floats; bfloat16 as float32 with the low
    16 bits cleared; small bytes for fp8; booleans from the sign of a normal."""
    shape = (shape,) if isinstance(shape, int) else shape
    rs = np.random.RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        values = rs.randint(lo, hi, shape, dtype=getattr(np, dtype_str))
        values[values == 0] = 1
        return values
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype("float32").view("uint32")
        return (bits & np.uint32(0xFFFF0000)).view("float32")
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x, device, dst_type=None):
    """A numpy array as a torch tensor on `device`; unsigned and fp8 data as a
    TensorWrapper of the same bits (torch has no such dtypes for kernels);
    float32 data as bfloat16 when `dst_type` asks for it."""
    import torch
    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(getattr(np, name[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x):
    return tl.str_to_ty(type_canonicalisation_dict[x], None)


def torch_dtype_name(dtype):
    """'int64' for torch.int64 and for tl.int64."""
    import torch
    if isinstance(dtype, tl.dtype):
        return dtype.name
    if isinstance(dtype, torch.dtype):
        return re.fullmatch(r"torch\.(\w+)", str(dtype)).group(1)
    raise TypeError(f"not a triton or torch dtype: {type(dtype)}")


def to_numpy(x):
    """The data of a torch tensor or TensorWrapper as numpy (bfloat16 as float32)."""
    import torch
    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        return x.cpu().float().numpy() if x.dtype is torch.bfloat16 else x.cpu().numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def supports_tma(byval_only=False):
    """TMA on Hopper or newer (tilec assembles for it whatever ptxas is found)."""
    return is_interpreter() or is_hopper_or_newer()


def supports_ws():
    return is_interpreter() or is_hopper_or_newer()


def tma_skip_msg(byval_only=False):
    return "Requires TMA support (NVIDIA Hopper or newer)"


def _requires_tma():
    import pytest
    return pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


def default_alloc_fn(size, align, stream):
    import torch
    return torch.empty(size, dtype=torch.int8, device="cuda")


def unwrap_tensor(t):
    return t.base if isinstance(t, TensorWrapper) else t


@dataclass
class ProcessResult:
    exc: object
    driver_stderr_output: str


def _child(client_fn, results, args, kwargs, env, stderr_path):
    """Runs client_fn with fd 2 going to a file, so that what the driver writes
    to stderr is seen; puts the exception (or None) on `results`."""
    if env:
        os.environ.update(env)
    with open(stderr_path, "w+b") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        exc = None
        try:
            client_fn(*args, **kwargs)
            if is_cuda():
                import torch
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - handed back to the parent
            exc = e
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            results.put(exc)


def run_in_process(client_fn, args=(), kwargs=None, env=None):
    """Runs client_fn in a fresh process: what it raised and what it wrote to stderr."""
    ctx = multiprocessing.get_context("forkserver")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        stderr_path = os.path.join(tmp, "stderr")
        child = ctx.Process(target=_child,
                            args=(client_fn, results, args, kwargs or {}, env, stderr_path))
        child.start()
        child.join()
        with open(stderr_path) as f:
            stderr = f.read()
    try:
        exc = results.get(timeout=1)
    except queue.Empty:
        print(stderr, file=sys.stderr)
        raise RuntimeError(f"child process exited with code {child.exitcode} without "
                           "returning a result") from None
    return ProcessResult(exc, stderr)


def _fresh_knobs_impl(skipped_attr=None):
    """(fresh, reset): `fresh()` replaces every knob group but those named in
    `skipped_attr` by a copy at its defaults, with the knobs' environment
    variables unset, and returns the knobs module; `reset()` puts all back."""
    import pytest
    skipped = set(skipped_attr or ())
    groups = {name: group for name, group in vars(knobs).items()
              if isinstance(group, knobs.base_knobs) and name not in skipped}
    env = pytest.MonkeyPatch()
    saved_propagate = knobs.propagate_env
    unset_later = []

    def fresh():
        for name, group in groups.items():
            setattr(knobs, name, group.copy().reset())
            for knob in group.knob_descriptors.values():
                for key in _env_keys(knob):
                    if key in os.environ:
                        env.delenv(key, raising=False)
                    else:
                        unset_later.append(key)
        knobs.propagate_env = True
        return knobs

    def reset():
        for name, group in groups.items():
            setattr(knobs, name, group)
        env.undo()
        for key in unset_later:
            os.environ.pop(key, None)
        knobs.propagate_env = saved_propagate

    return fresh, reset


def _env_keys(knob):
    keys = getattr(knob, "keys", None) or getattr(knob, "key", ())
    return (keys,) if isinstance(keys, str) else tuple(keys)


def __getattr__(name):
    if name == "requires_tma":  # a pytest mark, made when asked for: pytest is a test dependency
        return _requires_tma()
    raise AttributeError(f"module 'tilec._internal_testing' has no attribute {name!r}")
