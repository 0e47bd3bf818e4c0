"""@tilec.autotune and @tilec.heuristics on the CPU backend: which config wins,
when tuning runs, the hooks around timing runs, pruning, failing configs,
stacking, the on-disk results, and the `triton` names under tilec.compat."""

import glob
import os
import sys
import warnings

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.runtime.autotuner import Autotuner, AutotunerError, Heuristics


@tilec.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, REPEAT: tl.constexpr = 1):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    for _ in range(REPEAT):  # REPEAT > 1: the same work again, a slow config
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


def grid(n):
    return lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)


class CountingBench:
    """A do_bench that runs each timing call once; the time of a config is
    looked up by the BLOCK its grid lambda saw (`times`), else 1.0."""

    def __init__(self, times=None):
        self.times = times or {}
        self.calls = 0
        self.block = None

    def grid(self, n):
        def g(meta):
            self.block = meta["BLOCK"]
            return (tilec.cdiv(n, meta["BLOCK"]),)
        return g

    def __call__(self, fn, quantiles):
        self.calls += 1
        fn()
        t = self.times.get(self.block, 1.0)
        return [t, t, t]


def counted(configs, key=("n",), **kwargs):
    bench = CountingBench(kwargs.pop("times", None))
    kernel = tilec.autotune(configs, key=list(key), do_bench=bench, **kwargs)(add_one_kernel)
    return kernel, bench


BLOCKS = [tilec.Config({"BLOCK": 64}), tilec.Config({"BLOCK": 128}), tilec.Config({"BLOCK": 256})]


# --- Config


def test_config_str_kwargs_and_equality():
    c = tilec.Config({"BLOCK_SIZE": 128}, num_warps=8)
    assert str(c) == "BLOCK_SIZE: 128, num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None"
    assert c.kwargs == {"BLOCK_SIZE": 128}
    assert (c.num_warps, c.num_stages, c.num_ctas, c.maxnreg, c.pre_hook) == (8, 3, 1, None, None)
    assert c.all_kwargs() == {"BLOCK_SIZE": 128, "num_warps": 8, "num_ctas": 1, "num_stages": 3}
    assert tilec.Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert c == tilec.Config({"BLOCK_SIZE": 128}, num_warps=8)
    assert hash(c) == hash(tilec.Config({"BLOCK_SIZE": 128}, num_warps=8))
    assert c != tilec.Config({"BLOCK_SIZE": 128}, num_warps=4)
    assert "BLOCK_SIZE" in repr(c)


def test_a_warp_specialized_config_is_another_config():
    """tilec's warp_specialize_loops (the variant the autotuner times on sm_90a):
    a launch option of its own, printed only where set."""
    c = tilec.Config({"BLOCK_SIZE": 128}, num_warps=8, num_stages=2)
    ws = c.warp_specialized()
    assert ws.warp_specialize_loops and not c.warp_specialize_loops
    assert ws != c and hash(ws) != hash(c) and ws == c.warp_specialized()
    assert ws.all_kwargs() == {**c.all_kwargs(), "warp_specialize_loops": True}
    assert "warp_specialize_loops" not in str(c) + repr(c)
    assert str(ws).endswith("warp_specialize_loops: True")
    assert "warp_specialize_loops=True" in repr(ws)


# --- choosing a config


def test_picks_the_fastest_config_by_timing_it():
    # The slow configs do 256x the work, and each config is timed for 10 ms: a
    # busy machine (CI, xdist workers beside it) must not swap the order (at 64x,
    # 8 workers on the GPU machine's 16 cores once did).
    configs = [tilec.Config({"BLOCK": 16, "REPEAT": 256}), tilec.Config({"BLOCK": 1024}),
               tilec.Config({"BLOCK": 32, "REPEAT": 256})]
    kernel = tilec.autotune(configs, key=["n"], warmup=2, rep=10)(add_one_kernel)
    n = 1 << 14
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[grid(n)](x, out, n)
    np.testing.assert_array_equal(out, x + 1)
    assert kernel.best_config is configs[1]
    assert kernel.cache == {(n, "float32", "float32"): configs[1]}
    timings = kernel.configs_timings
    assert set(timings) == set(configs)
    # The ratio swings with the machine's load (at 64x the work it came to 1.3x
    # under 8 test workers on 16 cores), so only the order is checked.
    assert timings[configs[0]][0] > timings[configs[1]][0]
    assert kernel.bench_time > 0


