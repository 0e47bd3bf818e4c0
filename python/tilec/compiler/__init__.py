"""``triton.compiler``: compiling a kernel without launching it, and what a
compile gives (`CompiledKernel`)."""

from . import errors  # noqa: F401
from .compiler import ASTSource, CompiledKernel, compile  # noqa: F401
from .errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401
from ..backends.compiler import GPUTarget  # noqa: F401
