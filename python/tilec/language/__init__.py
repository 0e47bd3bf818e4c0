"""``triton.language``: the kernel language. Dtypes, ``constexpr`` and the
built-in functions come from `core`; `random` and `standard` add helpers written
in the kernel language itself; `math`, `extra` and `target_info` are the
submodules Triton has."""

from .core import *  # noqa: F401,F403
from .core import _KernelOnly  # noqa: F401
from . import core  # noqa: F401
from . import math  # noqa: F401
from . import extra  # noqa: F401
from . import target_info  # noqa: F401

# Random numbers and the standard library's helpers written in the kernel language.
from . import random  # noqa: E402
from .random import (  # noqa: E402,F401
    pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x, randn,
    randn4x, uint_to_uniform_float)
from . import standard  # noqa: E402
from .standard import dot_scaled, swizzle2d  # noqa: E402,F401
