"""``triton.runtime.driver``: the active driver. ``driver.active`` is CUDA's
when a GPU is usable, else the CPU backend's, so code that asks
``driver.active.get_active_torch_device()`` runs on either."""

from ..backends.cpu.driver import CpuDriver
from ..backends.nvidia.driver import CudaDriver, arch_of, cuda_available  # noqa: F401


def _default_driver():
    return CudaDriver() if CudaDriver.is_active() else CpuDriver()


class DriverConfig:
    """``driver.active`` (chosen on first use, so importing needs no GPU),
    ``driver.default``, and ``set_active``/``reset_active`` as in Triton."""

    def __init__(self):
        self._default = None
        self._active = None

    @property
    def default(self):
        if self._default is None:
            self._default = _default_driver()
        return self._default

    @property
    def active(self):
        return self._active if self._active is not None else self.default

    def set_active(self, driver):
        self._active = driver

    def reset_active(self):
        self._active = None


driver = DriverConfig()


def __getattr__(name):
    # `tilec.runtime.driver.active`: the module stands for the config too.
    if name in ("active", "default"):
        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
