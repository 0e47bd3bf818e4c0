"""Warp specialization (tl.range(warp_specialize=...)) on Triton's own
kernels, unchanged, each side with and without it, one config per row (the
same for both sides, no autotuning): tutorial 09's persistent matmul through
descriptors made in the kernel (not flattened, as the tutorial runs it
warp-specialized on Hopper) and tutorial 06's attention forward (its Hopper
path: descriptors made in the kernel when warp-specialized, host descriptors
otherwise). TFLOP/s. Needs the conformance folder (see tutorials.py).

    python benchmarks/warp_specialize.py [--only attention] [--d 128]
                                         [--attention-configs 128x64w4s2 128x128w8s2]
    python benchmarks/warp_specialize.py --autotune [--d 128]

--autotune: tutorial 06's forward as its users call it (warp_specialize=False),
each side autotuned over the tutorial's own configs; tilec's autotuner also
times its fastest configs warp-specialized (Config.warp_specialize_loops).
"""

import argparse
import contextlib
import io
import os
import sys

import torch

os.environ["PYTEST_VERSION"] = "1"  # tutorial 06: the one config it keeps for its tests
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu import bench, load_kernels, safe  # noqa: E402
from tutorials import tutorial_path  # noqa: E402


def unwrap(kernel):
    while hasattr(kernel, "configs") or not hasattr(kernel, "arg_names"):
        kernel = kernel.fn  # under autotune or heuristics
    return kernel


def matmul(module, a, b, ws, BM, BN, BK, warps, stages):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    grid = (min(sms, -(-M // BM) * -(-N // BN)),)
    unwrap(module.matmul_kernel_descriptor_persistent)[grid](
        a, b, c, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8,
        EPILOGUE_SUBTILE=False, NUM_SMS=sms, WARP_SPECIALIZE=ws, FLATTEN=False,
        num_warps=warps, num_stages=stages)
    return c


def attention_config(text):
    """'128x64w4s2' -> (BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    size, rest = text.split("w")
    warps, stages = rest.split("s")
    bm, bn = size.split("x")
    return int(bm), int(bn), int(warps), int(stages)


def use_attention_config(module, config):
    """Tutorial 06's forward autotuner, left with one config of the same kind."""
    tuner = module._attn_fwd
    BM, BN, warps, stages = config
    tuner.configs = [type(tuner.configs[0])({"BLOCK_M": BM, "BLOCK_N": BN}, num_warps=warps,
                                            num_stages=stages, pre_hook=tuner.configs[0].pre_hook)]
    tuner.cache.clear()


def use_all_attention_configs(module):
    """Tutorial 06's forward autotuner with the tutorial's whole config list
    (its test config set aside), filtered by the tutorial's own `keep`."""
    tuner = module._attn_fwd
    Config, hook = type(tuner.configs[0]), tuner.configs[0].pre_hook
    configs = [Config({"BLOCK_M": BM, "BLOCK_N": BN}, num_stages=s, num_warps=w, pre_hook=hook)
               for BM in (64, 128) for BN in (32, 64, 128) for s in (2, 3, 4) for w in (4, 8)]
    tuner.configs = [c for c in configs if module.keep(c)]
    tuner.cache.clear()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["matmul", "attention"])
    parser.add_argument("--d", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--attention-configs", nargs="+", type=attention_config,
                        help="BMxBNwWARPSsSTAGES, each timed in turn (default: the tutorial's "
                             "test config, 128x64w4s2)")
    parser.add_argument("--autotune", action="store_true",
                        help="tutorial 06's forward autotuned over all its configs, ws=False")
    args = parser.parse_args()
    import triton  # Triton itself first: its compiled modules stay registered
    import triton.tools.tensor_descriptor  # noqa: F401  (Triton's own, for its side)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda",
                                                                 dtype=torch.int8))
    with contextlib.redirect_stdout(io.StringIO()):
        t09 = {"tilec": load_kernels("t09_tilec", True, tutorial_path("09-persistent-matmul.py")),
               "triton": load_kernels("t09_triton", False, tutorial_path("09-persistent-matmul.py"))}
        t06 = {"tilec": load_kernels("t06_tilec", True, tutorial_path("06-fused-attention.py")),
               "triton": load_kernels("t06_triton", False, tutorial_path("06-fused-attention.py"))}
    print(f"warp specialization, TFLOP/s (tilec / Triton); {torch.cuda.get_device_name()}")
    print(f"{'kernel':<44} {'ws':>5} {'tilec':>8} {'triton':>8} {'t/tri':>6}")

    def row(label, ws, run, flops, note=""):
        out = {who: safe(lambda: flops / bench(lambda: run(who)) * 1e-9) for who in t09}
        t, r = out["tilec"], out["triton"]
        ratio = f"{t / r:>6.2f}" if isinstance(t, float) and isinstance(r, float) else "     -"
        cells = " ".join(f"{v:>8.1f}" if isinstance(v, float) else f"{v:>8}" for v in (t, r))
        print(f"{label:<44} {str(ws):>5} {cells} {ratio}   {note or ''}", flush=True)

    M = N = 8192
    K = 4096
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    expect = a.float() @ b.float().T
    for BM, BN, BK, warps, stages in ((128, 256, 64, 8, 3), (128, 128, 64, 8, 4),
                                      (128, 128, 64, 4, 4)) if args.only != "attention" else ():
        for ws in (False, True):
            for who, module in t09.items():  # checked once, then timed
                got = safe(lambda: matmul(module, a, b, ws, BM, BN, BK, warps, stages))
                if not isinstance(got, str):
                    torch.testing.assert_close(got.float(), expect, atol=1.0, rtol=0.05)
            row(f"09 descriptor_persistent {BM}x{BN}x{BK} w{warps} s{stages}", ws,
                lambda who: matmul(t09[who], a, b, ws, BM, BN, BK, warps, stages),
                2.0 * M * N * K)

    Z, H = 4, 32
    if args.autotune:
        for module in t06.values():
            use_all_attention_configs(module)
        print(f"{'kernel (autotuned, ws=False)':<44} {'':>5} {'tilec':>8} {'triton':>8} "
              f"{'t/tri':>6}   tilec's config")
        for D in args.d:
            for n in (4096, 16384):
                for causal in (False, True):
                    attention(t06, row, "", Z, H, D, n, causal, (False,),
                              lambda: t06["tilec"]._attn_fwd.best_config)
        return
    for config in (args.attention_configs or [None]) if args.only != "matmul" else ():
        if config:
            for module in t06.values():
                use_attention_config(module, config)
        name = "{}x{}w{}s{} ".format(*config) if config else ""
        for D in args.d:
            for n in (4096, 16384):
                for causal in (False, True):
                    attention(t06, row, name, Z, H, D, n, causal)


def attention(t06, row, name, Z, H, D, n, causal, ws_values=(False, True), note=lambda: ""):
    """Tutorial 06's forward on both sides, checked against SDPA, then timed:
    a row for each warp_specialize value, with note() after it."""
    q, k, v = (torch.randn((Z, H, n, D), device="cuda", dtype=torch.float16) for _ in range(3))
    flops = 4.0 * Z * H * n * n * D * (0.5 if causal else 1.0)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.5)
    for ws in ws_values:
        for who, module in t06.items():
            got = safe(lambda: module.attention(q, k, v, causal, 0.5, ws))
            if not isinstance(got, str):
                torch.testing.assert_close(got, ref, atol=2e-2, rtol=0)
        row(f"06 fwd {name}D={D} N={n} causal={causal}", ws,
            lambda who: t06[who].attention(q, k, v, causal, 0.5, ws), flops, note())

if __name__ == "__main__":
    main()
