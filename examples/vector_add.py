"""Vector add: the first kernel of every tutorial, on 1M elements."""

import time

import numpy as np

import tilec
import tilec.language as tl
from _timing import best_ms, report


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def main():
    n = 1 << 20
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    grid = lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    start = time.perf_counter()
    kernel = add_kernel[grid](x, y, out, n, BLOCK=1024)
    cold = (time.perf_counter() - start) * 1e3
    run = best_ms(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
    report("vector_add", kernel, cold, run, float(np.abs(out - (x + y)).max()))


if __name__ == "__main__":
    main()
