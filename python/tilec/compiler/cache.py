"""The on-disk cache of compiled GPU kernels: the key of a kernel (the compile
that looks there first is compiler.gpu_kernel). A second process compiling the
same kernel reads its PTX and cubin back instead of running ptxas.

The key is a hash of everything the cubin depends on, so an entry is never
stale: the compiler build, the assembler, the kernel's source and its @jit
callees' (with where they lie in their files, which debug line info holds),
the constexpr globals they read, the specialization, the options, the target,
and the Tile IR the front end made of it all. The bytes on disk and their
checks are in src/runtime/disk_cache.h and gpu_kernel.h.
"""

import functools
import os

from .. import _C
from .._args import as_dtype
from .._version import __version__


@functools.lru_cache(maxsize=None)
def compiler_version():
    """tilec's version and a hash of the _C extension's bytes, read once per
    process: a rebuilt compiler never reads what an older build wrote."""
    with open(_C.__file__, "rb") as f:
        return f"{__version__}+{_C.hash_hex(f.read())}"


@functools.lru_cache(maxsize=None)
def _assembler_identity(forced, ptxas):
    if not ptxas:
        return f"{forced}|no ptxas"  # nvJitLink or the driver's JIT
    try:
        st = os.stat(ptxas)
    except OSError:
        return f"{forced}|{ptxas}"
    return f"{forced}|{ptxas}|{st.st_size}|{st.st_mtime_ns}"


def assembler_identity():
    """Which assembler makes the cubin: TILEC_ASSEMBLER, and ptxas's path, size
    and modification time (a new CUDA install is a new ptxas)."""
    return _assembler_identity(os.environ.get("TILEC_ASSEMBLER", "").lower(), _C.find_ptxas())


def canonical(value):
    """A text for a constexpr value, a spec or an option that is the same in
    every process and tells apart what the compiler tells apart (1, 1.0, True)."""
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(canonical(v) for v in value) + ")"
    if as_dtype(value) is not None:
        return f"dtype:{as_dtype(value)._tilec_dtype}"
    return f"{type(value).__name__}:{value!r}"


def gpu_kernel_key(kernel, compiled, specs, globals_read, arch, options):
    """The disk cache key of `kernel` (a JITFunction) compiled with `specs` for
    `arch`: 32 hex digits."""
    parts = [
        "tilec-gpu-kernel",
        compiler_version(),
        assembler_identity(),
        f"arch={arch}",
        "options=" + canonical(tuple(sorted(options.items()))),
        "specs=" + canonical(specs),
    ]
    for fn in kernel.reached_functions():
        parts.append(f"source {fn.__module__}.{fn.__name__} {fn.filename}:{fn.first_line}")
        parts.append(fn.src)
    for fn, name, value in globals_read:
        parts.append(f"global {fn.__module__}.{fn.__name__}.{name}={canonical(value)}")
    parts.append(compiled.ir)
    # Each part's length first, so that no two different lists join to one text.
    return _C.hash_hex("".join(f"{len(p)}:{p}\n" for p in parts))
