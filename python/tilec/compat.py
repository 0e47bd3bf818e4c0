"""``import tilec.compat`` makes ``import triton``, ``import triton.language``,
``import triton.testing`` (and the other modules below) give tilec, so existing
Triton code runs unchanged.

`triton` is not tilec's module itself but a thin module in front of it
(`triton_module`): every name is looked up in tilec (and assigned there), except
`__version__`, which is Triton's version that tilec follows (TRITON_VERSION),
so that libraries checking ``triton.__version__ >= "3"`` accept it, while
``tilec.__version__`` stays tilec's own. Hence ``triton is not tilec``, but
``triton.jit is tilec.jit``. `triton.runtime` is such a module in front of
tilec.runtime, with the autotuner's names added (``triton.runtime.Autotuner``,
``triton.runtime.autotuner``), as in Triton.
"""

import sys
import types

import tilec
import tilec.autotuner
import tilec.compiler
import tilec.language
import tilec.runtime
import tilec.testing
import tilec.tools
import tilec.tools.tensor_descriptor

# The Triton release whose Python API tilec follows.
TRITON_VERSION = "3.6.0"


class _Alias(types.ModuleType):
    """A module named `name` whose names are those of `target` (a tilec module),
    plus its own `extra` ones."""

    def __init__(self, name, target, extra):
        super().__init__(name, target.__doc__)
        own = {"__file__": target.__file__, "__path__": target.__path__,
               "__spec__": target.__spec__, "__package__": name, "_target": target, **extra}
        for key, value in own.items():
            super().__setattr__(key, value)

    def __getattr__(self, name):  # what is not the module's own comes from its target
        target = self.__dict__["_target"]
        if name == "__all__":  # for `from triton import *`
            return [n for n in dir(target) if not n.startswith("_")]
        return getattr(target, name)

    def __setattr__(self, name, value):
        # An assignment (a test's monkeypatch) changes tilec, as when `triton`
        # was tilec itself; but a submodule bound by `import triton.x` stays here.
        if name.startswith("__") or name in self.__dict__ or (
                isinstance(value, types.ModuleType) and value.__name__.startswith("triton.")):
            super().__setattr__(name, value)
        else:
            setattr(self._target, name, value)

    def __delattr__(self, name):
        if name in self.__dict__:
            super().__delattr__(name)
        else:
            delattr(self._target, name)

    def __repr__(self):
        return f"<module '{self.__name__}' (tilec's '{self._target.__name__}')>"

    def __dir__(self):
        return sorted(set(dir(self._target)) | set(self.__dict__) - {"_target"})


# `triton.runtime` has the autotuner's names too, as Triton's does.
_runtime = _Alias("triton.runtime", tilec.runtime, {
    "autotuner": tilec.autotuner, "Autotuner": tilec.autotuner.Autotuner,
    "Heuristics": tilec.autotuner.Heuristics, "Config": tilec.Config,
    "autotune": tilec.autotune, "heuristics": tilec.heuristics,
    "JITFunction": tilec.JITFunction,
})

triton_module = _Alias("triton", tilec, {"__version__": TRITON_VERSION, "runtime": _runtime})

_ALIASES = {
    "triton": triton_module,
    "triton.language": tilec.language,
    "triton.runtime": _runtime,
    "triton.runtime.driver": tilec.runtime.driver,
    "triton.runtime.autotuner": tilec.autotuner,
    "triton.compiler": tilec.compiler,
    "triton.testing": tilec.testing,
    "triton.tools": tilec.tools,
    "triton.tools.tensor_descriptor": tilec.tools.tensor_descriptor,
    "triton.language.math": tilec.language.math,
    "triton.language.extra": tilec.language.extra,
    "triton.language.extra.cuda": tilec.language.extra.cuda,
    "triton.language.extra.cuda.libdevice": tilec.language.extra.cuda.libdevice,
}


def install():
    """Points the `triton` modules at tilec's, replacing any imported before."""
    sys.modules.update(_ALIASES)


install()
