"""``tl.extra.cuda``."""

from . import libdevice  # noqa: F401
