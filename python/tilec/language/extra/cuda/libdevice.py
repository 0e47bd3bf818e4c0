"""``tl.extra.cuda.libdevice``: the CUDA math library functions a kernel may
call, which tilec writes in the kernel language (tilec.language.extra.libdevice)."""

from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __all__  # noqa: F401