def test_tunes_once_per_key():
    kernel, bench = counted(BLOCKS)
    x = np.ones(300, np.float32)
    out = np.zeros_like(x)
    for _ in range(3):
        kernel[bench.grid(200)](x, out, 200)
    assert bench.calls == len(BLOCKS)
    kernel[bench.grid(300)](x, out, 300)  # a new value of `n`
    assert bench.calls == 2 * len(BLOCKS)
    kernel[bench.grid(200)](x, out, 200)
    x64, out64 = x.astype(np.float64), out.astype(np.float64)
    kernel[bench.grid(200)](x64, out64, 200)  # a new dtype
    assert bench.calls == 3 * len(BLOCKS)
    assert set(kernel.cache) == {(200, "float32", "float32"), (300, "float32", "float32"),
                                 (200, "float64", "float64")}
    np.testing.assert_array_equal(out64, x64 + 1)


def test_cached_config_is_the_one_launched():
    kernel, bench = counted(BLOCKS, times={64: 3.0, 128: 1.0, 256: 2.0})
    x = np.ones(1000, np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(1000)](x, out, 1000)
    assert kernel.best_config.kwargs == {"BLOCK": 128}
    assert bench.block == 128  # the launch after tuning
    bench.block = None
    kernel[bench.grid(1000)](x, out, 1000)
    assert bench.block == 128 and bench.calls == 3


def test_single_config_is_not_timed():
    kernel, bench = counted([tilec.Config({"BLOCK": 128})])
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(100)](x, out, 100)
    assert bench.calls == 0 and kernel.best_config.kwargs == {"BLOCK": 128}
    np.testing.assert_array_equal(out, x + 1)


class FakeCudaTensor:
    """Enough of a torch tensor on cuda:0 for the autotuner to ask where it lives."""
    dtype = "float32"
    device = "cuda:0"
    shape = (64, 64)

    def data_ptr(self):
        return 0x10000

    def stride(self):
        return (64, 1)


def test_tensors_inside_descriptors_and_tuples_say_where_tuning_times():
    """Timing on the GPU is by CUDA events; a kernel whose tensors only come
    inside host TensorDescriptors (or tuples) runs there too, and timing its
    launches by the CPU's clock measured queued work, not its runs."""
    from tilec.tools.tensor_descriptor import TensorDescriptor
    tuner = tilec.autotune(BLOCKS, key=["n"])(add_one_kernel)
    desc = TensorDescriptor.from_tensor(FakeCudaTensor(), [16, 16])
    assert tuner._device((desc, 64), {}) == "cuda"
    assert tuner._device(((1, FakeCudaTensor()),), {}) == "cuda"
    assert tuner._device((), {"x_ptr": desc}) == "cuda"
    assert tuner._device((np.zeros(4), 64), {}) == "cpu"


def test_autotuner_attributes():
    kernel, _ = counted(BLOCKS)
    assert isinstance(kernel, Autotuner) and kernel.fn is add_one_kernel
    assert kernel.arg_names == ["x_ptr", "out_ptr", "n", "BLOCK", "REPEAT"]
    assert kernel.configs == BLOCKS and kernel.cache == {} and kernel.best_config is None
    seen = {}
    x = np.ones(10, np.float32)
    kernel.run(x, np.zeros_like(x), 10, grid=lambda meta: seen.update(kernel.nargs) or (1,))
    assert seen["n"] == 10 and kernel.nargs is None
    with pytest.raises(ValueError, match="'m' is not an argument"):
        tilec.autotune(BLOCKS, key=["n"], reset_to_zero=["m"])(add_one_kernel)


def test_key_naming_no_argument_is_ignored():
    """As in Triton (tutorial 08 keys on a name its kernel lacks): left out of the key."""
    kernel, bench = counted(BLOCKS, key=["n", "no_such_argument"])
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[lambda meta: (tilec.cdiv(10, meta["BLOCK"]),)](x, out, 10)
    np.testing.assert_array_equal(out, x + 1)
    assert list(kernel.cache) == [(10, "float32", "float32")]


def test_tensor_in_key_is_keyed_by_shape_and_dtype():
    kernel, bench = counted(BLOCKS, key=["x_ptr"])
    x = np.ones(64, np.float32)
    kernel[bench.grid(64)](x, np.zeros_like(x), 64)
    kernel[bench.grid(64)](x.copy(), np.zeros_like(x), 64)  # another array, same shape
    assert bench.calls == len(BLOCKS)
    assert list(kernel.cache) == [(((64,), "float32"), "float32", "float32")]


