"""``@tilec.autotune`` and ``@tilec.heuristics``: wrappers around a @jit kernel
that choose its meta-parameters at launch, as Triton's do.

An Autotuner times each of its configs the first time it meets a new tuning
key (the values of the `key` arguments and the dtypes of the tensor
arguments), keeps the fastest for that key, and launches with it from then
on. Heuristics computes meta-parameters from the arguments at every launch.
Both stack, on each other too, in either order.

Where tilec differs from Triton:
- A meta-parameter that the caller passes and a config sets too is not an
  error ("Conflicting meta-parameters" in Triton): the tuned value is used,
  with one warning per kernel.
- A user `pre_hook` (`post_hook`) runs besides the reset_to_zero and
  restore_value handling, not instead of it.
- A tensor named in `key` contributes its shape and dtype (Triton uses the
  tensor object, so a new tensor is a new key).
- Timing runs of kernels on the CPU backend are timed by the wall clock.
- On the GPU, every config is compiled before the first is timed, on several
  threads: ptxas runs without the GIL, so a cold tuning waits about as long
  as its slowest config takes to assemble, not as long as all of them.
- On sm_90a, the three fastest configs of each warp count are timed once
  more warp-specialized (`warp_specialize_loops`, tilec's launch option),
  where the kernel asks for no warp specialization itself and can have it;
  such a variant wins where it is faster, and shows in `configs_timings` and
  `best_config`.
- On the GPU with the default timer, the configs within 10% of the fastest
  (at most four) are timed a second time, in the reverse order, and ranked by
  the mean of their two medians: a card's clocks drift over a tuning run, and
  a config timed after others can come out 5-10% off what it runs at alone.
"""

import concurrent.futures
import functools
import hashlib
import inspect
import json
import os
import time
import warnings

from .. import _C, _args, testing
from ..backends.nvidia.driver import CudaDriver, arch_of
from ..compiler.cache import compiler_version
from ..errors import CompilationError, TritonError
from .errors import OutOfResources
from .jit import JITFunction, KernelInterface
from .launch import interpreting

# Errors that rule a config out instead of failing the launch, as in Triton.
_CONFIG_ERRORS = (OutOfResources, CompilationError)

# How many of the fastest configs of each warp count are timed warp-specialized
# too (sm_90a).
_WARP_SPECIALIZED_TRIES = 3

# The configs timed a second time on the GPU: those within _CONTENDER_MARGIN of
# the fastest, at most _CONTENDERS of them.
_CONTENDER_MARGIN = 1.10
_CONTENDERS = 4

# The quantiles a timing run reports: median first, then the 20th and 80th percentiles.
_QUANTILES = (0.5, 0.2, 0.8)


class AutotunerError(TritonError, RuntimeError):
    """No config of an autotuned kernel can run (all pruned away, or all failed)."""


