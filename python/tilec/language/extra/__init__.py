"""``tl.extra``: vendor libraries (``tl.extra.cuda.libdevice``)."""

from . import cuda  # noqa: F401
from .cuda import libdevice  # noqa: F401
