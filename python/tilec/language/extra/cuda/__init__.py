"""``tl.extra.cuda``: libdevice and NVIDIA-only instructions."""

from . import libdevice  # noqa: F401


def _kernel_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tl.extra.cuda.{name}() can be called only inside a @tilec.jit kernel")

    fn.__name__ = name
    return fn


# Programmatic dependent launch (sm_90+, a launch with launch_pdl=True):
# gdc_wait blocks until the grids this one depends on have finished and their
# memory is visible; gdc_launch_dependents lets the next grid start early.
gdc_wait = _kernel_only("gdc_wait")
gdc_launch_dependents = _kernel_only("gdc_launch_dependents")
