"""``triton.backends.nvidia``: CUDA GPUs, through PTX that tilec emits itself."""

from . import compiler, driver  # noqa: F401
