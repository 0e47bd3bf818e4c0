"""What code imports from Triton's compiled extension, ``triton._C`` (the alias
maps ``triton._C`` here; tilec's own extension is ``tilec._C``)."""

from . import libtriton  # noqa: F401