# --- hooks and tensors around timing runs


@tilec.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m),
             mask=m)


def accumulating(**kwargs):
    bench = CountingBench()
    kernel = tilec.autotune(BLOCKS, key=["n"], do_bench=bench, **kwargs)(accumulate_kernel)
    return kernel, bench


def test_reset_to_zero():
    torch = pytest.importorskip("torch")
    kernel, bench = accumulating(reset_to_zero=["out_ptr"])
    x = torch.arange(500, dtype=torch.float32)
    out = torch.full((500,), 7.0)
    kernel[bench.grid(500)](x, out, 500)
    assert bench.calls == 3
    assert torch.equal(out, x)  # zeroed before each timing run and before the launch
    kernel[bench.grid(500)](x, out, 500)  # tuned: no more zeroing
    assert torch.equal(out, 2 * x)


def test_restore_value():
    kernel, bench = accumulating(restore_value=["out_ptr"])
    x = np.arange(500, dtype=np.float32)
    out = np.full(500, 7.0, np.float32)
    kernel[bench.grid(500)](x, out, 500)
    assert bench.calls == 3
    np.testing.assert_array_equal(out, x + 7)  # timing runs undone, the launch kept


def test_without_restore_timing_runs_accumulate():
    kernel, bench = accumulating()
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, x * 4)  # 3 timing runs and the launch


def test_pre_and_post_hooks_around_each_timing_run():
    calls = []

    def pre_hook(args):
        calls.append(("pre", args["n"], args["BLOCK"]))

    def post_hook(args, exception):
        calls.append(("post", args["n"], exception))

    kernel, bench = accumulating(pre_hook=pre_hook, post_hook=post_hook,
                                 restore_value=["out_ptr"])
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(100)](x, out, 100)
    assert calls == [("pre", 100, 64), ("post", 100, None), ("pre", 100, 128),
                     ("post", 100, None), ("pre", 100, 256), ("post", 100, None)]
    np.testing.assert_array_equal(out, x)  # restore_value works beside the user's hooks
    kernel[bench.grid(100)](x, out, 100)
    assert len(calls) == 6  # not around ordinary launches


def test_post_hook_gets_the_error():
    seen = []
    bad = tilec.Config({"BLOCK": 1000})  # not a power of 2: does not compile
    kernel = tilec.autotune([tilec.Config({"BLOCK": 64}), bad], key=["n"],
                            do_bench=CountingBench(),
                            post_hook=lambda args, exception: seen.append(exception))(
        add_one_kernel)
    x = np.ones(100, np.float32)
    kernel[grid(100)](x, np.zeros_like(x), 100)
    assert seen[0] is None and isinstance(seen[1], tilec.CompilationError)


def test_config_pre_hook_runs_before_every_launch_with_it():
    seen = []
    configs = [tilec.Config({"BLOCK": 64}, pre_hook=lambda args: seen.append(args["BLOCK"])),
               tilec.Config({"BLOCK": 128}, pre_hook=lambda args: seen.append(args["BLOCK"]))]
    kernel, bench = counted(configs, times={64: 2.0, 128: 1.0})
    x = np.ones(100, np.float32)
    kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    assert seen == [64, 128, 128]  # two timing runs, then the launch
    kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    assert seen == [64, 128, 128, 128]


# --- pruning


def test_early_config_prune():
    seen = {}

    def prune(configs, named_args, **kwargs):
        seen.update(named_args, **kwargs)
        return [c for c in configs if c.kwargs["BLOCK"] >= 128]

    kernel, bench = counted(BLOCKS, prune_configs_by={"early_config_prune": prune})
    x = np.ones(100, np.float32)
    kernel[bench.grid(100)](x, np.zeros_like(x), 100, REPEAT=1)
    assert seen["n"] == 100 and seen["REPEAT"] == 1
    assert set(kernel.configs_timings) == set(BLOCKS[1:]) and bench.calls == 2


def test_early_config_prune_leaving_nothing_is_an_error():
    kernel, bench = counted(BLOCKS, prune_configs_by={"early_config_prune": lambda c, a: []})
    x = np.ones(100, np.float32)
    with pytest.raises(tilec.TritonError, match="No valid autotuner configs after pruning") as info:
        kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    assert isinstance(info.value, AutotunerError)
    assert any(kernel.__name__ in note for note in info.value.__notes__)  # which kernel


