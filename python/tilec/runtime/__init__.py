"""The runtime around kernels: ``tilec.runtime.driver.active`` answers what
Triton's driver does (current device and stream, device properties)."""

from . import driver  # noqa: F401
from .errors import OutOfResources  # noqa: F401
