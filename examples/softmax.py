"""Row softmax: one program per row, the row padded to a power of 2 with -inf."""

import numpy as np

import tilec
import tilec.language as tl
from _timing import GPU, Random, bench, empty_like, strides, torch


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
    rows, cols = (32768, 781) if GPU else (1823, 781)
    x = Random(0).randn(rows, cols)
    out = empty_like(x)

    def launch():
        return softmax_kernel[(rows,)](out, x, strides(x)[0], strides(out)[0], cols,
                                       BLOCK=tilec.next_power_of_2(cols))

    def reference():
        if GPU:
            return torch.softmax(x, dim=1)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    bench("softmax", launch, out, reference, nbytes=2 * x.nbytes)


if __name__ == "__main__":
    main()
