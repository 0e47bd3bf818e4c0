"""``triton.language.core``: dtypes, ``constexpr`` and the names of the ``tl.*``
functions built into the compiler.

The functions here only name what a kernel may call: tilec's compiler reads the
kernel's source and gives each call its meaning. Calling one from plain Python
raises an error that says so.
"""

import builtins


# Triton's dtype names -> (Tile IR element type, bits, kind).
_DTYPES = {
    "int1": ("i1", 1, "int"), "int8": ("i8", 8, "int"), "int16": ("i16", 16, "int"),
    "int32": ("i32", 32, "int"), "int64": ("i64", 64, "int"), "uint8": ("u8", 8, "uint"),
    "uint16": ("u16", 16, "uint"), "uint32": ("u32", 32, "uint"), "uint64": ("u64", 64, "uint"),
    "fp8e4nv": ("f8e4m3", 8, "float"), "fp8e5": ("f8e5m2", 8, "float"),
    "fp16": ("f16", 16, "float"), "bf16": ("bf16", 16, "float"), "fp32": ("f32", 32, "float"),
    "fp64": ("f64", 64, "float"),
    # fp8 formats tilec does not compile: fp8e4b15 (pre-Hopper NVIDIA, deprecated by
    # Triton on Hopper) and AMD's fp8e4b8 / fp8e5b16. Kernels using them get a
    # compilation error that says so.
    "fp8e4b15": ("unsupported:float8e4b15", 8, "float"),
    "fp8e4b8": ("unsupported:float8e4b8", 8, "float"),
    "fp8e5b16": ("unsupported:float8e5b16", 8, "float"),
    "void": ("void", 0, "void"),
}


class dtype:
    """A scalar element type, such as ``tl.float32``; ``dtype("fp32")`` by
    Triton's name for it."""

    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32",
                "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    def __init__(self, name):
        name = getattr(name, "name", name)
        if name not in _DTYPES:
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name
        self._tilec_dtype, self.primitive_bitwidth, self._kind = _DTYPES[name]

    def is_floating(self):
        return self._kind == "float"

    def is_int(self):
        return self._kind in ("int", "uint")

    def is_int_signed(self):
        return self._kind == "int"

    def is_int_unsigned(self):
        return self._kind == "uint"

    def is_bool(self):
        return self.name == "int1"

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_fp8(self):
        return self.name.startswith("fp8")

    def is_void(self):
        return self.name == "void"

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    @property
    def scalar(self):
        return self

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    def to_ir(self, builder=None):
        return self._tilec_dtype

    def __eq__(self, other):
        return isinstance(other, dtype) and other._tilec_dtype == self._tilec_dtype

    def __hash__(self):
        return hash(self._tilec_dtype)

    def __repr__(self):
        return f"triton.language.{self.name}"

    def __str__(self):
        return self.name

    @property
    def cache_key_part(self):
        return self.name


class pointer_type(dtype):
    """The type of a pointer to ``element_ty``."""

    def __init__(self, element_ty, address_space=1, const=False):
        self.name = f"pointer<{element_ty.name}>"
        self._tilec_dtype = "ptr:" + element_ty._tilec_dtype
        self.primitive_bitwidth, self._kind = 64, "ptr"
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const

    def is_ptr(self):
        return True


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
void = dtype("void")
pi32_t = pointer_type(int32)


class block_type(dtype):
    """The type of a tensor: an element type and a shape (``x.type`` in Triton)."""

    def __init__(self, element_ty, shape):
        self.name = element_ty.name
        self._tilec_dtype = element_ty._tilec_dtype
        self.primitive_bitwidth, self._kind = element_ty.primitive_bitwidth, element_ty._kind
        self.element_ty = element_ty
        self.shape = builtins.tuple(int(s) for s in shape)
        self.numel = 1
        for s in self.shape:
            self.numel *= s

    @property
    def scalar(self):
        return self.element_ty

    def is_block(self):
        return True

    def __eq__(self, other):
        return (isinstance(other, block_type) and other.element_ty == self.element_ty
                and other.shape == self.shape)

    def __hash__(self):
        return hash((self.element_ty, self.shape))

    def __repr__(self):
        return f"<{list(self.shape)}, {self.element_ty!r}>"

    __str__ = __repr__


