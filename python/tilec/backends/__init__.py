"""``triton.backends``: the backends tilec compiles for, by name, each with its
compiler and driver classes (``backends["nvidia"].compiler``, ``.driver``)."""

from dataclasses import dataclass

from . import compiler, driver  # noqa: F401
from .compiler import BaseBackend, GPUTarget  # noqa: F401
from .driver import DriverBase  # noqa: F401
from .nvidia import compiler as _nvidia_compiler, driver as _nvidia_driver


@dataclass(frozen=True)
class Backend:
    compiler: type = None
    driver: type = None


backends = {"nvidia": Backend(_nvidia_compiler.CUDABackend, _nvidia_driver.CudaDriver)}
