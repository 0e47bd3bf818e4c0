"""Vector add: the first kernel of every tutorial, on 2^24 elements on the GPU (2^20 on
the CPU)."""

import tilec
import tilec.language as tl
from _timing import GPU, Random, bench, empty_like


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def main():
    n = 1 << 24 if GPU else 1 << 20
    rng = Random(0)
    x, y = rng.randn(n), rng.randn(n)
    out = empty_like(x)
    grid = lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    bench("vector_add", lambda: add_kernel[grid](x, y, out, n, BLOCK=1024), out,
          lambda: x + y, nbytes=3 * x.nbytes)


if __name__ == "__main__":
    main()
