"""The errors tilec raises."""

import re


class CompilationError(Exception):
    """A kernel does not compile. ``filename``, ``lineno`` and ``col`` say where."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        match = re.match(r"(.*?):(\d+):(\d+): error: (.*)", message)
        self.filename = match.group(1) if match else None
        self.lineno = int(match.group(2)) if match else None
        self.col = int(match.group(3)) if match else None
        self.error = match.group(4) if match else message


class KernelError(RuntimeError):
    """A kernel failed while it ran (an access out of bounds, a device_assert)."""