class Config:
    """One configuration for the autotuner to try: meta-parameters (`kwargs`,
    passed to the kernel as keyword arguments) and launch options."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None, warp_specialize_loops=False):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        # tilec's own: warp-specialize the kernel's outermost pipelined loops (sm_90a)
        self.warp_specialize_loops = bool(warp_specialize_loops)

    def all_kwargs(self):
        """The meta-parameters and the launch options (maxnreg, warp_specialize_loops
        when set)."""
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                   "num_stages": self.num_stages, "maxnreg": self.maxnreg,
                   "warp_specialize_loops": self.warp_specialize_loops or None}
        return {**self.kwargs, **{k: v for k, v in options.items() if v is not None}}

    def _fields(self):
        fields = (*self.kwargs.items(), ("num_warps", self.num_warps),
                  ("num_ctas", self.num_ctas), ("num_stages", self.num_stages),
                  ("maxnreg", self.maxnreg))
        return fields + ((("warp_specialize_loops", True),) if self.warp_specialize_loops
                         else ())

    def warp_specialized(self):
        """This config with warp_specialize_loops."""
        return Config(self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg,
                      self.pre_hook, warp_specialize_loops=True)

    def __str__(self):
        return ", ".join(f"{k}: {v}" for k, v in self._fields())

    def __repr__(self):
        hook = f", pre_hook={self.pre_hook!r}" if self.pre_hook else ""
        ws = ", warp_specialize_loops=True" if self.warp_specialize_loops else ""
        return (f"Config({self.kwargs!r}, num_warps={self.num_warps}, "
                f"num_stages={self.num_stages}, num_ctas={self.num_ctas}, "
                f"maxnreg={self.maxnreg}{hook}{ws})")

    def __hash__(self):
        return hash((self._fields(), self.pre_hook))

    def __eq__(self, other):
        if not isinstance(other, Config):
            return NotImplemented
        return (self._fields(), self.pre_hook) == (other._fields(), other.pre_hook)


# --- what the wrappers share


def _jit_function(fn):
    """The @jit kernel at the bottom of a stack of wrappers."""
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def _on_threads(calls):
    """The results of `calls` (functions of no arguments), in order, each run on a
    thread of a pool as wide as the machine: compiles for the GPU, whose ptxas
    runs without the GIL. An exception in one is raised here."""
    if not calls:
        return []
    with concurrent.futures.ThreadPoolExecutor(min(len(calls), os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda call: call(), calls))


def _takes_keyword(hook, name):
    try:
        params = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind == p.VAR_KEYWORD for p in params)


def _print_enabled():
    """TRITON_PRINT_AUTOTUNING=1 or TILEC_PRINT_AUTOTUNING=1."""
    return any(os.environ.get(name, "0") not in ("", "0")
               for name in ("TILEC_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING"))


class _KernelWrapper(KernelInterface):
    """What Autotuner and Heuristics have in common: launched like a @jit kernel."""

    def _init_wrapper(self, fn, arg_names):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.base_fn = _jit_function(fn).fn  # the Python function, as in Triton
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__
        self._defaults = {p.name: p.default for p in _jit_function(fn).params
                          if p.default is not inspect.Parameter.empty}

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"'{self.__name__}' is a @jit kernel: launch it with "
                           f"{self.__name__}[grid](...)")


# --- tensors handled between timing runs


def _zero(tensor):
    if hasattr(tensor, "zero_"):
        tensor.zero_()
    else:
        tensor.fill(0)  # numpy, CuPy


def _copy(tensor):
    return tensor.clone() if hasattr(tensor, "clone") else tensor.copy()


def _restore(tensor, saved):
    if hasattr(tensor, "copy_"):
        tensor.copy_(saved)
    else:
        tensor[...] = saved


# --- the tuning key


def _key_part(value):
    """A hashable, printable stand-in for one argument in the tuning key."""
    if _args.is_constexpr(value):
        value = value.value
    if _args.is_tensor(value):
        return (tuple(int(d) for d in value.shape), str(value.dtype))
    if isinstance(value, list):
        return tuple(_key_part(v) for v in value)
    if _args.as_dtype(value) is not None:
        return str(_args.as_dtype(value))
    return value


class Autotuner(_KernelWrapper):
    """A kernel whose meta-parameters are chosen by timing `configs`. Made by
    ``@tilec.autotune``; see there for the arguments."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None, cache_results=False):
        self._init_wrapper(fn, arg_names)
        self.configs = list(configs) if configs else [Config({})]
        self.keys = [key] if isinstance(key, str) else list(key)
        # A key that names no argument is left out of the tuning key, as in Triton.
        for name in list(reset_to_zero or ()) + list(restore_value or ()):
            if name not in self.arg_names:
                raise ValueError(f"autotune of '{self.__name__}': '{name}' is not an argument "
                                 f"of the kernel (it has {', '.join(self.arg_names)})")
        self.cache = {}  # tuning key -> the fastest Config
        self.configs_timings = None  # Config -> timing of the last tuning
        self.bench_time = None  # seconds the last tuning took
        self.best_config = None
        self.nargs = None  # the positional arguments by name, during a launch
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune = prune_configs_by or {}
        unknown = set(prune) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise ValueError(f"autotune of '{self.__name__}': prune_configs_by takes "
                             f"perf_model, top_k and early_config_prune, not {sorted(unknown)}")
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self.user_do_bench = do_bench
        self.cache_results = cache_results
        self._warned_conflicts = False
        self._restore_copies = {}

    # --- launching

    def run(self, *args, grid, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        try:
            tuned = False
            key = None
            if len(self.configs) > 1:
                key = self._tuning_key(args, kwargs)
                if key not in self.cache:
                    tuned = self._tune(key, args, grid, kwargs)
                config = self.cache[key]
            else:
                config = self.configs[0]
            self.best_config = config
            if tuned and _print_enabled():
                print(f"tilec autotuning for function {self.__name__},\nwith key as {key},\n"
                      f"finished after {self.bench_time:.2f}s,\nbest config selected: {config};")
            return self._launch(args, grid, kwargs, config)
        finally:
            self.nargs = None

    def warmup(self, *args, **kwargs):
        """Compiles the kernel for every config (after pruning) without running it,
        for the GPU on a thread each; returns the compiled kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            merged = [self._merge(args, kwargs, c)[:2] for c in self.prune_configs(kwargs)]
            if isinstance(self.fn, Autotuner) or self._device(args, kwargs) != "cuda":
                return [self.fn.warmup(*a, **k) for a, k in merged]
            return _on_threads([self.fn._warmup_job(*a, **k) for a, k in merged])
        finally:
            self.nargs = None

    def _merge(self, args, kwargs, config):
        """The arguments of a launch with `config`: its values win over the caller's.
        Returns (args, kwargs, names the caller passed that the config overrides)."""
        tuned = config.all_kwargs()
        conflicts = [k for k in kwargs if k in tuned]
        first = next((i for i, name in enumerate(self.arg_names[:len(args)]) if name in tuned),
                     None)
        if first is not None:  # the caller passed a tuned parameter by position
            conflicts += [n for n in self.arg_names[first:len(args)] if n in tuned]
            kwargs = {**dict(zip(self.arg_names[first:], args[first:])), **kwargs}
            args = args[:first]
        return args, {**kwargs, **tuned}, conflicts

    def _launch(self, args, grid, kwargs, config):
        args, kwargs, conflicts = self._merge(args, kwargs, config)
        if conflicts and not self._warned_conflicts:
            self._warned_conflicts = True
            warnings.warn(
                f"{self.__name__}: {', '.join(conflicts)} passed to a launch of an autotuned "
                "kernel whose configs set it; the tuned value is used (Triton raises "
                "'Conflicting meta-parameters' here)", stacklevel=4)
        if config.pre_hook is not None:
            config.pre_hook(self._all_args(args, kwargs))
        return self.fn.run(*args, grid=grid, **kwargs)

    def _all_args(self, args, kwargs):
        return {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}

    # --- tuning

    def _tuning_key(self, args, kwargs):
        values = {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}
        key = [_key_part(values[name]) for name in self.keys if name in values]
        key += [str(v.dtype) for name, v in values.items()
                if name in self.arg_names and _args.is_tensor(v)]
        return tuple(key)

    def prune_configs(self, kwargs):
        """The configs left to time: after `early_config_prune`, then the `top_k`
        best by `perf_model`."""
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(self.configs, self.nargs, **kwargs))
            if not configs:
                # Triton's words, which code that catches it compares; the kernel in a note
                error = AutotunerError("Autotuner error: No valid autotuner configs after "
                                       "pruning. `early_config_prune` should return at least "
                                       "one config.")
                error.add_note(f"in autotuned kernel {self.__name__}")
                raise error
        if self.perf_model is None:
            return configs
        top_k = self.configs_top_k
        if isinstance(top_k, float) and top_k <= 1.0:
            top_k = max(1, int(len(configs) * top_k))
        elif not isinstance(top_k, int) or isinstance(top_k, bool):
            raise TypeError(f"{self.__name__}: prune_configs_by's top_k must be a float <= 1.0 "
                            f"or an int, got {top_k!r}")
        if len(configs) <= top_k:
            return configs
        estimates = {c: self.perf_model(**{**self.nargs, **kwargs, **c.all_kwargs()})
                     for c in configs}
        return sorted(configs, key=estimates.__getitem__)[:top_k]

    def _tune(self, key, args, grid, kwargs):
        """Finds the fastest config for `key` and caches it. Returns whether it
        timed anything (False: one config left, or the result read from disk)."""
        configs = self.prune_configs(kwargs)
        if len(configs) == 1:
            self.cache[key] = configs[0]
            return False
        disk = _DiskCache(self, key, configs, self._device(args, kwargs)) \
            if self.cache_results else None
        timings = disk.load() if disk else None
        if timings is not None:
            self.configs_timings = timings
            self.cache[key] = min(timings, key=timings.get)
            return False
        start = time.perf_counter()
        self._compile_all(args, kwargs, configs)
        failures = {}
        timings = {c: self._bench(args, grid, kwargs, c, failures) for c in configs}
        for variant in self._warp_specialized_variants(args, kwargs, timings, failures):
            timings[variant] = self._bench(args, grid, kwargs, variant, failures)
        self._retime_contenders(args, grid, kwargs, timings, failures)
        self.bench_time = time.perf_counter() - start
        best = min(timings, key=timings.get)
        if best in failures:
            lines = "".join(f"\n  {c}: {type(e).__name__}: {e}" for c, e in failures.items())
            raise AutotunerError(f"{self.__name__}: every autotuning config failed:{lines}")
        self.configs_timings = timings
        self.cache[key] = best
        self._reset(self._all_args(*self._merge(args, kwargs, best)[:2]))
        if disk:
            disk.store(timings)
        return True

    def _retime_contenders(self, args, grid, kwargs, timings, failures):
        """Times the configs close to the fastest once more, slowest first, and
        gives each the mean of its two timings (each quantile): the clocks of a
        card drift over a tuning run, so one pass can rank near-equal configs
        by when they ran. GPU timing with the default timer only (a user's
        do_bench is called once per config, as in Triton)."""
        if (self.user_do_bench is not None or isinstance(self.fn, Autotuner)
                or self._device(args, kwargs) != "cuda"):
            return
        ranked = sorted((c for c in timings if c not in failures), key=lambda c: timings[c][0])
        if len(ranked) < 2:
            return
        best = timings[ranked[0]][0]
        contenders = [c for c in ranked[:_CONTENDERS] if timings[c][0] <= best * _CONTENDER_MARGIN]
        if len(contenders) < 2:
            return
        for config in reversed(contenders):
            again = self._bench(args, grid, kwargs, config, failures)
            timings[config] = [(a + b) / 2 for a, b in zip(timings[config], again)]

    def _warp_specialized_variants(self, args, kwargs, timings, failures):
        """On sm_90a, the _WARP_SPECIALIZED_TRIES fastest configs of each warp
        count again with warp_specialize_loops, each where the kernel it compiles
        to differs (its loops can be warp-specialized, and none asks for it
        already). Each warp count: warp specialization changes which is best
        (8 warps give two consumer warpgroups, often slow without a producer)."""
        if isinstance(self.fn, Autotuner) or self._device(args, kwargs) != "cuda":
            return []
        ranked = sorted((c for c in timings if c not in failures and not c.warp_specialize_loops),
                        key=timings.get)
        tried = {}
        for config in ranked:
            tried.setdefault(config.num_warps, [])
            if len(tried[config.num_warps]) < _WARP_SPECIALIZED_TRIES:
                tried[config.num_warps].append(config)
        ranked = [c for c in ranked if c in tried[c.num_warps]]
        variants = []
        for config in ranked:
            variant = config.warp_specialized()
            try:
                # Only a loop whose tiles arrive by TMA can get a producer.
                if "pipeline_tma = 1" not in self._compiled(args, kwargs, config).asm.get(
                        "tilegpu", ""):
                    continue
                kernel = self._compiled(args, kwargs, variant)
            except Exception:  # noqa: BLE001  (the config as it is stays)
                continue
            if getattr(kernel.metadata, "target", None) != "sm_90a":
                return []  # (nothing is warp-specialized elsewhere)
            # A warp-specialized kernel has a producer warpgroup more.
            if getattr(kernel.metadata, "num_warps", config.num_warps) != config.num_warps:
                variants.append(variant)
        return variants

    def _compiled(self, args, kwargs, config):
        """The kernel `config` compiles to (already compiled: from the cache)."""
        call_args, call_kwargs = self._hooked_arguments(args, kwargs, config)
        return self.fn.warmup(*call_args, **call_kwargs)

    def _hooked_arguments(self, args, kwargs, config):
        """The arguments of a launch with `config`, once its pre_hook ran on them
        (tutorial 09's sets its descriptors' block shape, which a compile reads)."""
        call_args, call_kwargs, _ = self._merge(args, kwargs, config)
        if config.pre_hook is not None:
            config.pre_hook(self._all_args(call_args, call_kwargs))
        return call_args, call_kwargs

    def _compile_all(self, args, kwargs, configs):
        """Compiles the configs for the GPU at once, each on a thread, before any
        is timed. Each config's arguments are read here, after its pre_hook
        (tutorial 09's sets its descriptors' block shape). A config that fails
        to compile fails again when it is timed, which is where it is reported."""
        if isinstance(self.fn, Autotuner) or self._device(args, kwargs) != "cuda":
            return  # an inner autotuner compiles its own; the CPU backend compiles in ms
        jobs = []
        for config in configs:
            try:
                call_args, call_kwargs = self._hooked_arguments(args, kwargs, config)
                jobs.append(self.fn._warmup_job(*call_args, **call_kwargs))
            except Exception:  # noqa: BLE001  (reported by _bench)
                pass

        def quietly(job):
            try:
                job()
            except Exception:  # noqa: BLE001  (reported by _bench)
                pass

        _on_threads([functools.partial(quietly, job) for job in jobs])

    def _device(self, args, kwargs):
        """Where the kernel runs: 'cuda' when a tensor argument is on a GPU, else 'cpu'.
        Tensors inside host TensorDescriptors and tuples count: a kernel taking only
        descriptors timed by the CPU's clock would time its launches, not its runs."""
        for value in (*args, *kwargs.values()):
            for tensor in _args.tensors_in(value):
                if _args.device_of(tensor).startswith("cuda"):
                    return "cpu" if interpreting() else "cuda"
        return "cpu"

    def _do_bench(self, device):
        if self.user_do_bench is not None:
            return self.user_do_bench
        if self.use_cuda_graph:
            rep = self.num_reps if self.num_reps is not None else 100
            return lambda fn, quantiles: testing.do_bench_cudagraph(
                fn, rep=rep, quantiles=quantiles, device=device)
        warmup = self.num_warmups if self.num_warmups is not None else 25
        rep = self.num_reps if self.num_reps is not None else 100
        return lambda fn, quantiles: testing.do_bench(
            fn, warmup=warmup, rep=rep, quantiles=quantiles, device=device)

    def _bench(self, args, grid, kwargs, config, failures):
        """The timing of `config` (median, 20th, 80th percentile in ms), inf when
        it does not compile or does not fit; its error goes to `failures`."""
        if _print_enabled():
            print(f"Autotuning kernel {self.__name__} with config {config}")
        call_args, call_kwargs, _ = self._merge(args, kwargs, config)
        all_args = self._all_args(call_args, call_kwargs)

        def kernel_call():
            if config.pre_hook is not None:
                config.pre_hook(all_args)
            self._pre_hook(all_args)
            try:
                self.fn.run(*call_args, grid=grid, **call_kwargs)
            except Exception as e:
                self._post_hook(all_args, e)
                raise
            self._post_hook(all_args, None)

        try:
            timing = self._do_bench(self._device(args, kwargs))(kernel_call, quantiles=_QUANTILES)
        except _CONFIG_ERRORS as e:
            if _print_enabled():
                print(f"Autotuning failed with {e}")
            failures[config] = e
            return [float("inf")] * len(_QUANTILES)
        return list(timing) if isinstance(timing, (list, tuple)) else [float(timing)]

    # --- around each timing run

    def _reset(self, all_args):
        """Zeroes the reset_to_zero tensors (before the launch that follows tuning)."""
        for name in self.reset_to_zero:
            if all_args.get(name) is not None:
                _zero(all_args[name])
        hook = self.user_pre_hook
        if hook is not None and _takes_keyword(hook, "reset_only"):
            hook(all_args, reset_only=True)

    def _pre_hook(self, all_args):
        for name in self.reset_to_zero:
            if all_args.get(name) is not None:
                _zero(all_args[name])
        self._restore_copies = {name: _copy(all_args[name]) for name in self.restore_value
                                if all_args.get(name) is not None}
        if self.user_pre_hook is not None:
            self.user_pre_hook(all_args)

    def _post_hook(self, all_args, exception):
        try:
            if self.user_post_hook is not None:
                self.user_post_hook(all_args, exception=exception)
        finally:
            for name, saved in self._restore_copies.items():
                _restore(all_args[name], saved)
            self._restore_copies = {}


class _DiskCache:
    """Tuning results kept on disk (``cache_results=True``), in
    ``<cache dir>/autotune/``: one JSON file per kernel source, tuning key,
    configs and device. A file that cannot be read is ignored (and rewritten)."""

    def __init__(self, tuner, key, configs, device):
        self.configs = configs
        self.directory = _C.cache_dir()
        # Hooks cannot be told apart on disk, so configs with one are always timed.
        if not self.directory or any(c.pre_hook for c in configs):
            self.path = None
            return
        kernel = _jit_function(tuner.fn)
        parts = ["tilec-autotune", compiler_version(), _device_identity(device), str(key)]
        parts += [fn.src for fn in kernel.reached_functions()]
        parts += [repr(c) for c in configs]
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
        self.name = kernel.__name__
        self.path = os.path.join(self.directory, "autotune", f"{self.name[:100]}-{digest}.json")
        self.key = key

    def load(self):
        """{Config: timing} read back, or None (no file, or a damaged one)."""
        if self.path is None or not os.path.exists(self.path):
            return None
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            # (and the warp-specialized variants tuning timed besides)
            known = self.configs + [c.warp_specialized() for c in self.configs]
            described = [repr(c) for c in known]
            timings = {}
            for entry in data["configs_timings"]:
                config = known[described.index(entry["config"])]
                timings[config] = [float(t) for t in entry["timing"]]
            if any(c not in timings for c in self.configs) or not all(timings.values()):
                return None
            return timings
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, timings):
        if self.path is None:
            return
        data = {"kernel": self.name, "key": [str(k) for k in self.key],
                "configs_timings": [{"config": repr(c), "timing": t}
                                    for c, t in timings.items()]}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)  # readers see the old file or the new, never half
        except OSError as e:
            warnings.warn(f"autotuning results not saved in {self.path}: {e}")
            if os.path.exists(tmp):
                os.remove(tmp)