@pytest.mark.parametrize("top_k, timed", [(2, [256, 128]), (0.34, [256]), (1.0, [64, 128, 256])])
def test_perf_model_and_top_k(top_k, timed):
    def perf_model(n, BLOCK, num_warps, **kwargs):  # bigger blocks estimated faster
        assert n == 100 and num_warps == 4
        return 1.0 / BLOCK

    kernel, bench = counted(BLOCKS, prune_configs_by={"perf_model": perf_model, "top_k": top_k})
    x = np.ones(100, np.float32)
    kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    if len(timed) == 1:  # one config left: launched untimed
        assert bench.calls == 0 and kernel.best_config.kwargs["BLOCK"] == timed[0]
    else:
        assert sorted(c.kwargs["BLOCK"] for c in kernel.configs_timings) == sorted(timed)


def test_top_k_must_be_a_number():
    kernel, bench = counted(BLOCKS, prune_configs_by={"perf_model": lambda **k: 1.0,
                                                      "top_k": "2"})
    x = np.ones(10, np.float32)
    with pytest.raises(TypeError, match="top_k"):
        kernel[bench.grid(10)](x, np.zeros_like(x), 10)


# --- configs that fail


def raise_out_of_resources(args):
    raise tilec.OutOfResources(300000, 232448, "shared memory")


def test_failing_configs_are_skipped():
    configs = [tilec.Config({"BLOCK": 1000}),  # does not compile
               tilec.Config({"BLOCK": 64}),
               tilec.Config({"BLOCK": 128}, pre_hook=raise_out_of_resources)]
    kernel, bench = counted(configs)
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(100)](x, out, 100)
    assert kernel.best_config is configs[1]
    assert kernel.configs_timings[configs[0]] == [float("inf")] * 3
    assert kernel.configs_timings[configs[2]] == [float("inf")] * 3
    np.testing.assert_array_equal(out, x + 1)


def test_every_config_failing_is_a_clear_error():
    configs = [tilec.Config({"BLOCK": 1000}),
               tilec.Config({"BLOCK": 64}, pre_hook=raise_out_of_resources)]
    kernel, bench = counted(configs)
    x = np.ones(100, np.float32)
    with pytest.raises(AutotunerError) as info:
        kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    message = str(info.value)
    assert "add_one_kernel: every autotuning config failed" in message
    assert "BLOCK: 1000" in message and "CompilationError" in message
    assert "OutOfResources: out of resource: shared memory" in message


def test_other_errors_are_not_swallowed():
    kernel, bench = counted(BLOCKS)
    x = np.ones(100, np.float32)
    with pytest.raises(tilec.KernelError):
        kernel[bench.grid(100)](x, np.zeros_like(x), 10_000)  # out of bounds


# --- meta-parameters passed by the caller


