"""``triton.knobs``: settings read from the environment unless set in code, in
groups (``knobs.cache.dir``, ``knobs.runtime.launch_enter_hook``, ...), as
Triton has them. A group's ``scope()`` restores it on exit; with
``knobs.propagate_env`` a setting is written to its environment variable too.

What tilec reads: ``cache.dir`` (the disk cache; TILEC_CACHE_DIR wins over
TRITON_CACHE_DIR), ``runtime.interpret``, ``runtime.launch_enter_hook`` and
``launch_exit_hook`` (called around every launch, with the kernel's metadata),
``autotuning.print``, ``language.default_fp_fusion`` and ``nvidia.ptxas``.
"""

import contextlib
import copy
import os

propagate_env = False


def _parse_bool(text):
    return text.strip().lower() in ("1", "true", "on", "yes")


class env_knob:
    """A setting of a group: its value is what was set in code, else the first of
    `keys` found in the environment, parsed, else `default`."""

    def __init__(self, keys, default=None, parse=str):
        self.keys = (keys,) if isinstance(keys, str) else tuple(keys)
        self.key = self.keys[-1] if self.keys else None  # the name Triton gives it
        self.default = default
        self.parse = parse

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if self.name in obj._set:
            return obj._set[self.name]
        for key in self.keys:
            if key in os.environ:
                return self.parse(os.environ[key])
        return self.default

    def __set__(self, obj, value):
        obj._set[self.name] = value
        if propagate_env and not callable(value):
            if value is None:
                os.environ.pop(self.key, None)
            else:
                os.environ[self.key] = str(int(value) if isinstance(value, bool) else value)

    def __delete__(self, obj):
        obj._set.pop(self.name, None)


def env_str(keys, default=None):
    return env_knob(keys, default, str)


def env_bool(keys, default=False):
    return env_knob(keys, default, _parse_bool)


def env_int(keys, default=0):
    return env_knob(keys, default, int)


class hook_knob(env_knob):
    """A function set in code (no environment variable)."""

    def __init__(self):
        super().__init__((), None, None)
        self.key = None

    def __set__(self, obj, value):
        obj._set[self.name] = value


class base_knobs:
    """A group of settings."""

    def __init__(self):
        self._set = {}

    @property
    def knob_descriptors(self):
        return {name: k for cls in type(self).__mro__ for name, k in vars(cls).items()
                if isinstance(k, env_knob) and not isinstance(k, hook_knob)}

    def copy(self):
        out = copy.copy(self)
        out._set = dict(self._set)
        return out

    def reset(self):
        self._set = {}
        return self

    @contextlib.contextmanager
    def scope(self):
        saved = dict(self._set)
        try:
            yield self
        finally:
            self._set = saved


class cache_knobs(base_knobs):
    home_dir = env_str("TRITON_HOME", os.path.expanduser("~"))
    dump_dir = env_str("TRITON_DUMP_DIR")
    override_dir = env_str("TRITON_OVERRIDE_DIR")

    @property
    def dir(self):
        """The disk cache of compiled kernels."""
        if "dir" in self._set:
            return self._set["dir"]
        return os.environ.get("TILEC_CACHE_DIR") or os.environ.get("TRITON_CACHE_DIR") or \
            os.path.join(os.path.expanduser("~"), ".cache", "tilec")

    @dir.setter
    def dir(self, value):
        self._set["dir"] = value
        os.environ["TILEC_CACHE_DIR"] = value  # the C++ runtime reads it from there

    @contextlib.contextmanager
    def scope(self):
        saved, env = dict(self._set), os.environ.get("TILEC_CACHE_DIR")
        try:
            yield self
        finally:
            self._set = saved
            if env is None:
                os.environ.pop("TILEC_CACHE_DIR", None)
            else:
                os.environ["TILEC_CACHE_DIR"] = env


class compilation_knobs(base_knobs):
    override = env_bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = env_bool(("TILEC_DUMP_IR", "MLIR_ENABLE_DUMP"))
    always_compile = env_bool("TRITON_ALWAYS_COMPILE")
    disable_line_info = env_bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = env_bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")


class autotuning_knobs(base_knobs):
    cache = env_bool("TRITON_CACHE_AUTOTUNING")
    print = env_bool(("TILEC_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING"))


class runtime_knobs(base_knobs):
    interpret = env_bool(("TILEC_INTERPRET", "TRITON_INTERPRET"))
    debug = env_bool("TRITON_DEBUG")
    override_arch = env_str("TRITON_OVERRIDE_ARCH")
    launch_enter_hook = hook_knob()
    launch_exit_hook = hook_knob()
    kernel_load_start_hook = hook_knob()
    kernel_load_end_hook = hook_knob()
    kernel_unload_hook = hook_knob()
    jit_cache_hook = hook_knob()
    jit_post_compile_hook = hook_knob()
    add_stages_inspection_hook = hook_knob()


class language_knobs(base_knobs):
    fp32_default = env_str("TRITON_F32_DEFAULT")
    default_fp_fusion = env_bool("TRITON_DEFAULT_FP_FUSION", True)


class nvidia_knobs(base_knobs):
    ptxas = env_str(("TILEC_PTXAS", "TRITON_PTXAS_PATH"))
    cuobjdump = env_str("TRITON_CUOBJDUMP_PATH")
    nvdisasm = env_str("TRITON_NVDISASM_PATH")
    libdevice_path = env_str("TRITON_LIBDEVICE_PATH")
    dump_ptxas_log = env_bool("TRITON_DUMP_PTXAS_LOG")
    mock_ptx_version = env_str("TRITON_MOCK_PTX_VERSION")


class amd_knobs(base_knobs):
    pass


class build_knobs(base_knobs):
    cc = env_str("CC")


class proton_knobs(base_knobs):
    cupti_dir = env_str("TRITON_CUPTI_LIB_PATH")


cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
build = build_knobs()
proton = proton_knobs()
