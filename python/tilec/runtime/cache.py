"""``triton.runtime.cache``: where compiled kernels are kept on disk
(``$TILEC_CACHE_DIR``, else ``$TRITON_CACHE_DIR``... see knobs.cache)."""

import base64
import hashlib

from .. import _C
from ..compiler.cache import compiler_version
from .. import knobs  # noqa: F401  (Triton's module has it; torch imports it from here)


def default_cache_dir():
    return _C.cache_dir()


def triton_key():
    """A text that changes with the compiler's build: part of every cache key."""
    return compiler_version()


def _base32(key):
    return base64.b32encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


def _base64(key):
    return base64.urlsafe_b64encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


def get_cache_key(*parts):
    return hashlib.sha256("-".join(str(p) for p in parts).encode()).hexdigest()
