"""The CPU backend's driver: where no GPU is usable (or TILEC_INTERPRET=1),
kernels run on the CPU, and ``driver.active`` says so."""

import os

from ..compiler import GPUTarget
from ..driver import DriverBase


class CpuDriver(DriverBase):
    """Kernels run on the CPU backend, on torch CPU tensors and numpy arrays."""

    backend = "cpu"

    class utils:
        @staticmethod
        def get_device_properties(device):
            cores = os.cpu_count() or 1
            return {"multiprocessor_count": cores, "max_shared_mem": 1 << 30, "warpSize": 1,
                    "max_num_regs": 1 << 16, "sm_clock_rate": 0, "mem_clock_rate": 0,
                    "mem_bus_width": 0, "major": 0, "minor": 0}

    @classmethod
    def is_active(cls):
        return True

    def get_current_target(self):
        return GPUTarget("cpu", "cpu", 1)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0
