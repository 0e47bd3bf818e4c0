"""``tilec.testing`` (``triton.testing`` under tilec.compat): timing functions
(`do_bench`, `do_bench_cudagraph`), `assert_close`, and `perf_report` with
`Benchmark` to time a function over a grid of arguments, print the table and
plot it.

Work on the GPU is timed with CUDA events (through torch), on the CPU with
the wall clock; `device=` says which, and by default it is the GPU when torch
sees one. torch, pandas and matplotlib are imported only when used: without
pandas tables are plain text, without matplotlib there are no plots.
"""

import math
import os
import statistics
import time
import warnings

_RETURN_MODES = ("min", "max", "mean", "median", "all")

# Bytes zeroed before each timed GPU run, so that no input is still in the L2
# cache (larger than the L2 of any GPU so far), as Triton does.
_L2_FLUSH_BYTES = 256 * 1024 * 1024


def _quantiles(values, qs):
    """The quantiles `qs` of `values`, interpolated linearly between the two
    nearest ranks (numpy's and torch's default)."""
    ordered = sorted(values)
    out = []
    for q in qs:
        if not 0 <= q <= 1:
            raise ValueError(f"quantiles must be in [0, 1], got {q}")
        point = q * (len(ordered) - 1)
        low, high = math.floor(point), math.ceil(point)
        out.append(ordered[low] + (ordered[high] - ordered[low]) * (point - low))
    return out


def _summarize(times, quantiles, return_mode):
    """What do_bench returns for the times of its runs (ms): the quantiles asked
    for (one number when one is asked for), else per return_mode."""
    if quantiles is not None:
        out = _quantiles(times, quantiles)
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return list(times)
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.mean(times)


def _check_return_mode(return_mode):
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, "
                         f"got {return_mode!r}")


