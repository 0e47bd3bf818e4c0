"""``tl.math``: the math functions a kernel may call (see tilec.language).

The names below are compiled as built-ins ("math.exp", ...): these stubs, being
in this module, are how the compiler knows them when a kernel imports them by
value. The other libdevice functions (erfc, lgamma, j0, ...) are re-exported
from tilec.language.extra.libdevice, where they are written in the kernel language."""

from .extra import libdevice as _libdevice


def _kernel_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tl.math.{name}() can be called only inside a @tilec.jit kernel")

    fn.__name__ = name
    return fn


for _name in ("exp exp2 log log2 sqrt sqrt_rn rsqrt abs sin cos floor ceil erf sigmoid fma "
              "div_rn fdiv umulhi cdiv pow atan2 tanh").split():
    globals()[_name] = _kernel_only(_name)

for _name in _libdevice.__all__:
    if _name not in globals():
        globals()[_name] = getattr(_libdevice, _name)
del _name
