"""``triton.runtime.jit``: ``@jit``, a kernel written in Triton's language,
compiled by tilec's C++ compiler on first launch for each specialization, and
run over a grid; the tensor wrappers Triton's tests use (`reinterpret`)."""

import ast
import importlib
import inspect
import textwrap
import threading
import types

from .. import _args
from .. import _C
from ..compiler.compiler import DEFAULT_GPU_OPTIONS, CompiledKernel, gpu_kernel
from ..errors import compilation_error
from ..language import core as tl
from . import launch
from .launch import LAUNCH_OPTIONS, gpu_options


def _is_constexpr_annotation(annotation):
    """tl.constexpr, Triton's own constexpr class, or either as a string annotation."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return isinstance(annotation, type) and annotation.__name__ == "constexpr"


def _module_name(module):
    name = module.__name__
    if name.endswith(".libdevice"):
        return "libdevice"
    if name == "tilec" or name.startswith("tilec."):
        return "triton" + name[len("tilec"):]
    return name


def _source_of(fn):
    """(source text, first line, file name) of a kernel's Python function. A
    function made by exec() has no file to read: its source is found as the text
    that the caller of exec() passed (a string variable of that frame), which is
    how code that rewrites kernels' sources makes them."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        return textwrap.dedent("".join(lines)), first_line, inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError):
        pass
    code = fn.__code__
    frame = inspect.currentframe()
    while frame is not None and frame.f_code.co_filename != code.co_filename:
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    if caller is not None:
        for value in list(caller.f_locals.values()) + list(caller.f_globals.values()):
            found = _function_in_text(value, fn.__name__, code.co_firstlineno)
            if found is not None:
                return found, code.co_firstlineno, code.co_filename
    raise OSError(f"could not get the source code of '{fn.__name__}': a @jit kernel must be "
                  "defined in a file, or by exec() of a string the caller holds")


def _function_in_text(text, name, first_line):
    """The source of function `name` that starts (decorators included) at
    `first_line` of `text`, or None."""
    if not isinstance(text, str) or f"def {name}(" not in text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start == first_line:
                lines = text.splitlines(keepends=True)[start - 1:node.end_lineno]
                return textwrap.dedent("".join(lines))
    return None


