"""``triton.runtime``: the driver, kernels (`jit`), their launch, the
autotuner and the cache, as Triton lays them out."""

from . import errors  # noqa: F401
from .errors import InterpreterError, OutOfResources  # noqa: F401
from .driver import driver  # noqa: F401
from . import jit as _jit_module
from .jit import JITFunction, KernelInterface, MockTensor, TensorWrapper, reinterpret  # noqa: F401
from . import autotuner  # noqa: F401
from .autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from . import cache  # noqa: F401

jit = _jit_module  # `triton.runtime.jit` is the module, as in Triton
del _jit_module
