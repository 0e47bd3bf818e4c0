"""How launch arguments reach a kernel: which are specialized and how, their
data pointers and the memory each may touch."""

import operator

import numpy as np

from .language import core as tl

# numpy and torch dtype names -> Tile IR element types.
_DTYPES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
    "half": "f16", "float": "f32", "double": "f64",
}


def tma_stride_divisor(element):
    """A stride of 16 bytes, in elements of Tile IR type `element`: TMA takes
    strides that are multiples of it."""
    bits = next((b for t, b, _ in tl._DTYPES.values() if t == element), 128)
    return max(1, 128 // max(bits, 8))


def _torch_dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _is_torch_tensor(value):
    """A torch tensor (a Parameter, one that requires grad, a view...), found
    without touching attributes that such tensors refuse (__cuda_array_interface__)."""
    return hasattr(value, "data_ptr") and hasattr(value, "untyped_storage")


def is_constexpr(value):
    """A tl.constexpr, ours or Triton's."""
    return type(value).__name__ == "constexpr" and hasattr(value, "value")


def as_dtype(value):
    """Our dtype for a dtype of ours or of Triton's; None for anything else."""
    if isinstance(value, tl.dtype):
        return value
    if type(value).__name__ == "dtype" and getattr(value, "name", None) in tl._DTYPES:
        return tl.dtype(value.name)  # Triton's own dtype object
    return None


def from_dlpack(value):
    """A torch tensor viewing an object that only speaks DLPack (JAX arrays and
    others); anything else unchanged."""
    if (hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")
            and not isinstance(value, np.ndarray) and not hasattr(value, "data_ptr")
            and not is_tensor(value)):
        import torch
        return torch.from_dlpack(value)
    return value


def is_tensor(value):
    if isinstance(value, np.ndarray) or (hasattr(value, "data_ptr") and hasattr(value, "dtype")):
        return True
    try:
        return hasattr(value, "__cuda_array_interface__")
    except RuntimeError:  # torch refuses it for tensors that require grad
        return False


def is_descriptor(value):
    from .tools.tensor_descriptor import TensorDescriptor
    return isinstance(value, TensorDescriptor)


def element_type(value, name):
    """The Tile IR element type of a numpy array, torch tensor or CUDA array."""
    if isinstance(value, np.ndarray):
        key = value.dtype.name
    elif as_dtype(getattr(value, "dtype", None)) is not None:  # reinterpret(x, tl.float8e5)
        return as_dtype(value.dtype)._tilec_dtype
    elif hasattr(value, "data_ptr"):
        key = _torch_dtype_name(value.dtype)
    else:
        key = np.dtype(value.__cuda_array_interface__["typestr"]).name
    if key not in _DTYPES:
        raise TypeError(f"argument '{name}': tensors of dtype {key} are not supported")
    return _DTYPES[key]


def data_pointer(value):
    if isinstance(value, np.ndarray):
        return value.ctypes.data
    if hasattr(value, "data_ptr"):
        return value.data_ptr()
    return value.__cuda_array_interface__["data"][0]


def memory_range(value):
    """The bytes a kernel may touch through this tensor: those its view (data
    pointer, shape and strides) can reach, not the whole allocation, so that a
    kernel writing before a view into its neighbour is caught."""
    if isinstance(value, np.ndarray):
        return (np.byte_bounds(value) if hasattr(np, "byte_bounds")
                else np.lib.array_utils.byte_bounds(value))
    if not hasattr(value, "untyped_storage"):
        ptr = data_pointer(value)  # device memory: the CPU backend never reads it
        return (ptr, ptr)
    start = data_pointer(value)
    if value.numel() == 0:
        return (start, start)
    size = value.element_size()
    low = high = 0
    for extent, stride in zip(value.shape, value.stride()):
        reach = (extent - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    return (start + low * size, start + (high + 1) * size)


def is_read_only(value):
    """A numpy array that must not be written (a read-only memmap, np.frombuffer
    of bytes, a broadcast view)."""
    return isinstance(value, np.ndarray) and not value.flags.writeable


def device_of(value):
    if isinstance(value, np.ndarray):
        return "cpu"
    if not hasattr(value, "data_ptr") and hasattr(value, "__cuda_array_interface__"):
        from . import _C
        device = _C.pointer_device(data_pointer(value))
        return f"cuda:{max(device, 0)}"
    device = getattr(value, "device", "cpu")
    return str(device)


def int_type(value):
    if -(2**31) <= value < 2**31:
        return "i32"
    if -(2**63) <= value < 2**63:
        return "i64"
    if 0 <= value < 2**64:
        return "u64"
    raise OverflowError(f"integer argument {value} does not fit in 64 bits")


def specialize(name, value, constexpr_param, specialize_ints):
    """The specialization of one argument: (spec, runtime value or None).

    The spec is what the compiler sees and part of the cache key. Runtime
    values are what the launch passes; constexprs have none.
    """
    if is_constexpr(value):
        value = value.value
    if constexpr_param:
        return ("constexpr", _hashable(value)), None
    if isinstance(value, tuple):  # each element specialized in turn; a tl.constexpr stays one
        specs, runtime = [], []
        for k, v in enumerate(value):
            spec, rt = specialize(f"{name}[{k}]", v.value if is_constexpr(v) else v,
                                  is_constexpr(v), specialize_ints)
            specs.append(spec)
            runtime.extend(rt if isinstance(rt, list) else [] if rt is None else [rt])
        return ("tuple", tuple(specs)), runtime
    if as_dtype(value) is not None:
        return ("constexpr", as_dtype(value)), None
    if value is None or isinstance(value, str):
        return ("constexpr", _hashable(value)), None
    if isinstance(value, bool):
        return ("bool",), int(value)
    if isinstance(value, (int, np.integer)):
        value = int(value)  # np.int64 and the like are ints
        if specialize_ints and value == 1:
            return ("constexpr", 1), None
        divisible = 16 if specialize_ints and value % 16 == 0 else 1
        return ("int", int_type(value), divisible), value
    if isinstance(value, (float, np.floating)):
        return ("float", "f32"), float(value)
    if is_tensor(value):
        ptr = data_pointer(value)
        aligned = 16 if ptr % 16 == 0 else 1
        return ("ptr", element_type(value, name), aligned), ptr
    if is_descriptor(value):  # base pointer, then each dim's size and stride
        if value.padding not in ("zero", "nan"):
            raise ValueError(f"argument '{name}': padding must be 'zero' or 'nan', "
                             f"got {value.padding!r}")
        ptr = data_pointer(value.base)
        # Specialized as Triton's TMA descriptors are: sizes and strides that
        # are multiples of 16, and unit strides (the last, as TMA requires);
        # a stride that is a multiple of 16 bytes (what TMA needs) is one too.
        elem = element_type(value.base, name)
        floor = tma_stride_divisor(elem)

        def divisor(v, stride):
            return 16 if v % 16 == 0 else floor if stride and v % floor == 0 else 1

        dims = [(v, False) for v in value.shape] + [(v, True) for v in value.strides]
        sixteen = tuple(divisor(v, stride) if specialize_ints else 1 for v, stride in dims)
        unit = tuple(specialize_ints and s == 1 for s in value.strides)
        spec = ("desc", elem, 16 if ptr % 16 == 0 else 1,
                tuple(value.block_shape), value.padding, sixteen, unit)
        return spec, [ptr, *value.shape, *value.strides]
    raise TypeError(
        f"argument '{name}' has type {type(value).__name__}; a kernel takes tensors, "
        "ints, floats, bools, None, dtypes, constexprs and tuples of them"
    )


def tensors_in(value):
    """The tensors an argument passes: itself, a descriptor's base, or those in a tuple."""
    if isinstance(value, tuple):
        return [t for v in value for t in tensors_in(v)]
    if is_descriptor(value):
        return [value.base]
    return [value] if is_tensor(value) else []


def map_tensors(value, f):
    """The argument with f applied to each tensor it passes (through tuples and
    descriptors)."""
    if isinstance(value, tuple):
        items = [map_tensors(v, f) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if is_descriptor(value):
        import dataclasses
        return dataclasses.replace(value, base=f(value.base))
    return f(value) if is_tensor(value) else value


def _hashable(value):
    if as_dtype(value) is not None:
        return as_dtype(value)
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


# The largest grid CUDA launches: x up to 2**31 - 1, y and z up to 65535.
GRID_LIMITS = (2**31 - 1, 65535, 65535)


def normalize_grid(name, grid, values):
    """The launch grid as three ints: from a tuple, a list, an int or a callable
    of the meta-parameters; numpy and torch integers count as ints."""
    if callable(grid):
        grid = grid(values)
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    try:
        dims = tuple(operator.index(g) for g in grid)
    except TypeError:
        dims = None
    if dims is None or not 1 <= len(dims) <= 3:
        raise ValueError(f"{name}: the grid must be 1 to 3 ints, got {grid!r}")
    if any(g < 0 for g in dims):
        raise ValueError(f"{name}: grid dimensions must not be negative: {grid!r}")
    for axis, (g, limit) in enumerate(zip(dims, GRID_LIMITS)):
        if g > limit:
            raise ValueError(f"{name}: grid dimension {axis} is {g}, more than the {limit} "
                             f"a launch may have along {'xyz'[axis]}")
    return dims + (1,) * (3 - len(dims))


def flatten_runtime(args):
    """The runtime values of a direct launch's arguments: tensors by pointer,
    descriptors as pointer, shape and strides, tuples flattened, None and
    strings dropped."""
    out = []

    def add(a):
        if isinstance(a, tuple):
            for v in a:
                add(v)
        elif is_tensor(a):
            out.append(data_pointer(a))
        elif is_descriptor(a):
            out.extend([data_pointer(a.base), *a.shape, *a.strides])
        elif not (a is None or isinstance(a, str)):
            out.append(a)

    for a in args:
        add(a)
    return out
