"""``triton.compiler.compiler``: a kernel's compiled specialization
(`CompiledKernel`: its IR, PTX, cubin and metadata), the GPU compile behind it,
and compiling without launching: ``tilec.compile(kernel, signature=...,
constexprs=..., target=...)`` or Triton's ``compile(ASTSource(...), target=...)``,
with or without a GPU."""

import functools
import marshal
import re
import types
import warnings

from .. import _C, _args
from ..backends.compiler import GPUTarget
from ..backends.nvidia.compiler import CUDABackend, sm_arch
from ..backends.nvidia.driver import CudaDriver
from ..errors import compilation_error
from . import cache

# Launch options that change the compiled code, with Triton's defaults.
# warp_specialize_loops is tilec's own: warp-specialize, on sm_90a, each outermost
# loop that holds a pipelined one, as if tl.range(warp_specialize=True) asked
# (the autotuner tries it on its fastest configs).
DEFAULT_GPU_OPTIONS = {"num_warps": 4, "num_stages": 3, "enable_fp_fusion": True, "debug": False,
                       "maxnreg": None, "launch_pdl": False, "launch_cooperative_grid": False,
                       "warp_specialize_loops": False}

# Triton's type strings -> ours.
_TYPE_NAMES = {
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
    "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64",
    "fp8e4nv": "f8e4m3", "fp8e5": "f8e5m2", "fp16": "f16", "bf16": "bf16", "fp32": "f32",
    "fp64": "f64",
}


# Shared memory one block may opt in to, by compute capability (CUDA's tables).
_MAX_SHARED = {80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448, 100: 232448,
               103: 232448, 120: 101376}
_warned_stages = set()


def max_shared_memory(arch):
    return _MAX_SHARED.get(_C.arch_number(arch), 101376)


def emit_ptx(compiled, arch, options, stages, defer_tma_stores=True):
    """The kernel's PTX for `arch` with `stages` pipeline stages (no ptxas):
    `compile_gpu`'s one step, which benchmarks/own_compile.py times."""
    return compiled.to_gpu(arch, options["num_warps"], stages, options["enable_fp_fusion"],
                           options["debug"], assemble=False, maxnreg=options.get("maxnreg") or 0,
                           defer_tma_stores=defer_tma_stores,
                           warp_specialize_loops=bool(options.get("warp_specialize_loops")),
                           launch_pdl=bool(options.get("launch_pdl")),
                           launch_cooperative_grid=bool(options.get("launch_cooperative_grid")))


def compile_gpu(compiled, arch, options):
    """PTX (and a cubin where ptxas or nvJitLink is found) for a compiled kernel.

    When the kernel's shared memory at `num_stages` does not fit the target,
    TMA stores first give up their own tiles (they then wait for their copies),
    then the kernel is compiled with fewer stages (and a one-time warning)
    rather than failing: kernels tuned on bigger cards still run."""
    stages = options["num_stages"]
    limit = max_shared_memory(arch)
    defer = True
    try:
        while True:  # PTX first; ptxas only for the one that fits
            gpu = emit_ptx(compiled, arch, options, stages, defer)
            if gpu.shared <= limit:
                break
            if defer and gpu.staging_bytes:  # the same PTX without: nothing to give back
                defer = False
            elif stages > 1:
                stages, defer = stages - 1, True
            else:
                break  # the launch says it does not fit
        gpu.assemble()
    except _C.CompilationError as e:
        raise compilation_error(str(e)) from None
    if stages != options["num_stages"]:
        key = (compiled.name, options["num_stages"], arch)
        if key not in _warned_stages:
            _warned_stages.add(key)
            warnings.warn(
                f"{compiled.name}: num_stages={options['num_stages']} needs more shared memory "
                f"than {arch} has ({limit} bytes); compiled with num_stages={stages}",
                stacklevel=3)
    return gpu


@functools.lru_cache(maxsize=None)
def _compile_gpu_version():
    """A hash of compile_gpu's code and emit_ptx's: what they choose (stages, TMA
    stores' own tiles, the options passed on) is in the cached kernel, so a changed
    choice is a new key."""
    return _C.hash_hex(marshal.dumps((compile_gpu.__code__, emit_ptx.__code__)))


