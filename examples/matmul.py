"""Tiled matmul with tl.dot and a K loop: 2048^3 in fp16 on the GPU, 256^3 in fp32 on the CPU."""

import tilec
import tilec.language as tl
from _timing import GPU, Random, bench, empty, strides


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def main():
    if GPU:  # fp16 inputs on tensor cores, fp32 accumulator, fp16 result like torch.matmul's
        M = N = K = 2048
        dtype, config = "float16", dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8,
                                      num_stages=3)
    else:  # tl.dot on fp32 reads its inputs as tf32, like tensor cores: ~1e-3 relative error
        M = N = K = 256
        dtype, config = "float32", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    rng = Random(0)
    a, b = rng.randn(M, K, dtype=dtype), rng.randn(K, N, dtype=dtype)
    c = empty((M, N), dtype)  # tl.store converts the fp32 accumulator to c's dtype
    grid = (tilec.cdiv(M, config["BLOCK_M"]), tilec.cdiv(N, config["BLOCK_N"]))

    def launch():
        return matmul_kernel[grid](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c),
                                   **config)

    # In fp16, results near 100 are rounded to steps of 0.06: expect a max |err| of about 0.1.
    bench("matmul", launch, c, lambda: a @ b, flops=2 * M * N * K)


if __name__ == "__main__":
    main()
