"""Row softmax: one program per row, the row padded to a power of 2 with -inf."""

import time

import numpy as np

import tilec
import tilec.language as tl
from _timing import best_ms, report


@tilec.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def main():
    rows, cols = 1823, 781
    x = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)

    def launch():
        return softmax_kernel[(rows,)](out, x, x.strides[0] // 4, out.strides[0] // 4, cols,
                                       BLOCK=tilec.next_power_of_2(cols))

    start = time.perf_counter()
    kernel = launch()
    cold = (time.perf_counter() - start) * 1e3
    run = best_ms(launch)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    report("softmax", kernel, cold, run, float(np.abs(out - e / e.sum(1, keepdims=True)).max()))


if __name__ == "__main__":
    main()
