"""The core kernels (vector add, softmax, matmul, layer norm, flash attention fp16 and
fp8, an attention-backward loop, persistent matmuls, warp-specialized ones) on
the GPU, at odd sizes with masks, for compute-sanitizer to watch; then, where the
conformance folder is, Triton's fused-attention (06) and persistent-matmul (09)
tutorials unchanged, one config each. Prints 'ok' when all match. (The training
kernels run under the sanitizer through their tests: scripts/gpu_check.sh.)"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import layer_norm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402

import tilec  # noqa: E402

dev = "cuda"
torch.manual_seed(0)  # the same data every run: a failure can be run again
n = 100_003
x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
out = torch.empty_like(x)
vector_add.add_kernel[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
assert torch.equal(out, x + y)

rows, cols = 37, 781
s = torch.randn(rows, cols, device=dev)
so = torch.empty_like(s)
softmax.softmax_kernel[(rows,)](so, s, cols, cols, cols, BLOCK=1024)
assert torch.allclose(so, torch.softmax(s, 1), atol=1e-6)

w, b = torch.randn(cols, device=dev), torch.randn(cols, device=dev)
lo = torch.empty_like(s)
layer_norm.layer_norm_fwd[(rows,)](s, lo, w, b, cols, cols, 1e-5, BLOCK=1024)
ref = torch.nn.functional.layer_norm(s, (cols,), w, b, 1e-5)
assert torch.allclose(lo, ref, atol=1e-4), (lo - ref).abs().max()

M, N, K = 128, 64, 96
a, bm = torch.randn(M, K, device=dev), torch.randn(K, N, device=dev)
c = torch.empty(M, N, device=dev)
matmul.matmul_kernel[(M // 64, N // 64)](a, bm, c, M, N, K, K, 1, N, 1, N, 1,
                                          BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
assert torch.allclose(c, a @ bm, rtol=1e-2, atol=1e-1), (c - a @ bm).abs().max()

# fp16 on the warpgroup tensor cores (sm_90a), pipelined, with a K tail
M, N, K = 256, 256, 200
a = torch.randn(M, K, device=dev, dtype=torch.float16)
bm = torch.randn(K, N, device=dev, dtype=torch.float16)
c = torch.empty(M, N, device=dev)
matmul.matmul_kernel[(M // 128, N // 128)](a, bm, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=128,
                                            BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
assert torch.allclose(c, a.float() @ bm.float(), rtol=1e-3, atol=1e-2)

# flash attention (tests/test_kernels.py): pipelined block pointers and tensor
# descriptors, p @ v left running across iterations, causal and not
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import test_kernels  # noqa: E402

heads, N, D = 2, 384, 64
q, k, v = (torch.randn(heads, N, D, device=dev, dtype=torch.float16) for _ in range(3))
for kernel in (test_kernels.attn_block_ptr_kernel, test_kernels.attn_descriptor_kernel):
    for causal in (False, True):
        o = torch.empty_like(q)
        kernel[(N // 128, heads)](q, k, v, o, 0.125, N, D=D, BM=128, BN=64, CAUSAL=causal,
                                  num_warps=4, num_stages=3)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                               scale=0.125)
        assert torch.allclose(o, ref, atol=1e-2), (kernel.__name__, causal, (o - ref).abs().max())

# fp8 attention as tutorial 06 writes it (fp8 wgmma, p from registers through
# shuffles), and attention backward's dk/dv loop (loads feeding two dots each)
q8, k8, v8 = (t.to(torch.float8_e5m2) for t in (q, k, v))
o = torch.empty(heads, N, D, device=dev, dtype=torch.float16)
test_kernels.attn_fp8_kernel[(N // 128, heads)](q8, k8, v8.transpose(1, 2).contiguous(), o, 0.125,
                                                N, D=D, BM=128, BN=64, CAUSAL=True,
                                                num_warps=4, num_stages=3)
ref = torch.nn.functional.scaled_dot_product_attention(q8.half(), k8.half(), v8.half(),
                                                       is_causal=True, scale=0.125)
# (p is rounded to e5m2 before p @ v: the tolerance is the test's, relative too.)
assert torch.allclose(o, ref, atol=0.1, rtol=0.1), (o - ref).abs().max()
kb, vb = (torch.randn(64, D, device=dev, dtype=torch.float16) * 0.5 for _ in range(2))
qb, dob = (torch.randn(96, D, device=dev, dtype=torch.float16) * 0.5 for _ in range(2))
dk, dv = (torch.empty(64, D, device=dev) for _ in range(2))
rows = torch.zeros(96, device=dev)  # (not read)
test_kernels.dkdv_loop_kernel[(1,)](kb, vb, qb, dob, rows, rows, dk, dv, 96, D=D, BM=32, BN=64,
                                    num_warps=4, num_stages=3)
pT = torch.exp2(kb.float() @ qb.float().T * 0.125)
assert torch.allclose(dv, pT.half().float() @ dob.float(), rtol=2e-2, atol=0.5)

# a persistent matmul: an outer loop over tiles around a pipelined loop and an
# epilogue whose scratch overlaps the stages (racecheck watches the back edge)
Mp, Np, Kp = 256, 128, 96
ap = torch.randn(Mp, Kp, device=dev, dtype=torch.float16)
bp = torch.randn(Kp, Np, device=dev, dtype=torch.float16)
cp = torch.empty(Mp, Np, device=dev, dtype=torch.float16)
test_kernels.persistent_matmul_kernel[(3,)](ap, bp, cp, Mp, Np, Kp, BM=64, BN=64, BK=32,
                                            num_warps=4, num_stages=3)
assert torch.allclose(cp.float(), ap.float() @ bp.float(), rtol=1e-2, atol=0.1)

# flattened persistent matmuls (tl.range(flatten=True)): one pipeline across
# tiles, pointer copies and TMA copies, the epilogue inside the loop
Mf, Nf, Kf = 200, 136, 200
af = torch.randn(Mf, Kf, device=dev, dtype=torch.float16)
bf = torch.randn(Kf, Nf, device=dev, dtype=torch.float16)
cf = torch.empty(Mf, Nf, device=dev, dtype=torch.float16)
done = torch.empty(5, device=dev, dtype=torch.int32)
test_kernels.flat_matmul_kernel[(5,)](af, bf, cf, done, Mf, Nf, Kf, 5, BM=64, BN=64, BK=32,
                                      FLATTEN=True, num_warps=4, num_stages=3)
assert torch.allclose(cf.float(), af.float() @ bf.float(), rtol=1e-2, atol=0.1)
bt = bf.T.contiguous()
for split in (False, True):
    cf.zero_()
    test_kernels.flat_descriptor_matmul_kernel[(3,)](af, bt, cf, Mf, Nf, Kf, BM=64, BN=64,
                                                     BK=64, PROGRAMS=3, SPLIT=split,
                                                     num_warps=4, num_stages=3)
    assert torch.allclose(cf.float(), af.float() @ bf.float(), rtol=1e-2, atol=0.1)

# warp-specialized (tl.range(warp_specialize=True)): a producer warpgroup fills
# a ring of slots by TMA; a persistent matmul (the ring across tiles) and an
# attention of two loops (the ring from one loop to the next)
for warps, BMw in ((4, 64), (8, 128)):
    cf.zero_()
    test_kernels.ws_persistent_matmul_kernel[(3,)](af, bt, cf, Mf, Nf, Kf, BM=BMw, BN=64, BK=64,
                                                   PROGRAMS=3, num_warps=warps, num_stages=3)
    tiles_m, tiles_n = -(-Mf // BMw), -(-Nf // 64)
    index = torch.zeros(tiles_m, tiles_n, device=dev)  # the kernel adds each tile's index
    for i in range(tiles_m * tiles_n):
        first = i // (2 * tiles_n) * 2
        rows_i = min(tiles_m - first, 2)
        index[first + i % (2 * tiles_n) % rows_i, i % (2 * tiles_n) // rows_i] = i
    index = index.repeat_interleave(BMw, 0).repeat_interleave(64, 1)[:Mf, :Nf]
    assert torch.allclose(cf.float(), af.float() @ bf.float() + index, rtol=1e-2, atol=0.1)
qw, kw, vw = (torch.randn(2, 384, 128, device=dev, dtype=torch.float16) for _ in range(3))
ow = torch.empty_like(qw)
test_kernels.ws_attention_kernel[(3, 2)](qw, kw, vw, ow, 0.125, 384, D=128, BM=128, BN=64,
                                         CAUSAL=True, num_warps=4, num_stages=3)
refw = torch.nn.functional.scaled_dot_product_attention(qw, kw, vw, is_causal=True, scale=0.125)
assert torch.allclose(ow.float(), refw.float(), atol=2e-2)


def tutorials():
    """Tutorial 06 forward and backward (D 64 and 128, causal and not) and
    tutorial 09's five matmuls, their code unchanged, at small sizes."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    from gpu import load_kernels
    from tutorials import tutorial_path
    try:
        paths = [tutorial_path(f) for f in ("06-fused-attention.py", "09-persistent-matmul.py")]
    except SystemExit:
        print("tutorials skipped: no conformance folder")
        return
    os.environ["PYTEST_VERSION"] = "1"  # tutorial 06 keeps its tests' config
    t06, t09 = (load_kernels(f"sanitize_t{i}", True, p) for i, p in zip((6, 9), paths))
    for d in (64, 128):
        for causal in (False, True):
            q, k, v = ((torch.randn(1, 2, 256, d, device=dev, dtype=torch.float16) * 0.5)
                       .requires_grad_() for _ in range(3))
            do = torch.randn_like(q)
            o = t06.attention(q, k, v, causal, 0.5, False)
            o.backward(do)
            o_ws = t06.attention(q.detach(), k.detach(), v.detach(), causal, 0.5, True)
            assert torch.allclose(o_ws, o.detach(), atol=2e-2)  # warp-specialized forward
            refs = [t.detach().float().requires_grad_() for t in (q, k, v)]
            # by matmuls (fp32 SDPA takes torch's memory-efficient kernels,
            # in which racecheck reports hazards of their own)
            scores = refs[0] @ refs[1].transpose(-1, -2) * 0.5
            if causal:
                scores = scores.masked_fill(
                    torch.ones(256, 256, device=dev, dtype=torch.bool).triu(1), float("-inf"))
            ref = torch.softmax(scores, -1) @ refs[2]
            ref.backward(do.float())
            assert torch.allclose(o.float(), ref, atol=2e-2), (d, causal, (o - ref).abs().max())
            for got, want in zip((q.grad, k.grad, v.grad), refs):
                assert torch.allclose(got.float(), want.grad, atol=5e-2), \
                    (d, causal, (got - want.grad).abs().max())
    a = torch.randn(512, 256, device=dev, dtype=torch.float16)
    b = torch.randn(256, 384, device=dev, dtype=torch.float16)
    bt = b.T.contiguous()  # [N, K], as the tutorial keeps it
    for name, call in (("matmul", lambda f: f(a, b)), ("matmul_persistent", lambda f: f(a, b)),
                       ("matmul_tma", lambda f: f(a, bt, False)),
                       ("matmul_tma_persistent", lambda f: f(a, bt, False)),
                       ("matmul_descriptor_persistent", lambda f: f(a, bt, False)),
                       ("matmul_descriptor_persistent", lambda f: f(a, bt, True))):
        for tuner in (getattr(t09, k) for k in dir(t09) if k.startswith("matmul_kernel")
                      and hasattr(getattr(t09, k), "configs")):
            tuner.configs = tuner.configs[:1]  # one config: no tuning runs
        c = call(getattr(t09, name))
        assert torch.allclose(c.float(), a.float() @ b.float(), rtol=1e-2, atol=0.1), name


tutorials()
torch.cuda.synchronize()
print("ok")
