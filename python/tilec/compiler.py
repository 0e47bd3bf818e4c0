"""Compiling without launching: ``tilec.compile(kernel, signature=..., constexprs=...,
target=...)`` gives the Tile IR, PTX and cubin of a kernel, with or without a GPU."""

import warnings

from . import _C
from .cache import gpu_kernel
from .errors import CompilationError

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


def compile_gpu(compiled, arch, options):
    """PTX (and a cubin where ptxas or nvJitLink is found) for a compiled kernel.

    When the pipeline's shared memory at `num_stages` does not fit the target,
    the kernel is compiled with fewer stages (and a one-time warning) rather
    than failing: kernels tuned on bigger cards still run."""
    stages = options["num_stages"]
    limit = max_shared_memory(arch)
    try:
        while stages > 1:
            probe = compiled.to_gpu(arch, options["num_warps"], stages, options["enable_fp_fusion"],
                                    options["debug"], assemble=False,
                                    maxnreg=options.get("maxnreg") or 0)
            if probe.shared <= limit:
                break
            stages -= 1
        gpu = compiled.to_gpu(arch, options["num_warps"], stages, options["enable_fp_fusion"],
                              options["debug"], maxnreg=options.get("maxnreg") or 0)
    except _C.CompilationError as e:
        raise CompilationError(str(e)) from None
    if stages != options["num_stages"]:
        key = (compiled.name, options["num_stages"], arch)
        if key not in _warned_stages:
            _warned_stages.add(key)
            warnings.warn(
                f"{compiled.name}: num_stages={options['num_stages']} needs more shared memory "
                f"than {arch} has ({limit} bytes); compiled with num_stages={stages}",
                stacklevel=3)
    return gpu


def _spec(name, type_string, divisible):
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


def compile(kernel, signature=None, constexprs=None, target="sm_90a", num_warps=4,
            num_stages=3, enable_fp_fusion=True, debug=False, divisible_by_16=(), maxnreg=None):
    """Compiles `kernel` (a @jit function) for `target` ("sm_80", "sm_90a", or "cpu").

    `signature` maps each runtime argument to Triton's type string ('*fp32', 'i32',
    'fp32', ...); `constexprs` gives the constexpr arguments. Pointers are taken as
    16-byte aligned; integers named in `divisible_by_16` as multiples of 16.
    """
    from .jit import CompiledKernel
    signature = dict(signature or {})
    constexprs = dict(constexprs or {})
    specs = []
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            from ._args import _hashable
            specs.append(("constexpr", _hashable(constexprs[name])))
        elif name in signature:
            if signature[name] == "constexpr":
                raise ValueError(f"argument '{name}' is constexpr: give its value in constexprs")
            specs.append(_spec(name, signature[name], name in divisible_by_16))
        elif kernel.params[i].default is not kernel.params[i].empty:
            from ._args import _hashable
            specs.append(("constexpr", _hashable(kernel.params[i].default)))
        else:
            raise ValueError(f"argument '{name}' needs a type in signature or a value in constexprs")
    specs = tuple(specs)
    compiled, log = kernel._compile_ir(specs, target)
    options = {"num_warps": num_warps, "num_stages": num_stages,
               "enable_fp_fusion": enable_fp_fusion, "debug": debug, "maxnreg": maxnreg}
    gpu = None
    if target != "cpu":
        gpu = gpu_kernel(kernel, compiled, specs, log, target, options)
    out = CompiledKernel(compiled, specs, gpu, options)
    out.globals_read = log
    return out
