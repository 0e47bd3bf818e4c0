"""``triton.compiler.errors``."""

from ..errors import (  # noqa: F401
    CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct)