class tuple_type:
    """The type of a tuple of values."""

    def __init__(self, types, fields=None):
        self.types = list(types)
        self.fields = list(fields) if fields else [""] * len(self.types)

    def __eq__(self, other):
        return isinstance(other, tuple_type) and other.types == self.types

    def __repr__(self):
        return f"({', '.join(repr(t) for t in self.types)})"


class constexpr_type:
    """The type of a compile-time constant."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self):
        return hash(("constexpr", repr(self.value)))

    def __repr__(self):
        return f"constexpr_type[{self.value!r}]"


class const:
    """Annotation of a pointer to data the kernel only reads, as in Triton."""


class slice:
    """A slice (``x[a:b:c]``) as Triton's front end represents one."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


class constexpr:
    """Marks a kernel parameter (or a global) as known at compile time."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"


class tensor:
    """The type of tile values inside a kernel (for annotations)."""


class tensor_descriptor:
    """The type of a tensor descriptor inside a kernel (tl.make_tensor_descriptor),
    for annotations."""


class _KernelOnly:
    def __init__(self, name):
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"tl.{self.__name__}() can be called only inside a @tilec.jit kernel"
        )

    def __repr__(self):
        return f"<tl.{self.__name__}>"


_FUNCTIONS = """
program_id num_programs arange zeros zeros_like full load store make_block_ptr advance
where maximum minimum clamp exp exp2 log log2 sqrt sqrt_rn rsqrt abs sin cos floor ceil erf
sigmoid fma div_rn fdiv umulhi cdiv sum max min argmax argmin cumsum softmax dot reshape view
ravel trans permute broadcast_to broadcast expand_dims cast multiple_of max_contiguous
max_constancy debug_barrier static_assert static_print device_assert device_print
static_range range atomic_add atomic_max atomic_min atomic_and atomic_or atomic_xor
atomic_xchg atomic_cas to_tensor add sub mul squeeze unsqueeze assume make_tensor_descriptor
load_tensor_descriptor store_tensor_descriptor join split interleave cat flip reduce xor_sum
reduce_or gather histogram associative_scan cumprod sort topk map_elementwise condition
expect_zero atomic_load atomic_store atomic_poll inline_asm_elementwise bitonic_merge tuple
""".split()

for _name in _FUNCTIONS:
    globals()[_name] = _KernelOnly(_name)
del _name

# The largest number of elements a tensor may have, as in Triton.
TRITON_MAX_TENSOR_NUMEL = 1048576


class PropagateNan:
    """`propagate_nan=` of tl.minimum, tl.maximum and tl.clamp, as Triton spells it."""
    NONE = 0
    ALL = 0xFFFF



def _aggregate(cls):
    """Marks a class as an aggregate (Triton's experimental struct of tensors
    with @jit methods). Kernels do not take aggregates yet: using one in a
    kernel is a compile error that says so."""
    cls.__tilec_aggregate__ = True
    return cls


def constexpr_function(fn):
    """Marks a plain Python function that kernels may call with constexpr
    arguments, at compile time (``@triton.constexpr_function``)."""
    fn.__tilec_constexpr_function__ = True
    return fn


def str_to_ty(name, c=None):
    """The dtype a signature string names: "fp32", "i32", "*fp16" (a pointer),
    "*kfp16" (a pointer to const), "constexpr"."""
    if name.startswith("*"):
        rest = name[1:]
        const = rest.startswith("k")
        return pointer_type(str_to_ty(rest[1:] if const else rest, c), const=const)
    if name == "constexpr":
        return constexpr_type(c)
    aliases = {"i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
               "u1": "int1", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
               "B": "int1"}
    return dtype(aliases.get(name, name))
