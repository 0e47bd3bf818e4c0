"""``triton.backends.nvidia.driver``: CUDA through libcuda (opened by tilec's
C++ runtime), devices and streams from torch when it is there."""

import functools

from ... import _C
from ..compiler import GPUTarget
from ..driver import GPUDriver


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


class CudaUtils:
    """``driver.active.utils``."""

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def get_device_properties(device):
        return dict(_C.device_properties(int(device)))


def arch_of(device):
    """The PTX target for a device: sm_90a on Hopper (wgmma, setmaxnreg), else sm_XY."""
    props = CudaUtils.get_device_properties(device)
    major, minor = props["major"], props["minor"]
    return f"sm_{major}{minor}a" if major == 9 else f"sm_{major}{minor}"


class CudaDriver(GPUDriver):
    """The CUDA driver: kernels run on torch's current device and stream."""

    utils = CudaUtils()
    backend = "cuda"

    @classmethod
    def is_active(cls):
        return cuda_available()

    def get_current_device(self):
        torch = _torch_cuda()
        if torch is not None:
            return torch.cuda.current_device()
        return _C.current_device()

    def set_current_device(self, device):
        torch = _torch_cuda()
        if torch is not None:
            torch.cuda.set_device(device)
        else:
            _C.set_current_device(int(device))

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

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        torch = _torch_cuda()
        return torch.cuda if torch is not None else None