def gpu_kernel(kernel, compiled, specs, globals_read, arch, options):
    """compile_gpu through the disk cache: read back when stored, else compiled
    and stored. Only kernels with a cubin are stored: re-emitting PTX for the
    driver's JIT costs a few milliseconds, and a cubin is what ptxas costs."""
    if not _C.cache_dir():
        return compile_gpu(compiled, arch, options)
    key = cache.gpu_kernel_key(kernel, compiled, specs, globals_read, arch,
                               {**options, "compile_gpu": _compile_gpu_version()})
    gpu = _C.load_gpu_kernel(key)
    if gpu is not None:
        return gpu
    gpu = compile_gpu(compiled, arch, options)
    if gpu.cubin:
        _C.store_gpu_kernel(key, gpu)
    return gpu


class _Asm(dict):
    """``kernel.asm``: the texts of a compiled kernel by name, as Triton's dict.
    Those named in `lazy` (name -> function giving the text) are made on first
    use: the GPU IR is printed again from the kernel only when someone reads it."""

    def __init__(self, texts, lazy):
        super().__init__(texts)
        self._lazy = lazy

    def __missing__(self, key):
        make = self._lazy.pop(key, None)
        if make is None:
            raise KeyError(key)
        self[key] = text = make()
        return text

    def _all(self):
        for key in list(self._lazy):
            self[key]  # noqa: B018  (made and kept)
        return self

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self._lazy

    def get(self, key, default=None):
        return self[key] if key in self else default

    def keys(self):
        return dict.keys(self._all())

    def values(self):
        return dict.values(self._all())

    def items(self):
        return dict.items(self._all())

    def __iter__(self):
        return dict.__iter__(self._all())

    def __len__(self):
        return dict.__len__(self) + len(self._lazy)

    def copy(self):
        return dict(self._all())

    def __eq__(self, other):
        return dict.__eq__(self._all(), other._all() if isinstance(other, _Asm) else other)

    __hash__ = None

    def __repr__(self):
        return dict.__repr__(self._all())


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
        self.asm = _Asm({"tileir": compiled.ir}, {"tileir-sema": lambda: compiled.ir_after_sema})
        self.metadata = types.SimpleNamespace(
            name=compiled.name, num_warps=options["num_warps"], num_stages=options["num_stages"],
            shared=0, backend="cpu", target="cpu", num_ctas=1, debug=options["debug"],
            tensor_maps=[],
            launch_pdl=bool(options["launch_pdl"]),
            launch_cooperative_grid=bool(options["launch_cooperative_grid"]),
        )
        self.n_regs = 0
        self.n_spills = 0
        self.compile_ms = compiled.compile_ms
        self.globals_read = []  # (JITFunction, name, value) the kernel was compiled with
        self.function = None
        if gpu is not None:
            self.asm._lazy["tilegpu"] = functools.partial(compiled.gpu_ir, gpu)
            self.asm["ptx"] = gpu.ptx
            if gpu.cubin:
                self.asm["cubin"] = gpu.cubin
            self.metadata.backend = "cuda"
            self.metadata.target = gpu.arch
            self.metadata.shared = gpu.shared
            # TMA: the tensor maps the launcher encodes from host descriptors
            self.metadata.tensor_maps = gpu.tensor_maps
            self.metadata.num_stages = gpu.num_stages
            # the warps it launches with: a warp-specialized kernel's producers too
            self.metadata.num_warps = gpu.num_threads // 32
            self.n_regs = max(gpu.n_regs, 0)
            self.n_spills = gpu.n_spills
            if not gpu.from_cache:  # else its times are those of the process that compiled it
                self.compile_ms = compiled.compile_ms + gpu.emit_ms + gpu.assemble_ms

    def _init_handles(self, device=None):
        """Loads the module on the device (Triton's name for it); sets n_regs."""
        if self.gpu is None or self.function is not None:
            return
        if device is None:
            device = CudaDriver().get_current_device()
        self.gpu.load(device)
        self.n_regs = max(self.gpu.n_regs, 0)
        self.function = self.gpu

    def __getitem__(self, grid):
        """``compiled[grid](*args)``: launches this specialization directly, with
        its runtime arguments, or with all the kernel's arguments in order (the
        constexprs too, as Triton's launcher takes them; those are skipped)."""
        def launch(*args, stream=None):
            return launch_compiled(self, grid, args, stream)
        return launch

    def runtime_args(self, args):
        """The arguments of a direct launch that the kernel takes at run time."""
        if len(args) == len(self.spec):
            return [a for a, s in zip(args, self.spec) if s[0] != "constexpr"]
        wanted = sum(1 for s in self.spec if s[0] != "constexpr")
        if len(args) != wanted:
            raise TypeError(
                f"{self.name}: a compiled kernel takes its {wanted} runtime arguments or all "
                f"{len(self.spec)} arguments, got {len(args)}")
        return list(args)

    def globals_unchanged(self):
        for fn, name, value in self.globals_read:
            found, now = fn._lookup(name)
            if _args.is_constexpr(now):
                now = now.value
            if not found or _args._hashable(now) != value:
                return False
        return True



