"""``tl.math``: the math functions a kernel may call (see tilec.language)."""


def _kernel_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tl.math.{name}() can be called only inside a @tilec.jit kernel")

    fn.__name__ = name
    return fn


for _name in ("exp exp2 log log2 sqrt sqrt_rn rsqrt abs sin cos floor ceil erf sigmoid fma "
              "div_rn fdiv umulhi cdiv pow atan2 tanh").split():
    globals()[_name] = _kernel_only(_name)
del _name