def _names_used(code):
    """The global and closure names a function's code (and code nested in it) uses."""
    names = list(code.co_names) + list(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names_used(const)
    return names


# The constexpr globals the compile in progress (on this thread) has read.
_globals_read = threading.local()


class _Cache(dict):
    """The compiled specializations; clearing it also forgets the fast path's."""

    def __init__(self, launcher):
        super().__init__()
        self._launcher = launcher

    def clear(self):
        super().clear()
        self._launcher.clear()


class KernelInterface:
    """What can be launched as ``kernel[grid](*args)``: a @jit function, or an
    autotuner or heuristics around one."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


class JITFunction(KernelInterface):
    """A kernel. Launch it with ``kernel[grid](*args, **kwargs)``."""

    def __init__(self, fn, do_not_specialize=(), **options):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.src, self.first_line, self.filename = _source_of(fn)
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexprs = [
            i for i, p in enumerate(self.params) if _is_constexpr_annotation(p.annotation)
        ]
        self.do_not_specialize = {
            self.arg_names[d] if isinstance(d, int) else d for d in do_not_specialize
        }
        self.options = options
        self._fast = _C.Launcher(
            self.arg_names, [i in self.constexprs for i in range(len(self.params))],
            [n not in self.do_not_specialize for n in self.arg_names],
            [p.default for p in self.params], inspect.Parameter.empty)
        self.cache = _Cache(self._fast)

    def _unsafe_update_src(self, new_src):
        """Replaces the kernel's source, as Triton's tests patch kernels; the
        specializations compiled from the old source are dropped."""
        self.src = new_src
        self.cache.clear()

    # --- names the kernel's code uses

    def _lookup(self, name):
        code = self.fn.__code__
        if name in code.co_freevars and self.fn.__closure__:
            cell = self.fn.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        if name in self.fn.__globals__:
            return True, self.fn.__globals__[name]
        return False, None

    def _resolve(self, name):
        """Tells the compiler what a global name stands for (see bindings); a
        dotted name (triton.language.rand) is a @jit helper of a language module."""
        if "." in name:
            return _language_attribute(name)
        found, value = self._lookup(name)
        if not found:
            return None
        if isinstance(value, JITFunction):
            return ("jit", value.src, value.filename, value.first_line, value.__name__,
                    value._resolve)
        if isinstance(value, types.ModuleType):
            return ("module", _module_name(value))
        if _args.is_constexpr(value) or value is None or isinstance(
                value, (bool, int, float, str, tuple)) or _args.as_dtype(value) is not None:
            const = _args._hashable(value.value if _args.is_constexpr(value) else value)
            getattr(_globals_read, "log", []).append((self, name, const))
            return ("constexpr", const)
        module = getattr(value, "__module__", None) or ""
        if module.startswith("tilec.language") and hasattr(value, "__name__"):
            return ("builtin", _BUILTIN_MODULES.get(module, "triton.language"), value.__name__)
        if isinstance(value, tl._KernelOnly):
            return ("builtin", "triton.language", value.__name__)
        if callable(value):
            return ("object", f"Python function '{name}' (it is not @jit)")
        return ("object", f"'{name}', a Python {type(value).__name__}")

    def reached_functions(self):
        """This kernel and every @jit function it reaches through the names its
        code uses, each once, in the order first met (depth first)."""
        language = importlib.import_module("tilec.language")
        order, seen = [], set()

        def visit(fn):
            if id(fn) in seen:
                return
            seen.add(id(fn))
            order.append(fn)
            for name in _names_used(fn.fn.__code__):
                found, value = fn._lookup(name)
                if not (found and isinstance(value, JITFunction)):
                    value = getattr(language, name, None)  # tl.rand: a language helper
                if isinstance(value, JITFunction):
                    visit(value)

        visit(self)
        return order

    # --- launching

    def __getitem__(self, grid):
        """``kernel[grid](*args)``: the launch goes through the C++ fast path once
        this specialization has run before, else through ``run``."""
        if launch.hooks_set():
            return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)
        return self._fast.bind_grid(grid, self.run)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"'{self.__name__}' is a @jit kernel: launch it with {self.__name__}[grid](...), "
            "or call it from another kernel"
        )

    def _bind(self, args, kwargs):
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS
                   and k not in self.arg_names}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def _specialize(self, values):
        specs, runtime, memory, devices = [], [], [], set()
        for i, name in enumerate(self.arg_names):
            value = values[name] = _args.from_dlpack(values[name])
            spec, rt = _args.specialize(
                name, value, i in self.constexprs, name not in self.do_not_specialize
            )
            if i in self.constexprs and _args.is_tensor(value):
                raise TypeError(f"argument '{name}' is tl.constexpr but got a tensor")
            specs.append(spec)
            if isinstance(rt, list):  # a tensor descriptor or a tuple: several values
                runtime.extend(rt)
            elif rt is not None:
                runtime.append(rt)
            if spec[0] in ("ptr", "desc", "tuple"):
                for tensor in _args.tensors_in(value):
                    low, high = _args.memory_range(tensor)
                    memory.append((low, high, name, not _args.is_read_only(tensor)))
                    devices.add(_args.device_of(tensor))
        return tuple(specs), runtime, memory, devices

    def _compile_ir(self, specs, target="cpu"):
        """Tile IR for these specs; `target` ("cpu", "sm_90a", ...) answers
        tl.target_info in the kernel (compiled.depends_on_target says it was asked)."""
        _globals_read.log = []
        try:
            compiled = _C.compile(self.src, self.filename, self.first_line, list(specs),
                                  self._resolve, target)
        except _C.CompilationError as e:
            raise compilation_error(str(e)) from None
        finally:
            log, _globals_read.log = _globals_read.log, []
        return compiled, log

    def _compile(self, specs, arch=None, options=None):
        """The kernel for this specialization: Tile IR for the CPU backend, and
        PTX and a cubin too when `arch` names a GPU target."""
        options = {**DEFAULT_GPU_OPTIONS, **(options or {})}
        key = specs if arch is None else (specs, arch, tuple(sorted(options.items())))
        kernel = self.cache.get(key)
        if kernel is not None and kernel.globals_unchanged():
            return kernel
        base = self.cache.get(specs)
        target = arch or "cpu"
        if (base is not None and base.globals_unchanged()
                and (not base._compiled.depends_on_target or base.ir_target == target)):
            compiled, log = base._compiled, base.globals_read
        else:
            compiled, log = self._compile_ir(specs, target)
            if arch is not None and not compiled.depends_on_target:  # the CPU's IR too
                cpu = CompiledKernel(compiled, specs)
                cpu.globals_read = log
                self.cache[specs] = cpu
        gpu = None
        if arch is not None:
            gpu = gpu_kernel(self, compiled, specs, log, arch, options)
        kernel = CompiledKernel(compiled, specs, gpu, options)
        if callable(self.options.get("repr")):  # @jit(repr=...): the kernel's name
            kernel.name = kernel.metadata.name = self.options["repr"](
                _specialization(self.arg_names, specs))
        kernel.globals_read = log
        kernel.ir_target = target
        self.cache[key] = kernel
        return kernel

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles the kernel for these arguments without running it: for the GPU
        when a tensor argument is on one (or `device_type="cuda"` is given)."""
        return self._warmup_job(*args, **kwargs)()

    def _warmup_job(self, *args, grid=None, **kwargs):
        """What warmup compiles, read from the arguments now, as a call to make
        later (on another thread, while the arguments may change)."""
        values, options = self._bind(args, dict(kwargs))
        specs, _, _, devices = self._specialize(values)
        arch, _ = launch.target_of(self, devices, options)
        return lambda: self._compile(specs, arch, gpu_options(options))

    def run(self, *args, grid, **kwargs):
        if not launch.hooks_set():
            kernel = self._fast.launch(grid, args, kwargs)  # a known GPU specialization
            if kernel is not None:
                return kernel
        return launch.run_kernel(self, args, kwargs, grid)

    def _globals_checks(self, kernel):
        """(where, name, value) of each constexpr global the kernel read, for the
        fast path to compare at each launch; a closure cell has name None."""
        checks = []
        for fn, name, value in kernel.globals_read:
            code = fn.fn.__code__
            if name in code.co_freevars and fn.fn.__closure__:
                checks.append((fn.fn.__closure__[code.co_freevars.index(name)], None, value))
            else:
                checks.append((fn.fn.__globals__, name, value))
        return checks


# Where the compiler finds a built-in function that a kernel names by its value
# (`from triton.language.extra.libdevice import tanh`), by the value's module.
_BUILTIN_MODULES = {
    "tilec.language.target_info": "triton.language.target_info",
    "tilec.language.math": "triton.language.math",
    "tilec.language.extra.cuda": "triton.language.extra.cuda",
}


def _language_modules():
    """The kernel-language modules by the names kernels know them by. Looked up
    by name: they are written in the kernel language, so they import this module."""
    language = importlib.import_module("tilec.language")
    libdevice = language.extra.libdevice
    return {"triton.language": language, "triton.language.core": language,
            "triton.language.random": language.random,
            "triton.language.standard": language.standard,
            "triton.language.math": language.math, "libdevice": libdevice,
            "triton.language.extra.libdevice": libdevice,
            "triton.language.extra.cuda.libdevice": libdevice}


def _language_attribute(name):
    """What a dotted name under a kernel-language module is, for the compiler: a
    @jit helper (tl.rand), a constant (tl.TRITON_MAX_TENSOR_NUMEL), or a class of
    constants used as a namespace (tl.PropagateNan)."""
    for prefix, module in sorted(_language_modules().items(), key=lambda p: -len(p[0])):
        if name.startswith(prefix + "."):
            value = module
            for part in name[len(prefix) + 1:].split("."):
                value = getattr(value, part, None)
            break
    else:
        return None
    if isinstance(value, JITFunction):
        return ("jit", value.src, value.filename, value.first_line, value.__name__,
                value._resolve)
    if isinstance(value, (bool, int, float)):
        return ("constexpr", value)
    if isinstance(value, tl.dtype) and value.is_ptr():  # tl.pi32_t
        return ("constexpr", value)
    if isinstance(value, type):
        return ("module", name)
    return None


# Triton's type strings of the Tile IR element types.
_TRITON_TYPES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "f8e4m3": "fp8e4nv",
                 "f8e5m2": "fp8e5"}


