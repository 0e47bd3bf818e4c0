"""``libdevice``: the CUDA math library functions a kernel may call."""

from ...math import *  # noqa: F401,F403
