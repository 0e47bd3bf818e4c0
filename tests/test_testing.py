"""tilec.testing on the CPU: do_bench and its return conventions,
assert_close, perf_report's tables and files, and `triton.testing`."""

import csv
import importlib.util
import sys
import time
import types

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import testing


def busy(ms):
    """A function that takes `ms` milliseconds of CPU time."""
    def fn():
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            pass
    return fn


# --- do_bench


def test_do_bench_on_cpu_measures_the_time():
    t = testing.do_bench(busy(0.5), warmup=2, rep=10, device="cpu")
    assert 0.5 <= t < 50  # loose above: a busy machine (CI, xdist) stretches it


def test_do_bench_return_modes_and_quantiles():
    fn = busy(0.2)
    all_times = testing.do_bench(fn, warmup=1, rep=5, return_mode="all", device="cpu")
    assert isinstance(all_times, list) and len(all_times) >= 10
    assert all(t >= 0.2 for t in all_times)
    low = testing.do_bench(fn, warmup=1, rep=5, return_mode="min", device="cpu")
    median = testing.do_bench(fn, warmup=1, rep=5, return_mode="median", device="cpu")
    high = testing.do_bench(fn, warmup=1, rep=5, return_mode="max", device="cpu")
    # three separate runs: each is at least the busy time; only min <= max is safe across runs
    assert 0.2 <= low <= high and median >= 0.2
    qs = testing.do_bench(fn, warmup=1, rep=5, quantiles=[0.5, 0.2, 0.8], device="cpu")
    assert len(qs) == 3 and qs[1] <= qs[0] <= qs[2]
    one = testing.do_bench(fn, warmup=1, rep=5, quantiles=[0.5], device="cpu")
    assert isinstance(one, float)
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(fn, return_mode="average", device="cpu")
    with pytest.raises(ValueError, match="quantiles"):
        testing.do_bench(fn, warmup=1, rep=1, quantiles=[1.5], device="cpu")


def test_do_bench_run_counts_follow_warmup_and_rep():
    calls = []
    fn = busy(1.0)
    testing.do_bench(lambda: calls.append(fn()), warmup=3, rep=10, device="cpu")
    # once, 5 to estimate, about 3 warm-up and about 10 timed runs
    assert 8 <= len(calls) <= 40  # a busy machine (CI, xdist) stretches the estimate


def test_do_bench_clears_grads():
    x = types.SimpleNamespace(grad=1)
    seen = []
    testing.do_bench(lambda: seen.append(x.grad), warmup=0, rep=0, grad_to_none=[x],
                     device="cpu", return_mode="all")
    assert seen[-1] is None


def test_quantiles_interpolate_linearly():
    assert testing._quantiles([1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 1.0, 0.25]) == [1.0, 2.5, 4.0, 1.75]


def test_do_bench_of_a_kernel_on_the_cpu():
    @tilec.jit
    def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs < n)

    out = np.zeros(4096, np.float32)
    ms = testing.do_bench(lambda: fill_kernel[(4,)](out, 4096, BLOCK=1024), warmup=1, rep=5,
                          device="cpu")
    assert 0 < ms < 100
    np.testing.assert_array_equal(out, np.arange(4096))


def test_do_bench_default_device_without_gpu():
    if testing._torch_cuda() is not None:
        pytest.skip("the default device is the GPU here")
    assert testing.do_bench(busy(0.1), warmup=1, rep=2) >= 0.1


def test_do_bench_cudagraph_falls_back_to_do_bench_on_cpu():
    t = testing.do_bench_cudagraph(busy(0.2), rep=3, device="cpu")
    assert 0.2 <= t < 50
    qs = testing.do_bench_cudagraph(busy(0.1), rep=2, quantiles=[0.2, 0.8], device="cpu")
    assert len(qs) == 2 and qs[0] <= qs[1]
    with pytest.raises(ValueError, match="device"):
        testing.do_bench(busy(0.1), device="tpu")


# --- assert_close


def test_assert_close_numpy_and_scalars():
    x = np.linspace(0, 1, 100, dtype=np.float32)
    testing.assert_close(x, x + 0.005)
    testing.assert_close(x, x + 0.05, atol=0.1)
    testing.assert_close(x, x * 1.01, atol=0, rtol=0.02)
    testing.assert_close(1.0, 1.001)
    testing.assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    testing.assert_close(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError, match="bad row"):
        testing.assert_close(x, x + 0.05, err_msg="bad row")
    with pytest.raises(AssertionError, match=r"scalar 1.0 is not close to 2.0 \(atol=0.01"):
        testing.assert_close(1.0, 2.0, err_msg="scalar")
    with pytest.raises(AssertionError):
        testing.assert_close([1.0, 2.0], [1.0, 2.5])