def _specialization(arg_names, specs):
    """What a kernel's `repr=` function gets, as Triton gives it: `signature`
    (each argument's type string, "constexpr" for constants) and `constants`
    (constexpr arguments and integers specialized to 1, by name)."""
    signature, constants = {}, {}
    for name, spec in zip(arg_names, specs):
        kind = spec[0]
        if kind == "constexpr":
            signature[name], constants[name] = "constexpr", spec[1]
        elif kind in ("ptr", "desc"):
            element = _TRITON_TYPES.get(spec[1], spec[1])
            signature[name] = "*" + element if kind == "ptr" else f"tensordesc<{element}>"
        else:
            signature[name] = {"int": spec[1] if len(spec) > 1 else "i32", "bool": "i1",
                               "float": "fp32"}.get(kind, kind)
    return types.SimpleNamespace(signature=signature, constants=constants, attrs={})


def jit(fn=None, *, do_not_specialize=(), debug=None, noinline=None, **options):
    """Decorates a kernel (or a helper that kernels call): ``@tilec.jit``."""

    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, **options)

    return wrap(fn) if fn is not None else wrap


# Triton's type strings of each dtype, by the dtype's name.
type_canonicalisation_dict = {
    "bool": "i1", "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float8e5": "fp8e5", "float8_e5m2": "fp8e5", "float8e4nv": "fp8e4nv",
    "float8_e4m3fn": "fp8e4nv", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float32": "fp32", "float": "fp32", "float64": "fp64", "double": "fp64",
}