def _descriptor_spec(name, type_string, divisible):
    """A host TensorDescriptor argument typed 'tensordesc<fp16[64, 64]>'. As Triton
    assumes for TMA descriptors, the last stride is 1 and the others are multiples
    of 16 bytes; `divisible` marks sizes and strides as multiples of 16 elements."""
    match = re.fullmatch(r"tensordesc<(\w+)\[([\d,\s]+)\]>", type_string.replace(" ", ""))
    if not match or match.group(1) not in _TYPE_NAMES:
        raise ValueError(f"argument '{name}': unknown descriptor type {type_string!r}")
    block = tuple(int(b) for b in match.group(2).split(","))
    rank = len(block)
    if divisible:
        sixteen = (16,) * (2 * rank - 1) + (1,)
    else:  # (Triton's TensorDescriptor holds no other: TMA takes no other)
        stride = _args.tma_stride_divisor(_TYPE_NAMES[match.group(1)])
        sixteen = (1,) * rank + (stride,) * (rank - 1) + (1,)
    unit = (False,) * (rank - 1) + (True,)
    return ("desc", _TYPE_NAMES[match.group(1)], 16, block, "zero", sixteen, unit)


def _spec(name, type_string, divisible):
    if type_string.startswith("tensordesc<"):
        return _descriptor_spec(name, type_string, divisible)
    if type_string.startswith("*"):
        elem = type_string[1:]
        if elem not in _TYPE_NAMES:
            raise ValueError(f"argument '{name}': unknown pointer type {type_string!r}")
        return ("ptr", _TYPE_NAMES[elem], 16)
    if type_string in ("fp32", "fp64", "fp16", "bf16"):
        return ("float", "f32")
    if type_string == "i1":
        return ("bool",)
    if type_string not in _TYPE_NAMES:
        raise ValueError(f"argument '{name}': unknown type {type_string!r}")
    return ("int", _TYPE_NAMES[type_string], 16 if divisible else 1)


