"""``triton.runtime.errors``: errors of the runtime."""

from ..errors import InterpreterError, KernelError, TritonError  # noqa: F401


class OutOfResources(TritonError, RuntimeError):
    """A kernel needs more of a resource (shared memory, registers) than the device has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(
            f"out of resource: {name}, required: {required}, hardware limit: {limit}. "
            "Reducing block sizes or `num_stages` may help."
        )


class PTXASError(TritonError, RuntimeError):
    """The PTX assembler refused a kernel."""
