"""``@tilec.jit``: a kernel written in Triton's language, compiled by tilec's
C++ compiler on first launch for each specialization, and run over a grid."""

import inspect
import os
import textwrap
import threading
import types

from . import _args
from . import _C
from . import language as tl
from .errors import CompilationError, KernelError

# Keyword arguments of a launch that configure it rather than feed the kernel.
LAUNCH_OPTIONS = (
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid",
    "warmup", "stream", "device", "device_type", "launch_cooperative_grid", "debug",
    "num_threads", "launch_pdl",
)

# Launch options that change the compiled code, with Triton's defaults.
DEFAULT_GPU_OPTIONS = {"num_warps": 4, "num_stages": 3, "enable_fp_fusion": True, "debug": False,
                       "maxnreg": None}


def interpreting():
    """TILEC_INTERPRET=1 (or TRITON_INTERPRET=1): every launch runs on the CPU backend."""
    for name in ("TILEC_INTERPRET", "TRITON_INTERPRET"):
        if os.environ.get(name, "0") not in ("", "0"):
            return True
    return False


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


# The constexpr globals the compile in progress (on this thread) has read.
_globals_read = threading.local()


class CompiledKernel:
    """One compiled specialization of a kernel: its IR, and for a GPU target its
    PTX, cubin and the metadata Triton users read (``n_regs``, ``metadata.shared``)."""

    def __init__(self, compiled, spec, gpu=None, options=None):
        options = {**DEFAULT_GPU_OPTIONS, **(options or {})}
        self._compiled = compiled
        self.gpu = gpu
        self.ir_target = "cpu"  # what tl.target_info answered, if the kernel asked
        self.name = compiled.name
        self.spec = spec
        self.asm = {"tileir": compiled.ir, "tileir-sema": compiled.ir_after_sema}
        self.metadata = types.SimpleNamespace(
            name=compiled.name, num_warps=options["num_warps"], num_stages=options["num_stages"],
            shared=0, backend="cpu", target="cpu", num_ctas=1, debug=options["debug"],
        )
        self.n_regs = 0
        self.n_spills = 0
        self.compile_ms = compiled.compile_ms
        self.globals_read = []  # (JITFunction, name, value) the kernel was compiled with
        self.function = None
        if gpu is not None:
            self.asm["tilegpu"] = gpu.gpu_ir
            self.asm["ptx"] = gpu.ptx
            if gpu.cubin:
                self.asm["cubin"] = gpu.cubin
            self.metadata.backend = "cuda"
            self.metadata.target = gpu.arch
            self.metadata.shared = gpu.shared
            self.metadata.num_stages = gpu.num_stages
            self.n_regs = max(gpu.n_regs, 0)
            self.n_spills = gpu.n_spills
            if not gpu.from_cache:  # else its times are those of the process that compiled it
                self.compile_ms = compiled.compile_ms + gpu.emit_ms + gpu.assemble_ms

    def _init_handles(self, device=None):
        """Loads the module on the device (Triton's name for it); sets n_regs."""
        if self.gpu is None or self.function is not None:
            return
        if device is None:
            from .runtime import driver
            device = driver.active.get_current_device()
        self.gpu.load(device)
        self.n_regs = max(self.gpu.n_regs, 0)
        self.function = self.gpu

    def __getitem__(self, grid):
        """``compiled[grid](*args)``: launches this specialization directly."""
        def launch(*args, stream=None):
            from .launch import launch_compiled
            return launch_compiled(self, grid, args, stream)
        return launch

    def globals_unchanged(self):
        for fn, name, value in self.globals_read:
            found, now = fn._lookup(name)
            if _args.is_constexpr(now):
                now = now.value
            if not found or _args._hashable(now) != value:
                return False
        return True


class _Cache(dict):
    """The compiled specializations; clearing it also forgets the fast path's."""

    def __init__(self, launcher):
        super().__init__()
        self._launcher = launcher

    def clear(self):
        super().clear()
        self._launcher.clear()


class JITFunction:
    """A kernel. Launch it with ``kernel[grid](*args, **kwargs)``."""

    def __init__(self, fn, do_not_specialize=(), **options):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        lines, first_line = inspect.getsourcelines(fn)
        self.src = textwrap.dedent("".join(lines))
        self.first_line = first_line
        self.filename = inspect.getsourcefile(fn) or "<unknown>"
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
            where = ("triton.language.target_info" if module == "tilec.language.target_info"
                     else "triton.language")
            return ("builtin", where, value.__name__)
        if isinstance(value, tl._KernelOnly):
            return ("builtin", "triton.language", value.__name__)
        if callable(value):
            return ("object", f"Python function '{name}' (it is not @jit)")
        return ("object", f"'{name}', a Python {type(value).__name__}")

    # --- launching

    def __getitem__(self, grid):
        """``kernel[grid](*args)``: the launch goes through the C++ fast path once
        this specialization has run before, else through ``run``."""
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
                    memory.append(_args.memory_range(tensor))
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
            raise CompilationError(str(e)) from None
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
            from .cache import gpu_kernel
            gpu = gpu_kernel(self, compiled, specs, log, arch, options)
        kernel = CompiledKernel(compiled, specs, gpu, options)
        kernel.globals_read = log
        kernel.ir_target = target
        self.cache[key] = kernel
        return kernel

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles the kernel for these arguments without running it: for the GPU
        when a tensor argument is on one (or `device_type="cuda"` is given)."""
        values, options = self._bind(args, dict(kwargs))
        specs, _, _, devices = self._specialize(values)
        from .launch import target_of
        arch, _ = target_of(self, devices, options)
        return self._compile(specs, arch, _gpu_options(options))

    def run(self, *args, grid, **kwargs):
        kernel = self._fast.launch(grid, args, kwargs)  # a known GPU specialization
        if kernel is not None:
            return kernel
        from .launch import run_kernel
        return run_kernel(self, args, kwargs, grid)

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


def _language_modules():
    """The kernel-language modules by the names kernels know them by."""
    return {"triton.language": tl, "triton.language.random": tl.random,
            "triton.language.standard": tl.standard}


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


def _gpu_options(options):
    out = {k: options[k] for k in DEFAULT_GPU_OPTIONS if options.get(k) is not None}
    if "debug" in out:
        out["debug"] = bool(out["debug"])
    return out


def normalize_grid(name, grid, values):
    if callable(grid):
        grid = grid(values)
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(grid) <= 3 or not all(isinstance(g, int) for g in grid):
        raise ValueError(f"{name}: the grid must be 1 to 3 ints, got {grid!r}")
    if any(g < 0 for g in grid):
        raise ValueError(f"{name}: grid dimensions must not be negative: {grid!r}")
    return grid + (1,) * (3 - len(grid))


def jit(fn=None, *, do_not_specialize=(), debug=None, noinline=None, **options):
    """Decorates a kernel (or a helper that kernels call): ``@tilec.jit``."""

    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, **options)

    return wrap(fn) if fn is not None else wrap
