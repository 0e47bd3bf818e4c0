"""Errors of the runtime."""


class OutOfResources(RuntimeError):
    """A kernel needs more of a resource (shared memory, registers) than the device has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(
            f"out of resource: {name}, required: {required}, hardware limit: {limit}. "
            "Reducing block sizes or `num_stages` may help."
        )