class TensorWrapper:
    """A tensor whose bytes a kernel sees as another dtype of the same width
    (``reinterpret(x, tl.float8e5)``): its pointer argument has that dtype."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = base.data
        self.device = base.device
        self.shape = base.shape

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self):
        return self.base.element_size()

    def numel(self):
        return self.base.numel()

    def dim(self):
        return self.base.dim()

    def untyped_storage(self):
        return self.base.untyped_storage()

    def detach(self):
        return TensorWrapper(self.base.detach(), self.dtype)

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def new_zeros(self, sizes):
        return TensorWrapper(self.base.new_zeros(sizes), self.dtype)

    def size(self, *args):
        return self.base.size(*args)

    def is_contiguous(self, *args, **kwargs):
        return self.base.is_contiguous(*args, **kwargs)

    def __getitem__(self, index):
        return TensorWrapper(self.base[index], self.dtype)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """`tensor`'s bytes seen as `dtype` by kernels (a TensorWrapper); a
    TensorWrapper of a torch dtype is unwrapped back to its tensor."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"cannot reinterpret a {type(tensor).__name__}")


class MockTensor:
    """A stand-in for a tensor of `dtype` (with a null pointer), for compiling
    without real arguments."""

    def __init__(self, dtype, shape=None):
        self.dtype = dtype
        self.shape = shape if shape is not None else [1]

    @staticmethod
    def wrap_dtype(arg):
        if _args.as_dtype(arg) is not None or type(arg).__name__ == "dtype":
            return MockTensor(arg)
        return arg

    def data_ptr(self):
        return 0

    def stride(self):
        return (1,)
