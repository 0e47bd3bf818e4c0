"""``tl.target_info``: which GPU the code is for.

On the host these answer for the current device. Inside a kernel the compiler
answers them for the compile's target (the CPU backend: not CUDA; a GPU: its
architecture), and keeps that kernel's IR for that target alone.
"""

from ..backends.nvidia.driver import CudaDriver

__all__ = ["current_target"]


def current_target():
    """The current CUDA device as (backend, arch, warp_size), or None without one."""
    if not CudaDriver.is_active():
        return None
    return CudaDriver().get_current_target()


def is_cuda():
    target = current_target()
    return target is not None and target.backend == "cuda"


def cuda_capability_geq(major, minor=0):
    """Whether the current device's compute capability is at least (major, minor)."""
    target = current_target()
    return target is not None and target.backend == "cuda" and target.arch >= major * 10 + minor


def is_hip():
    return False  # tilec has no AMD backend


def is_hip_cdna3():
    return False


def is_hip_cdna4():
    return False