def _device_identity(device):
    """The device the timings were taken on: 'cpu', or the GPU's name and arch."""
    if device != "cuda":
        return "cpu"
    driver = CudaDriver()
    index = driver.get_current_device()
    name = ""
    interface = driver.get_device_interface()  # torch.cuda, when torch is there
    if interface is not None:
        name = interface.get_device_name(index)
    return f"cuda|{name}|{arch_of(index)}"


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """Decorates a @jit kernel (or a @heuristics one) to choose among `configs`
    (tilec.Config) by timing them: the first launch with a new value of the
    arguments named in `key` (or new tensor dtypes) runs every config, and the
    fastest is used for that key from then on.

    - prune_configs_by: {'early_config_prune': f(configs, named_args, **kwargs)
      -> configs, 'perf_model': f(**all_args) -> estimated time, 'top_k': how
      many (an int, or a fraction of them as a float <= 1.0) of the best
      estimates to time}.
    - reset_to_zero: arguments zeroed before each timing run (and before the
      launch that follows tuning); restore_value: arguments saved before each
      timing run and restored after it, so tuning does not change them.
    - pre_hook(args) and post_hook(args, exception): called around each timing
      run, with the arguments by name (post_hook gets the error or None).
    - warmup, rep: milliseconds of warm-up and of timed runs (tilec.testing.do_bench);
      use_cuda_graph times with do_bench_cudagraph; do_bench(fn, quantiles)
      replaces the timing function.
    - cache_results: keep the result per key on disk, in $TILEC_CACHE_DIR/autotune,
      for later processes.

    TRITON_PRINT_AUTOTUNING=1 (or TILEC_PRINT_AUTOTUNING=1) prints each tuning's
    best config and how long it took.
    """

    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results)

    return decorator


class Heuristics(_KernelWrapper):
    """A kernel some of whose arguments are computed from the others at each
    launch. Made by ``@tilec.heuristics``."""

    def __init__(self, fn, arg_names, values):
        self._init_wrapper(fn, arg_names)
        self.values = dict(values)

    def _with_values(self, args, kwargs):
        kwargs = dict(kwargs)
        for name, heuristic in self.values.items():
            all_args = {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}
            kwargs[name] = heuristic(all_args)
        return kwargs

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*args, grid=grid, **self._with_values(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self._with_values(args, kwargs))

    def _warmup_job(self, *args, **kwargs):
        return self.fn._warmup_job(*args, **self._with_values(args, kwargs))


def heuristics(values):
    """Decorates a kernel so that the arguments named in `values` are computed at
    each launch: ``values[name](args)`` gets every argument by name (those
    computed before it included) and returns the value, passed as a keyword.

        @tilec.heuristics({"BLOCK": lambda args: tilec.next_power_of_2(args["n"])})
        @tilec.jit
        def kernel(x_ptr, n, BLOCK: tl.constexpr): ...
    """

    def decorator(fn):
        return Heuristics(fn, fn.arg_names, values)

    return decorator