class ASTSource:
    """A kernel and its specialization, as Triton's ``compile`` takes them:
    `signature` maps each argument to a type string ('*fp32', 'i32', 'fp32',
    'constexpr'); `constexprs` gives values by name or by position ((i,) keys);
    `attrs` ({(i,): [["tt.divisibility", 16]]}) marks arguments divisible by 16."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        names = fn.arg_names
        self.signature = {(names[k] if isinstance(k, int) else k): v
                          for k, v in dict(signature).items()}
        self.constexprs = {}
        for key, value in dict(constexprs or {}).items():
            if isinstance(key, tuple):
                if len(key) != 1:
                    raise ValueError(f"constexpr inside a tuple argument ({key}) is not supported")
                key = key[0]
            self.constexprs[names[key] if isinstance(key, int) else key] = value
        self.divisible_by_16 = set()
        for key, values in dict(attrs or {}).items():
            index = key[0] if isinstance(key, tuple) else key
            name = names[index] if isinstance(index, int) else index
            for attr in values:
                if attr[0] == "tt.divisibility" and attr[1] % 16 == 0:
                    self.divisible_by_16.add(name)
        self.name = fn.__name__


def _target_name(target):
    """Our target name ("sm_90a", "cpu") for a GPUTarget, a string or None."""
    if target is None:
        driver = CudaDriver()
        if not driver.is_active():
            return "cpu"
        target = driver.get_current_target()
    if isinstance(target, GPUTarget):
        if target.backend == "cpu":
            return "cpu"
        if target.backend != "cuda":
            raise ValueError(f"tilec compiles for CUDA and the CPU, not for {target.backend!r}")
        return sm_arch(target.arch)
    return str(target)


def make_backend(target):
    """The backend compiler for a GPUTarget."""
    if CUDABackend.supports_target(target):
        return CUDABackend(target)
    raise RuntimeError(f"tilec has no backend for {target}")


def compile(kernel, signature=None, constexprs=None, target="sm_90a", num_warps=4,
            num_stages=3, enable_fp_fusion=True, debug=False, divisible_by_16=(), maxnreg=None,
            launch_pdl=False, launch_cooperative_grid=False, warp_specialize_loops=False,
            options=None):
    """Compiles a @jit `kernel` for `target` ("sm_80", "sm_90a", "cpu", or a GPUTarget).

    `signature` maps each runtime argument to Triton's type string ('*fp32', 'i32',
    'fp32', ...); `constexprs` gives the constexpr arguments. Pointers are taken as
    16-byte aligned; integers named in `divisible_by_16` as multiples of 16.
    Triton's form, ``compile(ASTSource(fn, signature, constexprs, attrs),
    target=GPUTarget(...), options={...})``, is taken too.
    """
    if isinstance(kernel, ASTSource):
        source = kernel
        return compile(source.fn, source.signature, source.constexprs,
                       target=_target_name(target) if not isinstance(target, str) else target,
                       divisible_by_16=source.divisible_by_16,
                       **{k: v for k, v in dict(options or {}).items()
                          if k in DEFAULT_GPU_OPTIONS})
    target = _target_name(target) if not isinstance(target, str) else target
    signature = dict(signature or {})
    constexprs = dict(constexprs or {})
    specs = []
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            specs.append(("constexpr", _args._hashable(constexprs[name])))
        elif name in signature and signature[name] != "constexpr":
            specs.append(_spec(name, signature[name], name in divisible_by_16))
        elif kernel.params[i].default is not kernel.params[i].empty:
            specs.append(("constexpr", _args._hashable(kernel.params[i].default)))
        elif name in signature:
            raise ValueError(f"argument '{name}' is constexpr: give its value in constexprs")
        else:
            raise ValueError(f"argument '{name}' needs a type in signature or a value in constexprs")
    specs = tuple(specs)
    compiled, log = kernel._compile_ir(specs, target)
    options = {"num_warps": num_warps, "num_stages": num_stages,
               "enable_fp_fusion": enable_fp_fusion, "debug": debug, "maxnreg": maxnreg,
               "launch_pdl": launch_pdl, "launch_cooperative_grid": launch_cooperative_grid,
               "warp_specialize_loops": warp_specialize_loops}
    gpu = None
    if target != "cpu":
        gpu = gpu_kernel(kernel, compiled, specs, log, target, options)
    out = CompiledKernel(compiled, specs, gpu, options)
    out.globals_read = log
    return out


def launch_compiled(kernel, grid, args, stream):
    """Launches a CompiledKernel returned by warmup or compile, on the current device."""
    if kernel.gpu is None:
        raise RuntimeError(f"'{kernel.name}' was compiled for the CPU; launch it through its @jit")
    driver = CudaDriver()
    device = driver.get_current_device()
    runtime = _args.flatten_runtime(kernel.runtime_args(args))
    grid = _args.normalize_grid(kernel.name, grid, {})
    if stream is None:
        stream = driver.get_current_stream(device)
    kernel.gpu.launch(grid, runtime, int(stream), device)
    return kernel
