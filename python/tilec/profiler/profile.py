"""The profiling session: launches timed through tilec's launch hooks
(knobs.runtime.launch_enter_hook / launch_exit_hook), scopes, and the tree of
totals written at finalize()."""

import contextlib
import functools
import json
import time

from .. import knobs

_session = None


class _Timer:
    """A span of device time: CUDA events on a stream, or the host clock."""

    def __init__(self, stream=None):
        self.cuda = _cuda_ready()
        if self.cuda:
            import torch
            self.begin = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
            self.stream = stream
            self.begin.record(self._torch_stream())
        else:
            self.t0 = time.perf_counter()

    def _torch_stream(self):
        import torch
        if self.stream:
            return torch.cuda.ExternalStream(self.stream)
        return torch.cuda.current_stream()

    def stop(self):
        if self.cuda:
            self.end.record(self._torch_stream())
        else:
            self.t1 = time.perf_counter()

    def nanoseconds(self):
        if self.cuda:
            self.end.synchronize()
            return self.begin.elapsed_time(self.end) * 1e6
        return (self.t1 - self.t0) * 1e9


@functools.lru_cache(maxsize=None)
def _cuda_ready():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


class _Node:
    def __init__(self, name):
        self.name = name
        self.children = {}
        self.metrics = {}
        self.timers = []

    def child(self, name):
        if name not in self.children:
            self.children[name] = _Node(name)
        return self.children[name]

    def add(self, metrics, timer):
        for key, value in (metrics or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.metrics[key] = self.metrics.get(key, 0) + value
        self.metrics["count"] = self.metrics.get("count", 0) + 1
        if timer is not None:
            self.timers.append(timer)

    def resolve(self):
        """Turns the timers into time (ns), own and inclusive of children."""
        own = sum(t.nanoseconds() for t in self.timers)
        self.timers = []
        if own:
            self.metrics["time (ns)"] = self.metrics.get("time (ns)", 0) + own
        for c in self.children.values():
            c.resolve()

    def to_json(self):
        return {"frame": {"name": self.name, "type": "function"}, "metrics": dict(self.metrics),
                "children": [c.to_json() for c in self.children.values()]}


class _Session:
    def __init__(self, name, context, data):
        self.name = name
        self.active = True
        self.root = _Node("ROOT")
        self.scopes = [self.root]
        self.open = []  # (node, timer) of the launches in flight on this thread
        self.context = context
        self.data = data


def _launch_enter(metadata):
    s = _session
    if s is None or not s.active:
        return
    info = metadata.get() if hasattr(metadata, "get") else dict(metadata)
    node = s.scopes[-1].child(str(info.get("name", "kernel")))
    metrics = {k: v for k, v in info.items() if k not in ("name", "function", "stream", "device")}
    timer = _Timer(info.get("stream"))
    node.add(metrics, None)
    s.open.append((node, timer))


def _launch_exit(metadata):
    s = _session
    if s is None or not s.open:
        return
    node, timer = s.open.pop()
    timer.stop()
    node.timers.append(timer)


def start(name="proton", *, context="shadow", data="tree", backend=None, mode=None,
          hook=None):
    """Starts session 0, active. With ``hook="triton"`` tilec's launches are timed."""
    global _session
    if _session is not None:
        finalize()
    _session = _Session(name or "proton", context, data)
    knobs.runtime.launch_enter_hook = _launch_enter
    knobs.runtime.launch_exit_hook = _launch_exit
    return 0


def activate(session=None):
    if _session is not None:
        _session.active = True


def deactivate(session=None, flushing=False):
    if _session is not None:
        _session.active = False


def state():
    return None if _session is None else ("active" if _session.active else "inactive")


def enter_scope(name, *, triton_op=False, metrics=None):
    s = _session
    if s is None or not s.active:
        return None
    node = s.scopes[-1].child(name)
    timer = _Timer()
    node.add(metrics, None)
    s.scopes.append(node)
    return (node, timer)


def exit_scope(handle=None, name=None, *, metrics=None):
    s = _session
    if s is None or handle is None or len(s.scopes) <= 1:
        return
    node, timer = handle
    timer.stop()
    if not node.children:  # a leaf scope: its time is the work it enclosed
        node.timers.append(timer)
    if s.scopes[-1] is node:
        s.scopes.pop()


class scope(contextlib.ContextDecorator):
    """``with proton.scope(name, metrics):`` (or as a decorator): counts what runs
    inside under `name`, with `metrics` (flops, bytes) added once per entry."""

    def __init__(self, name, metrics=None):
        self.name = name
        self.metrics = metrics
        self._handle = []

    def __enter__(self):
        self._handle.append(enter_scope(self.name, metrics=self.metrics))
        return self

    def __exit__(self, *exc):
        exit_scope(self._handle.pop())
        return False


def finalize(session=None, output_format="hatchet"):
    """Ends the session and writes ``<name>.hatchet``: the tree of scopes and
    kernels with their summed metrics ("time (ns)", "count", flops, bytes)."""
    global _session
    s = _session
    if s is None:
        return
    _session = None
    if knobs.runtime.launch_enter_hook is _launch_enter:
        knobs.runtime.launch_enter_hook = None
        knobs.runtime.launch_exit_hook = None
    s.root.resolve()
    path = s.name if s.name.endswith(".hatchet") else f"{s.name}.hatchet"
    with open(path, "w", encoding="utf-8") as f:
        json.dump([s.root.to_json()], f, indent=1)
    return path