def _torch_cuda():
    """torch, when it is installed and sees a GPU; else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _on_gpu(device):
    """Whether to time with CUDA events: device 'cuda' (or 'cuda:N'), or None
    and torch sees a GPU."""
    if device is None:
        return _torch_cuda() is not None
    kind = str(device).split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if kind == "cuda" and _torch_cuda() is None:
        raise RuntimeError("do_bench(device='cuda') needs torch with a CUDA GPU")
    return kind == "cuda"


def _clear_grads(grad_to_none):
    for x in grad_to_none or ():
        x.grad = None


def _runs(warmup, rep, estimate_ms):
    """(warm-up runs, timed runs) that last about `warmup` and `rep` ms."""
    estimate_ms = max(estimate_ms, 1e-6)
    return max(1, int(warmup / estimate_ms)), max(1, int(rep / estimate_ms))


def _bench_cpu(fn, warmup, rep, grad_to_none):
    fn()
    start = time.perf_counter()
    for _ in range(5):
        fn()
    n_warmup, n_repeat = _runs(warmup, rep, (time.perf_counter() - start) * 1e3 / 5)
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        _clear_grads(grad_to_none)
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _bench_gpu(torch, fn, warmup, rep, grad_to_none):
    fn()
    torch.cuda.synchronize()
    flush = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    wall = time.perf_counter()
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - wall) * 1e3
    # The estimate only sets how many runs fill `warmup` and `rep` ms: the wall
    # clock bounds it from below, so that runs slowed by the host do not turn
    # 100 ms of timing into seconds.
    n_warmup, n_repeat = _runs(warmup, rep, max(start.elapsed_time(end), wall) / 5)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        _clear_grads(grad_to_none)
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean",
             device=None):
    """The time of one call of `fn()`, in milliseconds.

    `fn` runs once, then 5 times to estimate its time, then for about `warmup`
    ms untimed and `rep` ms timed, each run on its own. On the GPU each run is
    timed with CUDA events, with the L2 cache flushed before it; on the CPU by
    the wall clock. `grad_to_none`: tensors whose .grad is set to None before
    each run. Returns the `quantiles` of the times (a list; one number for one
    quantile) or, without quantiles, their min, max, mean or median, or all of
    them (a list), per `return_mode`.

    device: 'cuda' or 'cpu'; by default 'cuda' when torch sees a GPU. Give
    'cpu' to time work that runs on the CPU on a machine with a GPU.
    """
    _check_return_mode(return_mode)
    if _on_gpu(device):
        times = _bench_gpu(_torch_cuda(), fn, warmup, rep, grad_to_none)
    else:
        times = _bench_cpu(fn, warmup, rep, grad_to_none)
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean",
                       device=None):
    """The time of one call of `fn()`, in milliseconds, measured on a CUDA graph
    of back-to-back calls (no launch overhead): about `rep` ms of calls per
    replay, 10 replays, each giving the mean time of a call; returns per
    `quantiles` and `return_mode` as do_bench does.

    On the CPU (device='cpu', or no GPU that torch sees) there are no graphs:
    it is do_bench(fn, warmup=rep, rep=rep), timed by the wall clock.
    """
    _check_return_mode(return_mode)
    if not _on_gpu(device):
        return do_bench(fn, warmup=rep, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                        return_mode=return_mode, device="cpu")
    torch = _torch_cuda()
    with torch.cuda.stream(torch.cuda.Stream()):  # graphs are not captured on the default stream
        fn()
        for x in grad_to_none or ():
            x.detach_()
            x.requires_grad_(True)
            x.grad = None
        estimate_ms = _graph_replay_ms(torch, _capture(torch, fn, 1, grad_to_none))
        n_repeat = 1000 if estimate_ms == 0 else max(1, int(rep / estimate_ms))
        graph = _capture(torch, fn, n_repeat, grad_to_none)
        times = [_graph_replay_ms(torch, graph) / n_repeat for _ in range(10)]
    return _summarize(times, quantiles, return_mode)


def _capture(torch, fn, n, grad_to_none):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            _clear_grads(grad_to_none)
            fn()
    torch.cuda.synchronize()
    return graph


def _graph_replay_ms(torch, graph):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


# --- comparing results


def _to_numpy(x):
    """A numpy array of a torch tensor (on any device, bfloat16 and fp8 as
    float32), a CuPy array, a numpy array, a scalar or a list."""
    import numpy as np
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch
        x = x.detach().cpu()
        if x.dtype.is_floating_point and (x.element_size() < 2 or "bfloat16" in str(x.dtype)):
            x = x.float()  # types numpy does not have
        x = x.numpy()
    elif hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):  # CuPy
        x = x.get()
    x = np.asarray(x)
    return x.astype(np.int8) if x.dtype == np.bool_ else x  # bools cannot be subtracted


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Asserts that `x` and `y` (torch tensors, numpy arrays, scalars) are equal
    within `atol` (default 1e-2) + `rtol` (default 0) * |y|, elementwise; NaNs
    compare equal. `atol` and `rtol` may be functions of x's dtype."""
    import numpy as np
    dtype = getattr(x, "dtype", None)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(dtype) if callable(atol) else atol
    rtol = rtol(dtype) if callable(rtol) else rtol
    x, y = _to_numpy(x), _to_numpy(y)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})"
                             .lstrip())


# --- perf_report