def test_conflicting_meta_parameter_is_overridden_with_one_warning():
    kernel, bench = counted(BLOCKS, times={64: 3.0, 128: 1.0, 256: 2.0})
    x = np.ones(1000, np.float32)
    out = np.zeros_like(x)
    with pytest.warns(UserWarning, match=r"add_one_kernel: BLOCK passed .* the tuned value is "
                                         r"used") as record:
        kernel[bench.grid(1000)](x, out, 1000, BLOCK=512)
    assert len(record) == 1
    assert bench.block == 128 and bench.calls == 3  # every config timed, the best launched
    np.testing.assert_array_equal(out, x + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel[bench.grid(1000)](x, out, 1000, BLOCK=512)  # warned once per kernel
        kernel[bench.grid(1000)](x, out, 1000, 512)  # by position too
    assert bench.block == 128


def test_conflicting_parameter_by_position():
    kernel, bench = counted(BLOCKS, times={64: 1.0, 128: 2.0, 256: 3.0})
    x = np.ones(1000, np.float32)
    out = np.zeros_like(x)
    with pytest.warns(UserWarning, match="BLOCK"):
        kernel[bench.grid(1000)](x, out, 1000, 512, 1)
    assert bench.block == 64
    np.testing.assert_array_equal(out, x + 1)


def test_launch_option_from_the_caller_is_overridden_too():
    kernel, bench = counted([tilec.Config({"BLOCK": 64}, num_warps=2),
                             tilec.Config({"BLOCK": 128}, num_warps=8)])
    x = np.ones(100, np.float32)
    with pytest.warns(UserWarning, match="num_warps"):
        kernel[bench.grid(100)](x, np.zeros_like(x), 100, num_warps=4)


def test_other_keyword_arguments_pass_through():
    kernel, bench = counted(BLOCKS)
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel[bench.grid(100)](x_ptr=x, out_ptr=out, n=100, REPEAT=2)
    np.testing.assert_array_equal(out, x + 1)



def test_amd_options_in_configs_and_launches_are_taken_and_ignored_as_triton_does():
    # Configs shared between vendors carry AMD's options; Triton ignores them on NVIDIA.
    kernel, bench = counted([tilec.Config({"BLOCK": 64, "matrix_instr_nonkdim": 16,
                                           "waves_per_eu": 2, "kpack": 2}, num_warps=4)])
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, x + 1)
    out[:] = 0
    add_one_kernel[grid(100)](x, out, 100, BLOCK=64, schedule_hint="attention",
                              allow_flush_denorm=True)
    np.testing.assert_array_equal(out, x + 1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_warp'"):
        add_one_kernel[grid(100)](x, out, 100, BLOCK=64, num_warp=4)  # a typo stays an error


# --- warmup


def test_warmup_compiles_every_config_without_running():
    kernel, bench = counted(BLOCKS)
    add_one_kernel.cache.clear()
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    compiled = kernel.warmup(x, out, 100, grid=(1,))
    assert len(compiled) == 3 and len(add_one_kernel.cache) == 3
    assert all("tileir" in k.asm for k in compiled)
    assert bench.calls == 0 and not out.any()


# --- heuristics


@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * factor)
    else:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)


def is_even(args):
    return args["n"] % args["BLOCK"] == 0


def test_heuristics_alone():
    seen = []

    def block(args):
        seen.append(dict(args))
        return tilec.next_power_of_2(args["n"]) // 4

    kernel = tilec.heuristics({"BLOCK": block, "EVEN": is_even})(scale_kernel)
    assert isinstance(kernel, Heuristics) and kernel.fn is scale_kernel
    for n in (64, 100):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros_like(x)
        blocks = []

        def grid(meta, n=n, blocks=blocks):
            blocks.append(meta["BLOCK"])
            return (tilec.cdiv(n, meta["BLOCK"]),)

        kernel[grid](x, out, n, 3.0)
        np.testing.assert_array_equal(out, x * 3)
        assert blocks == [tilec.next_power_of_2(n) // 4]
    assert seen[0]["n"] == 64 and seen[0]["factor"] == 3.0
    assert kernel.warmup(np.zeros(64, np.float32), np.zeros(64, np.float32), 64, 1.0,
                         grid=(1,)) is not None


def test_autotune_over_heuristics():
    bench = CountingBench({64: 2.0, 128: 1.0, 256: 3.0})
    kernel = tilec.autotune(BLOCKS, key=["n"], do_bench=bench)(
        tilec.heuristics({"EVEN": is_even})(scale_kernel))
    assert isinstance(kernel.fn, Heuristics) and kernel.base_fn is scale_kernel.fn
    for n in (512, 1000):  # EVEN computed from the BLOCK of each config
        x = np.arange(n, dtype=np.float32)
        out = np.zeros_like(x)
        kernel[bench.grid(n)](x, out, n, 2.0)
        np.testing.assert_array_equal(out, x * 2)
    assert kernel.best_config.kwargs == {"BLOCK": 128} and bench.calls == 6


def test_heuristics_over_autotune():
    bench = CountingBench({64: 2.0, 128: 3.0, 256: 1.0})
    kernel = tilec.heuristics({"EVEN": lambda args: args["n"] % 256 == 0})(
        tilec.autotune(BLOCKS, key=["n"], do_bench=bench)(scale_kernel))
    n = 1000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[bench.grid(n)](x, out, n, 0.5)
    np.testing.assert_array_equal(out, x * 0.5)
    assert kernel.fn.best_config.kwargs == {"BLOCK": 256}
    assert len(kernel.warmup(x, out, n, 0.5, grid=(1,))) == 3


# --- results kept on disk


def make_cached_kernel(bench):
    @tilec.autotune(BLOCKS, key=["n"], do_bench=bench, cache_results=True)
    @tilec.jit
    def cached_add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

    return cached_add_kernel


def test_cache_results_read_back_by_another_kernel_object(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    x = np.arange(300, dtype=np.float32)
    bench = CountingBench({64: 2.0, 128: 3.0, 256: 1.0})
    first = make_cached_kernel(bench)
    first[bench.grid(300)](x, np.zeros_like(x), 300)
    assert bench.calls == 3
    files = glob.glob(str(tmp_path / "autotune" / "cached_add_kernel-*.json"))
    assert len(files) == 1

    again = CountingBench()  # as in a later process: a new kernel object, nothing timed
    second = make_cached_kernel(again)
    out = np.zeros_like(x)
    second[again.grid(300)](x, out, 300)
    assert again.calls == 0 and second.best_config.kwargs == {"BLOCK": 256}
    assert again.block == 256
    np.testing.assert_array_equal(out, x * 2)

    third = make_cached_kernel(again)
    third[again.grid(200)](x, out, 200)  # another key: timed
    assert again.calls == 3
    assert len(glob.glob(str(tmp_path / "autotune" / "*.json"))) == 2


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"configs_timings": [{"config": 1}]}',
                                     b"[1, 2]", b'{"configs_timings": []}', b"\xff\xfe\x00"])
