"""The CPU backend's driver (kernels run by tilec's reference executor)."""

from . import driver  # noqa: F401
