"""``triton.profiler.viewer``: reads a ``.hatchet`` profile and prints its tree
with derived metrics: ``time/ns|us|ms|s``, ``tflop<bits>/s`` and ``gflop<bits>/s``
from ``flops<bits>``, ``gbyte/s`` and ``tbyte/s`` from ``bytes``, and ``count``."""

import json

_TIME_UNITS = {"time/ns": 1, "time/us": 1e3, "time/ms": 1e6, "time/s": 1e9}


def _derived(metrics, name):
    ns = metrics.get("time (ns)", 0)
    if name in _TIME_UNITS:
        return ns / _TIME_UNITS[name]
    if name == "count":
        return metrics.get("count", 0)
    for prefix, scale in (("tflop", 1e12), ("gflop", 1e9)):
        if name.startswith(prefix) and name.endswith("/s"):
            bits = name[len(prefix):-2]
            flops = metrics.get(f"flops{bits}", 0) if bits else sum(
                v for k, v in metrics.items() if k.startswith("flops"))
            return flops / (ns * 1e-9) / scale if ns else 0.0
    if name in ("gbyte/s", "tbyte/s"):
        scale = 1e9 if name == "gbyte/s" else 1e12
        return metrics.get("bytes", 0) / (ns * 1e-9) / scale if ns else 0.0
    return metrics.get(name, 0)


class Tree:
    """A profile's nodes: name, metrics (as written) and children."""

    def __init__(self, data):
        self.name = data["frame"]["name"]
        self.metrics = data.get("metrics", {})
        self.children = [Tree(c) for c in data.get("children", [])]

    def total(self, key):
        return self.metrics.get(key, 0) + sum(c.total(key) for c in self.children)

    def inclusive(self):
        """Metrics summed over the subtree (a scope's time includes its kernels')."""
        out = {}
        for node in self.walk():
            for k, v in node.metrics.items():
                if k != "count" or node is self:
                    out[k] = out.get(k, 0) + v
        return out

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def parse(metric_names, filename, include=None, exclude=None, threshold=None, depth=100):
    """(tree, metric names) of a profile file, the metrics derived on print."""
    with open(filename, encoding="utf-8") as f:
        data = json.load(f)
    return Tree(data[0]), list(metric_names)


def format_tree(tree, metrics, depth=100):
    lines = []

    def visit(node, level, prefix):
        inc = node.inclusive()
        values = ", ".join(f"{_derived(inc, m):.3f} {m}" for m in metrics)
        lines.append(f"{prefix}{node.name}  [{values}]")
        if level < depth:
            for c in sorted(node.children, key=lambda c: -c.inclusive().get("time (ns)", 0)):
                visit(c, level + 1, prefix + "  ")

    visit(tree, 0, "")
    return "\n".join(lines)


def print_tree(tree, metrics, depth=100, format=None, print_sorted=False):
    print(format_tree(tree, metrics, depth))
