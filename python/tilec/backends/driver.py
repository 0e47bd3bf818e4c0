"""``triton.backends.driver``: the interface of a backend's driver (devices,
streams, the target of the current device), as Triton declares it."""

from abc import ABCMeta, abstractmethod

from ..testing import do_bench


class DriverBase(metaclass=ABCMeta):

    @classmethod
    @abstractmethod
    def is_active(cls):
        """Whether this driver can run kernels on this machine."""

    @abstractmethod
    def get_current_target(self):
        """The GPUTarget kernels compile for here."""

    @abstractmethod
    def get_active_torch_device(self):
        """The torch device kernels run on here."""

    def get_benchmarker(self):
        """The function that times kernels for the autotuner."""
        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device=self.get_active_torch_device())

    def clear_cache(self, cache):
        cache.zero_()


class GPUDriver(DriverBase):
    """A driver with devices and streams."""

    @abstractmethod
    def get_current_device(self):
        ...

    @abstractmethod
    def set_current_device(self, device):
        ...

    @abstractmethod
    def get_current_stream(self, device=None):
        ...
