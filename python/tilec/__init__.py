"""tilec: a compiler and runtime for Triton-style tile kernels.

``import tilec as triton; import tilec.language as tl`` runs Triton kernels
unchanged on NVIDIA GPUs and on the CPU.
"""

from . import language  # noqa: F401
from . import runtime  # noqa: F401
from .compiler import compile  # noqa: F401
from .runtime.errors import OutOfResources  # noqa: F401
from .errors import CompilationError, KernelError  # noqa: F401
from .jit import JITFunction, jit  # noqa: F401
from .autotuner import Config, autotune, heuristics  # noqa: F401
from . import testing  # noqa: F401

__version__ = "0.1.0"


def cdiv(x, y):
    """Ceiling division: the number of blocks of size ``y`` that cover ``x``."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of 2 that is >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
