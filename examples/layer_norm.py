"""Layer-norm forward: mean and variance of each row, then scale and shift."""

import numpy as np

import tilec
import tilec.language as tl
from _timing import GPU, Random, bench, empty_like, strides, torch


@tilec.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)


def main():
    M, N = (32768, 1000) if GPU else (1151, 1000)
    rng = Random(0)
    x, w, b = rng.randn(M, N), rng.randn(N), rng.randn(N)
    y = empty_like(x)

    def launch():
        return layer_norm_fwd[(M,)](x, y, w, b, strides(x)[0], N, 1e-5,
                                    BLOCK=tilec.next_power_of_2(N))

    def reference():
        if GPU:
            return torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
        return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b

    bench("layer_norm", launch, y, reference, nbytes=2 * x.nbytes)


if __name__ == "__main__":
    main()
