"""``tl.extra``: vendor libraries. ``tl.extra.libdevice`` and
``tl.extra.cuda.libdevice`` are the same functions (see libdevice.py)."""

from . import cuda, libdevice  # noqa: F401