def test_assert_close_tolerance_per_dtype():
    x = np.ones(4, np.float16)
    testing.assert_close(x, x + 0.2, atol=lambda dtype: 0.5 if dtype == np.float16 else 0)
    with pytest.raises(AssertionError):
        testing.assert_close(x.astype(np.float32), x + 0.2,
                             atol=lambda dtype: 0.5 if dtype == np.float16 else 0)


def test_assert_close_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(64)
    testing.assert_close(x, x.clone())
    testing.assert_close(x.to(torch.bfloat16), x, atol=0.05)
    testing.assert_close(torch.tensor(3.0), 3.0)
    testing.assert_close(x.requires_grad_(), x.detach().numpy())
    with pytest.raises(AssertionError):
        testing.assert_close(x, x + 1)


# --- perf_report


def report(plot_name="vector-add", line_vals=("tilec", "numpy")):
    @testing.perf_report(testing.Benchmark(
        x_names=["size"], x_vals=[2**i for i in range(4, 7)], x_log=True,
        line_arg="provider", line_vals=list(line_vals), line_names=["Tilec", "Numpy"],
        styles=[("blue", "-"), ("green", "--")], ylabel="GB/s", plot_name=plot_name,
        args={"scale": 2.0}))
    def bench(size, provider, scale):
        if provider == "tilec":
            return size * scale, size * scale - 1, size * scale + 1
        return float(size)

    return bench


def test_perf_report_prints_and_saves(tmp_path, capsys):
    bench = report()
    have_matplotlib = importlib.util.find_spec("matplotlib") is not None
    if have_matplotlib:
        table = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    else:
        with pytest.warns(UserWarning, match="matplotlib is not installed"):
            table = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    printed = capsys.readouterr().out
    assert printed.startswith("vector-add:\n")
    assert "size" in printed and "Tilec" in printed and "Numpy" in printed and "128" in printed
    assert list(table["Tilec"]) == [32.0, 64.0, 128.0]
    assert list(table["Numpy"]) == [16.0, 32.0, 64.0]
    with open(tmp_path / "vector-add.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["size", "Tilec", "Numpy"]
    assert [float(v) for v in rows[1]] == [16, 32, 16] and len(rows) == 4
    assert (tmp_path / "vector-add.png").exists() == have_matplotlib
    assert "vector-add.png" in (tmp_path / "results.html").read_text()


def test_perf_report_several_x_names_and_benchmarks(capsys):
    calls = []

    @testing.perf_report([
        testing.Benchmark(["M", "N"], [(1, 2), (3, 4)], "p", ["a"], ["A"], "first", {}),
        testing.Benchmark(["K"], [5], "p", ["a", "b"], ["A", "B"], "", {"extra": 1}),
    ])
    def bench(p, extra=0, **sizes):
        calls.append((p, extra, sizes))
        return 1.0

    tables = bench.run(return_df=True)
    assert calls == [("a", 0, {"M": 1, "N": 2}), ("a", 0, {"M": 3, "N": 4}),
                     ("a", 1, {"K": 5}), ("b", 1, {"K": 5})]
    assert len(tables) == 2 and list(tables[0]["N"]) == [2, 4]
    assert capsys.readouterr().out == ""  # print_data off
    with pytest.raises(ValueError, match="one value for each"):
        testing.perf_report(testing.Benchmark(["M", "N"], [(1, 2, 3)], "p", ["a"], ["A"], "x",
                                              {}))(lambda **kw: 1.0).run()


def test_perf_report_without_pandas_prints_a_plain_table(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    table = report().run(print_data=True, return_df=True)
    assert isinstance(table, testing.Table)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "vector-add:"
    assert lines[1].split() == ["size", "Tilec", "Numpy"]
    assert lines[2].split() == ["0", "16", "32.0", "16.0"]


# --- `import triton.testing` through tilec.compat


def test_compat_triton_testing_and_version():
    saved = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
    try:
        import tilec.compat
        tilec.compat.install()
        import triton
        import triton.testing
        from triton.testing import do_bench

        assert triton.testing is tilec.testing and do_bench is tilec.testing.do_bench
        assert triton.__version__ >= "3" and triton.__version__ >= "2"
        from packaging.version import Version
        assert Version(triton.__version__) >= Version("3.0")
        assert tilec.__version__ == "0.1.0"
        assert triton.jit is tilec.jit and triton.cdiv(5, 2) == 3
    finally:
        tilec.compat.uninstall()
        sys.modules.update(saved)
