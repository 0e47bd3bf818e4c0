"""``triton._C.libtriton.nvidia``."""

from . import cublas  # noqa: F401
