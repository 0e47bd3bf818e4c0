"""``triton._C.libtriton``: the vendor libraries Triton's tutorials compare with."""

from . import nvidia  # noqa: F401