class Benchmark:
    """What `perf_report` runs: the function is called with each value of
    `x_vals` (given to every argument in `x_names`; a tuple gives one value per
    name) and each value of `line_arg` in `line_vals` (one line of the plot,
    named by `line_names`), with `args` fixed. `styles`: (color, line style)
    per line. `plot_name` names the plot and the files saved."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.styles = styles
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark '{plot_name}': {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")


class Table:
    """The results of a benchmark, where pandas is not installed: named columns
    of values, printed and saved as a DataFrame would be."""

    def __init__(self, columns, rows):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]

    def __getitem__(self, column):
        i = self.columns.index(column)
        return [row[i] for row in self.rows]

    def __len__(self):
        return len(self.rows)

    def to_string(self):
        cells = [[""] + self.columns]
        cells += [[str(i)] + [_cell(v) for v in row] for i, row in enumerate(self.rows)]
        widths = [max(len(r[c]) for r in cells) for c in range(len(cells[0]))]
        return "\n".join("  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells)

    def __str__(self):
        return self.to_string()

    def to_csv(self, path, float_format="%.6f", index=False):
        def text(v):
            if v is None:
                return ""
            return float_format % v if isinstance(v, float) else str(v)
        lines = [",".join(self.columns)] + [",".join(text(v) for v in r) for r in self.rows]
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def _cell(value):
    if value is None:
        return "NaN"
    if isinstance(value, float):
        text = f"{value:.6g}"
        return text + ".0" if text.lstrip("-").isdigit() else text  # 32.0, as pandas shows it
    return str(value)


def _table(columns, rows):
    """A pandas DataFrame when pandas is installed, else a Table."""
    try:
        import pandas
    except ImportError:
        return Table(columns, rows)
    return pandas.DataFrame(rows, columns=columns)


def _number(value):
    return None if value is None else float(value)


class Mark:
    """A function marked by `perf_report`: `.run()` runs its benchmarks."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench, **kwargs):
        """The rows: x values, then per line the mean, then the mins, then the maxes."""
        rows = []
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"{bench.plot_name}: x value {x!r} does not give one value "
                                 f"for each of {bench.x_names}")
            means, mins, maxs = [], [], []
            for line in bench.line_vals:
                ret = self.fn(**dict(zip(bench.x_names, xs)), **{bench.line_arg: line},
                              **bench.args, **kwargs)
                if isinstance(ret, (list, tuple)):
                    mean, low, high = ret
                else:
                    mean, low, high = ret, None, None
                means.append(_number(mean))
                mins.append(_number(low))
                maxs.append(_number(high))
            rows.append(xs + means + mins + maxs)
        return rows

    def _run(self, bench, save_path, show_plots, print_data, diff_col=False, save_precision=6,
             **kwargs):
        rows = self._measure(bench, **kwargs)
        n_x = len(bench.x_names)
        if bench.plot_name and (show_plots or save_path):
            _plot(bench, rows, show_plots, save_path)
        columns = bench.x_names + bench.line_names
        rows = [r[:n_x + len(bench.line_names)] for r in rows]
        if diff_col and len(bench.line_names) == 2:
            a, b = bench.line_names
            columns = columns + [f"Diff {a} - {b}"]
            rows = [r + [None if None in r[n_x:] else r[n_x] - r[n_x + 1]] for r in rows]
        table = _table(columns, rows)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table.to_string())
        if save_path:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"),
                         float_format=f"%.{save_precision}f", index=False)
        return table

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Runs each benchmark: prints its table (print_data), shows its plot
        (show_plots), saves <plot_name>.csv and .png and a results.html under
        save_path. Returns the table (a DataFrame, or a Table without pandas;
        a list of them for a list of benchmarks) when return_df."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        tables = []
        try:
            for bench in benchmarks:
                tables.append(self._run(bench, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path:
                with open(os.path.join(save_path, "results.html"), "w", encoding="utf-8") as f:
                    f.write("<html><body>\n")
                    for bench in benchmarks:
                        f.write(f'<image src="{bench.plot_name}.png"/>\n')
                    f.write("</body></html>\n")
        if return_df:
            return tables[0] if single else tables
        return None


def _plot(bench, rows, show, save_path):
    """Draws one line per line_names (with its min-max band, where given)
    against the first x argument; shows it and/or saves <plot_name>.png."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn(f"{bench.plot_name}: matplotlib is not installed, so there is no plot "
                      "(pip install matplotlib); the data is still printed and saved")
        return
    n_x, n_lines = len(bench.x_names), len(bench.line_names)
    xs = [r[0] for r in rows]
    fig = plt.figure()
    ax = fig.add_subplot()
    for i, name in enumerate(bench.line_names):
        color, style = bench.styles[i][:2] if bench.styles else (None, None)
        ys = [r[n_x + i] for r in rows]
        ax.plot(xs, [math.nan if y is None else y for y in ys], label=name, color=color,
                ls=style)
        lows = [r[n_x + n_lines + i] for r in rows]
        highs = [r[n_x + 2 * n_lines + i] for r in rows]
        if None not in lows and None not in highs:
            ax.fill_between(xs, lows, highs, alpha=0.15, color=color)
    ax.legend()
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    ax.set_xscale("log" if bench.x_log else "linear")
    ax.set_yscale("log" if bench.y_log else "linear")
    if save_path:
        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()
    plt.close(fig)


def perf_report(benchmarks):
    """Marks a function to be benchmarked over `benchmarks` (one Benchmark or a
    list): ``@perf_report(Benchmark(...)) def bench(N, provider): ...`` returns
    a Mark; ``bench.run(print_data=True, save_path=...)`` runs it. The function
    returns a number, or (mean, min, max)."""
    return lambda fn: Mark(fn, benchmarks)
