"""tilec: a compiler and runtime for Triton-style tile kernels.

``import tilec as triton; import tilec.language as tl`` runs Triton kernels
unchanged on NVIDIA GPUs and on the CPU. The package mirrors Triton's modules
(language, runtime, compiler, backends, testing, tools, knobs); imports run one
way, from the language and backends up to runtime.
"""

from ._version import __version__  # noqa: F401
from . import knobs  # noqa: F401
from . import language  # noqa: F401
from . import runtime  # noqa: F401
from . import compiler  # noqa: F401
from . import backends  # noqa: F401
from . import testing  # noqa: F401
from . import tools  # noqa: F401
from .compiler import compile  # noqa: F401
from .runtime.errors import OutOfResources  # noqa: F401
from .errors import CompilationError, KernelError, TritonError  # noqa: F401
from .runtime.jit import (  # noqa: F401
    JITFunction, KernelInterface, MockTensor, TensorWrapper, jit, reinterpret)
from .runtime.errors import InterpreterError  # noqa: F401
from .runtime.autotuner import Config, autotune, heuristics  # noqa: F401
from .runtime._allocation import set_allocator  # noqa: F401
from .language.core import constexpr_function  # noqa: F401


def cdiv(x, y):
    """Ceiling division: the number of blocks of size ``y`` that cover ``x``."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of 2 that is >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def must_use_result(x, s=True):
    """Marks a @jit function whose result must be used: ``@must_use_result`` or
    ``@must_use_result("why")``. tilec records the mark (``fn.must_use_result``)
    but does not yet refuse a kernel that drops the result."""
    if isinstance(x, str):
        return lambda fn: must_use_result(fn, x)
    try:
        x.must_use_result = s
    except AttributeError:
        pass
    return x
