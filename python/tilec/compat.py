"""``import tilec.compat`` makes ``import triton`` and ``import triton.language``
give tilec, so existing Triton code runs unchanged."""

import sys

import tilec
import tilec.language

sys.modules.setdefault("triton", tilec)
sys.modules.setdefault("triton.language", tilec.language)
sys.modules.setdefault("triton.language.math", tilec.language.math)
sys.modules.setdefault("triton.language.extra", tilec.language.extra)
sys.modules.setdefault("triton.language.extra.cuda", tilec.language.extra.cuda)
sys.modules.setdefault("triton.language.extra.cuda.libdevice", tilec.language.extra.cuda.libdevice)
