"""The CUDA driver as Triton users reach it: ``driver.active.get_current_device()``,
``get_current_stream()``, ``utils.get_device_properties(dev)``."""

import collections
import functools

from .. import _C


@functools.lru_cache(maxsize=None)
def cuda_available():
    ok, _ = _C.cuda_available()
    return ok


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


# What Triton's driver.active.get_current_target() gives (a tuple, too).
GPUTarget = collections.namedtuple("GPUTarget", ["backend", "arch", "warp_size"])


class _Utils:
    @staticmethod
    @functools.lru_cache(maxsize=None)
    def get_device_properties(device):
        return dict(_C.device_properties(int(device)))


class CudaDriver:
    """The active driver: CUDA through libcuda, streams from torch when it is there."""

    utils = _Utils()
    backend = "cuda"

    def get_current_device(self):
        torch = _torch_cuda()
        if torch is not None:
            return torch.cuda.current_device()
        return _C.current_device()

    def set_current_device(self, device):
        torch = _torch_cuda()
        if torch is not None:
            torch.cuda.set_device(device)

    def get_current_stream(self, device=None):
        torch = _torch_cuda()
        if torch is None:
            return 0
        if device is None:
            device = torch.cuda.current_device()
        return torch.cuda.current_stream(device).cuda_stream

    def get_current_target(self):
        props = self.utils.get_device_properties(self.get_current_device())
        return GPUTarget("cuda", props["major"] * 10 + props["minor"], 32)

    def get_device_interface(self):
        torch = _torch_cuda()
        return torch.cuda if torch is not None else None

    def is_active(self):
        return cuda_available()


class _Active:
    """``driver.active``: resolved on first use, so importing needs no GPU."""

    def __init__(self):
        self._driver = None

    def __getattr__(self, name):
        if self._driver is None:
            self._driver = CudaDriver()
        return getattr(self._driver, name)


active = _Active()


def arch_of(device):
    """The PTX target for a device: sm_90a on Hopper (wgmma, setmaxnreg), else sm_XY."""
    props = _Utils.get_device_properties(device)
    major, minor = props["major"], props["minor"]
    return f"sm_{major}{minor}a" if major == 9 else f"sm_{major}{minor}"
