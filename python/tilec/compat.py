"""``import tilec.compat`` makes ``import triton`` and ``import triton.language``
give tilec, so existing Triton code runs unchanged."""

import sys

import tilec
import tilec.compiler
import tilec.language
import tilec.runtime

_ALIASES = {
    "triton": tilec,
    "triton.language": tilec.language,
    "triton.runtime": tilec.runtime,
    "triton.runtime.driver": tilec.runtime.driver,
    "triton.compiler": tilec.compiler,
    "triton.language.math": tilec.language.math,
    "triton.language.extra": tilec.language.extra,
    "triton.language.extra.cuda": tilec.language.extra.cuda,
    "triton.language.extra.cuda.libdevice": tilec.language.extra.cuda.libdevice,
}


def install():
    """Points the `triton` modules at tilec's, replacing any imported before."""
    sys.modules.update(_ALIASES)


install()
