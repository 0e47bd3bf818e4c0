"""``import tilec.compat`` makes ``import triton`` and every ``triton.X`` module
give tilec's ``tilec.X``, so existing Triton code runs unchanged.

tilec's package mirrors Triton's module names (language, runtime, compiler,
backends, testing, tools, knobs, profiler), so the alias is a name mapping, not
a list of patched names: an import finder answers ``triton.X`` with the module
``tilec.X`` itself (``triton.runtime.jit is tilec.runtime.jit``). A ``triton.X``
that tilec has no module for is an ImportError that names the alias.

`triton` alone is a thin module in front of tilec: every name is tilec's
(assignments go there too), except `__version__`, the Triton release whose API
tilec follows (TRITON_VERSION), so that libraries checking
``triton.__version__`` accept it while ``tilec.__version__`` stays tilec's own.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

import tilec

# The Triton release whose Python API tilec follows.
TRITON_VERSION = "3.6.0"


class _TopModule(types.ModuleType):
    """`triton`: tilec's names, Triton's version."""

    def __init__(self):
        super().__init__("triton", tilec.__doc__)
        spec = importlib.machinery.ModuleSpec("triton", None, is_package=True)
        spec.submodule_search_locations = []
        own = {"__file__": tilec.__file__, "__path__": [], "__package__": "triton",
               "__spec__": spec, "__version__": TRITON_VERSION}
        for key, value in own.items():
            super().__setattr__(key, value)

    def __getattr__(self, name):  # what is not the module's own comes from tilec
        if name == "__all__":  # for `from triton import *`
            return [n for n in dir(tilec) if not n.startswith("_")]
        return getattr(tilec, name)

    def __setattr__(self, name, value):
        # An assignment (a test's monkeypatch) changes tilec, as when `triton`
        # was tilec itself; the import system binding a submodule changes nothing.
        if name.startswith("__") or name in self.__dict__:
            super().__setattr__(name, value)
        elif isinstance(value, types.ModuleType) and value.__name__.startswith("tilec."):
            if getattr(tilec, name, None) is not value:  # triton._C is tilec._native, not tilec._C
                super().__setattr__(name, value)
        else:
            setattr(tilec, name, value)

    def __delattr__(self, name):
        if name in self.__dict__:
            super().__delattr__(name)
        else:
            delattr(tilec, name)

    def __repr__(self):
        return "<module 'triton' (tilec, through tilec.compat)>"

    def __dir__(self):
        return sorted(set(dir(tilec)) | set(self.__dict__))


triton_module = _TopModule()


class _ExistingModule(importlib.abc.Loader):
    """Loads `triton.X` as the already imported `tilec.X`."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the alias's spec; keep tilec's


class _TritonFinder(importlib.abc.MetaPathFinder):
    """Answers `triton.X` imports with `tilec.X`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        if fullname == "triton":
            module = triton_module
        else:
            name = "tilec" + fullname[len("triton"):]
            if fullname == "triton._C" or fullname.startswith("triton._C."):
                name = "tilec._native" + fullname[len("triton._C"):]  # tilec._C is our extension
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as e:
                if e.name != name:
                    raise
                raise ModuleNotFoundError(
                    f"No module named '{fullname}': `import tilec.compat` makes `triton` tilec, "
                    f"and tilec has no module '{name}'", name=fullname) from None
        spec = importlib.machinery.ModuleSpec(fullname, _ExistingModule(module),
                                              is_package=hasattr(module, "__path__"))
        return spec


_finder = _TritonFinder()


def install():
    """Points `triton` and its modules at tilec's, replacing any imported before."""
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    sys.modules["triton"] = triton_module


install()


def uninstall():
    """Undoes install(): `triton` imports find the real Triton again, if installed."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