def test_damaged_cache_file_is_ignored(tmp_path, monkeypatch, garbage):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    x = np.arange(300, dtype=np.float32)
    bench = CountingBench({64: 2.0, 128: 3.0, 256: 1.0})
    make_cached_kernel(bench)[bench.grid(300)](x, np.zeros_like(x), 300)
    (path,) = glob.glob(str(tmp_path / "autotune" / "*.json"))
    with open(path, "wb") as f:
        f.write(garbage)
    again = CountingBench({64: 1.0})
    kernel = make_cached_kernel(again)
    kernel[again.grid(300)](x, np.zeros_like(x), 300)
    assert again.calls == 3 and kernel.best_config.kwargs == {"BLOCK": 64}  # tuned again
    third = CountingBench()
    make_cached_kernel(third)[third.grid(300)](x, np.zeros_like(x), 300)
    assert third.calls == 0 and third.block == 64  # and the file rewritten


def test_cache_results_with_the_disk_cache_disabled(monkeypatch):
    monkeypatch.setenv("TILEC_DISABLE_DISK_CACHE", "1")
    x = np.arange(100, dtype=np.float32)
    for _ in range(2):
        bench = CountingBench()
        make_cached_kernel(bench)[bench.grid(100)](x, np.zeros_like(x), 100)
        assert bench.calls == 3


# --- reporting


@pytest.mark.parametrize("variable", ["TRITON_PRINT_AUTOTUNING", "TILEC_PRINT_AUTOTUNING"])
def test_print_autotuning(monkeypatch, capsys, variable):
    monkeypatch.setenv(variable, "1")
    kernel, bench = counted(BLOCKS, times={128: 0.5})
    x = np.ones(100, np.float32)
    kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    printed = capsys.readouterr().out
    assert "autotuning for function add_one_kernel" in printed
    assert "with key as (100, 'float32', 'float32')" in printed
    assert "best config selected: BLOCK: 128, num_warps: 4" in printed
    assert "finished after" in printed
    kernel[bench.grid(100)](x, np.zeros_like(x), 100)
    assert capsys.readouterr().out == ""


# --- `import triton` through tilec.compat


@pytest.fixture
def triton_alias():
    """`triton` pointed at tilec for one test, as it was before afterwards."""
    saved = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
    import tilec.compat
    tilec.compat.install()
    import triton
    yield triton
    tilec.compat.uninstall()
    sys.modules.update(saved)


def test_compat_autotune_names(triton_alias):
    import triton
    from triton import Config, autotune, heuristics
    from triton.runtime import Autotuner as RuntimeAutotuner
    from triton.runtime.autotuner import Autotuner as ModuleAutotuner

    assert (autotune, Config, heuristics) == (tilec.autotune, tilec.Config, tilec.heuristics)
    assert RuntimeAutotuner is ModuleAutotuner is Autotuner
    assert triton.__version__ >= "3" and tilec.__version__ == "0.1.0"

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                     key=["n"], do_bench=CountingBench())
    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    copy_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    np.testing.assert_array_equal(out, x)


def test_cache_dir_env_is_respected(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "elsewhere"))
    bench = CountingBench()
    x = np.arange(10, dtype=np.float32)
    make_cached_kernel(bench)[bench.grid(10)](x, np.zeros_like(x), 10)
    assert os.listdir(tmp_path / "elsewhere" / "autotune")
