"""tilec.profiler (Triton's proton, as the tutorials use it): launches counted
and timed under the scopes open at their launch, with their launch_metadata."""

import numpy as np

import tilec
import tilec.language as tl
from tilec import knobs, profiler
from tilec.profiler import viewer


def _describe(grid, kernel, args):
    return {"name": f"{kernel.name} [n={args['n']}]", "flops32": 2.0 * args["n"],
            "bytes": 12 * args["n"]}


@tilec.jit(launch_metadata=_describe)
def axpy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


def test_profile_counts_kernels_under_scopes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    x, y = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    profiler.start("run", hook="triton")
    assert knobs.runtime.launch_enter_hook is not None
    profiler.deactivate(0)
    axpy_kernel[(8,)](x, y, 1000, BLOCK=128)  # not counted
    profiler.activate(0)
    with profiler.scope("outer", {"bytes": 5}):
        for _ in range(3):
            axpy_kernel[(8,)](x, y, 1000, BLOCK=128)
    axpy_kernel[(1,)](x, y, 100, BLOCK=128)
    path = profiler.finalize()
    assert knobs.runtime.launch_enter_hook is None and path == "run.hatchet"
    np.testing.assert_array_equal(y[:100], 10)  # 4 runs at n >= 100, 1 uncounted

    tree, metrics = viewer.parse(["time/ms", "tflop32/s", "count"], path)
    by_name = {n.name: n for n in tree.walk()}
    assert set(by_name) == {"ROOT", "outer", "axpy_kernel [n=1000]", "axpy_kernel [n=100]"}
    kernel = by_name["axpy_kernel [n=1000]"]
    assert kernel.metrics["count"] == 3 and kernel.metrics["flops32"] == 6000.0
    assert kernel.metrics["time (ns)"] > 0
    assert by_name["outer"].inclusive()["bytes"] == 5 + 3 * 12000
    viewer.print_tree(tree, metrics)
    out = capsys.readouterr().out
    assert "axpy_kernel [n=1000]" in out and "time/ms" in out


def test_launches_without_a_session_take_the_fast_path():
    assert not tilec.runtime.launch.hooks_set()
