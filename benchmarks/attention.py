"""Flash attention forward on the GPU: one FA2 kernel (attention_kernels.py)
compiled by tilec and by Triton, against torch's SDPA (flash backend), fp16, over
head sizes, sequence lengths and causal masking. Each side runs the same few
tile configurations and keeps its fastest correct one. Prints a table of TFLOP/s
and the cold compile times; `--quick` runs N=4096 only; `--plot DIR` draws
DIR/attention.png; `--autotune` instead lets each side's autotuner pick among
TUNED_CONFIGS, as a library shipping the kernel with @triton.autotune would."""

import argparse
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu import bench, load_kernels  # noqa: E402  (sets fresh cache folders: cold compiles)

# (BLOCK_M, BLOCK_N, num_warps, num_stages), the same list for tilec and Triton.
CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3))
ATOL = 1e-2  # against SDPA, fp16 outputs
# Z * N = TOKENS: the batch shrinks as sequences grow, so that every launch has
# Z * H * N = 256k query rows (2048 programs of 128) and its work grows with N.
TOKENS = 16384
HEADS = 16
WHO = ("tilec", "triton", "torch")


def shapes(quick):
    """(Z, H, N, D, causal) of each row of the table."""
    for d in (64, 128):
        for causal in (False, True):
            for n in ((4096,) if quick else (1024, 2048, 4096, 8192, 16384)):
                yield max(1, TOKENS // n), HEADS, n, d, causal


def tflops(shape, ms):
    z, h, n, d, causal = shape
    flops = 4 * z * h * n * n * d  # two matmuls of 2*N*N*D each
    return flops * (0.5 if causal else 1.0) / ms / 1e9


def fail(e):
    lines = str(e).strip().splitlines() or [""]
    return f"fail: {type(e).__name__}: {lines[0][:160]}"


def flash_only():
    """A context in which SDPA may only use its flash backend."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:  # torch before 2.3
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                              enable_mem_efficient=False)


def sdpa(q, k, v, causal, sm_scale):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                            scale=sm_scale)


def cold_compile(module, q, k, v, causal, sm_scale):
    """Wall time (ms) of the first launch of CONFIGS[0], compile included, and
    the compiled kernel; or a failure line."""
    try:
        start = time.perf_counter()
        _, _, compiled = module.forward(q, k, v, causal, sm_scale, *CONFIGS[0])
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1e3
        compiled._init_handles()  # loaded already; sets n_regs where ptxas did not say
        return ms, compiled
    except Exception as e:  # shown in the summary, the table goes on
        return fail(e), None


def best_config(module, shape, q, k, v, ref, sm_scale):
    """(TFLOP/s, config, max error) of the fastest config whose output matches
    `ref`, or None; and a line for each way the others failed."""
    causal = shape[4]
    best, failures = None, {}  # failure line -> the configs that gave it
    for config in CONFIGS:
        try:
            out = module.forward(q, k, v, causal, sm_scale, *config)[0]
            err = (out.float() - ref.float()).abs().max().item()
            if not err <= ATOL:  # NaN too
                failures.setdefault(f"wrong: max error {err:.1e}", []).append(config)
                continue
            ms = bench(lambda c=config: module.forward(q, k, v, causal, sm_scale, *c), reps=20)
        except Exception as e:  # one config failing must not hide the others
            failures.setdefault(fail(e), []).append(config)
            continue
        if best is None or tflops(shape, ms) > best[0]:
            best = (tflops(shape, ms), config, err)
    return best, [f"{line} ({', '.join(map(config_name, configs))})"
                  for line, configs in failures.items()]


def tuned(module, shape, q, k, v, ref, sm_scale):
    """(TFLOP/s, the autotuner's pick, max error) of the autotuned kernel, as
    best_config answers (the tuning runs on the first call, off the clock)."""
    causal = shape[4]
    try:
        out, _, config = module.forward_tuned(q, k, v, causal, sm_scale)
        err = (out.float() - ref.float()).abs().max().item()
        if not err <= ATOL:
            return None, [f"wrong: max error {err:.1e}"]
        ms = bench(lambda: module.forward_tuned(q, k, v, causal, sm_scale), reps=20)
    except Exception as e:
        return None, [fail(e)]
    return (tflops(shape, ms), config, err), []


def torch_tflops(shape, q, k, v, sm_scale):
    """(TFLOP/s, None, None) of SDPA's flash backend, as best_config answers."""
    try:
        with flash_only():
            ms = bench(lambda: sdpa(q, k, v, shape[4], sm_scale), reps=20)
        return (tflops(shape, ms), None, None), []
    except Exception as e:
        return None, [fail(e)]


def config_name(config):
    if not isinstance(config, tuple):  # an autotuner's Config
        kw = config.kwargs
        name = f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{config.num_warps}x{config.num_stages}"
        return name + ("ws" if getattr(config, "warp_specialize_loops", False) else "")
    return "x".join(map(str, config))


def cell(result):
    return f"{result[0]:>8.1f}" if result else f"{'fail':>8}"


def print_row(shape, results):
    z, h, n, d, causal = shape
    tilec, triton = results["tilec"], results["triton"]
    ratio = f"{tilec[0] / triton[0]:>7.2f}" if tilec and triton else f"{'-':>7}"
    err = f"{tilec[2]:.0e}" if tilec else "-"
    configs = " ".join(f"{who}={config_name(results[who][1])}" for who in ("tilec", "triton")
                       if results[who])
    print(f"{z:>3} {h:>3} {n:>6} {d:>4} {'yes' if causal else 'no':>6} "
          f"{cell(tilec)} {cell(triton)} {cell(results['torch'])} {ratio} {err:>6}  {configs}",
          flush=True)


def plot(rows, folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    for ax, causal in zip(axes, (False, True)):
        picked = [(shape, res) for shape, res in rows if shape[4] == causal]
        labels = [f"D{shape[3]}\nN{shape[2]}" for shape, _ in picked]
        width = 0.8 / len(WHO)
        for i, who in enumerate(WHO):
            values = [res[who][0] if res[who] else 0.0 for _, res in picked]
            label = "torch SDPA (flash)" if who == "torch" else who
            ax.bar([x + (i - 1) * width for x in range(len(picked))], values, width, label=label)
        ax.set_xticks(range(len(picked)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_title(f"flash attention fwd fp16, {'causal' if causal else 'not causal'}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("TFLOP/s")
    axes[0].legend()
    fig.tight_layout()
    os.makedirs(folder, exist_ok=True)
    fig.savefig(os.path.join(folder, "attention.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="N=4096 only")
    parser.add_argument("--plot", default=None, metavar="DIR", help="save DIR/attention.png")
    parser.add_argument("--autotune", action="store_true",
                        help="each side's autotuner picks (no cold-compile table)")
    args = parser.parse_args()
    import triton
    modules = {"tilec": load_kernels("attention_tilec", True, "attention_kernels.py"),
               "triton": load_kernels("attention_triton", False, "attention_kernels.py")}
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}; configs (BLOCK_M, BLOCK_N, warps, stages): "
          f"{modules['tilec'].TUNED_CONFIGS if args.autotune else CONFIGS}"
          f"{', autotuned' if args.autotune else ''}")
    print(f"{'Z':>3} {'H':>3} {'N':>6} {'D':>4} {'causal':>6} {'tilec':>8} {'triton':>8} "
          f"{'sdpa':>8} {'t/tri':>7} {'err':>6}  best configs   (TFLOP/s)")
    torch.manual_seed(0)
    rows, cold = [], {}
    for shape in shapes(args.quick):
        z, h, n, d, causal = shape
        q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
        sm_scale = 1.0 / math.sqrt(d)
        with flash_only():
            ref = sdpa(q, k, v, causal, sm_scale)
        results, failures = {}, []
        for who, module in modules.items():
            if args.autotune:
                results[who], lines = tuned(module, shape, q, k, v, ref, sm_scale)
                failures += [f"   {who} {line}" for line in lines]
                continue
            if (who, d, causal) not in cold:
                cold[who, d, causal] = cold_compile(module, q, k, v, causal, sm_scale)
            results[who], lines = best_config(module, shape, q, k, v, ref, sm_scale)
            failures += [f"   {who} {line}" for line in lines]
        results["torch"], lines = torch_tflops(shape, q, k, v, sm_scale)
        failures += [f"   sdpa {line}" for line in lines]
        print_row(shape, results)
        for line in failures:
            print(line, flush=True)
        rows.append((shape, results))
        del q, k, v, ref
        torch.cuda.empty_cache()

    if args.autotune:
        return
    print(f"cold compile + first launch of {CONFIGS[0]} (fresh caches):")
    for (who, d, causal), (ms, compiled) in sorted(cold.items(), key=lambda i: i[0][1:]):
        where = f"  {who:<7} D={d:<4} causal={'yes' if causal else 'no ':<4}"
        if isinstance(ms, str):
            print(f"{where} {ms}")
            continue
        detail = ""
        if who == "tilec" and compiled.gpu is not None:
            gpu = compiled.gpu
            detail = (f"  (source->IR {compiled._compiled.compile_ms:.1f} ms, IR->PTX "
                      f"{gpu.emit_ms:.1f} ms, ptxas {gpu.assemble_ms:.1f} ms)")
        print(f"{where} {ms:8.1f} ms, {compiled.n_regs} regs, "
              f"{compiled.metadata.shared} B shared{detail}")
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {os.path.join(args.plot, 'attention.png')}")


if __name__ == "__main__":
    main()
