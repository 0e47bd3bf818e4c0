"""The errors tilec raises."""

import re


class TritonError(Exception):
    """The base of the errors of kernels, their compile and their launch (Triton's name)."""


class CompilationError(TritonError):
    """A kernel does not compile. ``filename``, ``lineno`` and ``col`` say where."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        match = re.match(r"(.*?):(\d+):(\d+): error: (.*)", message)
        self.filename = match.group(1) if match else None
        self.lineno = int(match.group(2)) if match else None
        self.col = int(match.group(3)) if match else None
        self.error = match.group(4) if match else message
        self.error_message = self.error  # Triton's name for the message without the location


class CompileTimeAssertionFailure(CompilationError):
    """A ``tl.static_assert`` failed while the kernel compiled."""


class UnsupportedLanguageConstruct(CompilationError):
    """The kernel uses Python that the kernel language does not have."""


def compilation_error(message):
    """The CompilationError (or the subclass) for a compiler's message."""
    if "error: static assertion failed" in message.split("\n", 1)[0]:
        return CompileTimeAssertionFailure(message)
    return CompilationError(message)


class InterpreterError(TritonError, RuntimeError):
    """A kernel failed while the CPU backend ran it (Triton's name, from its interpreter)."""


class KernelError(InterpreterError):
    """A kernel failed while it ran (an access out of bounds, a device_assert)."""
