"""How long ptxas takes on tilec's PTX and on Triton's for the same kernels:
tutorial 06's backward and forward (its code unchanged, the launch's
specialization: 16-divisible sizes and strides, the last stride 1), each PTX
file assembled by both assemblers (tilec takes CUDA's ptxas, Triton bundles
its own), with the registers and stack each reports. ptxas is most of a cold
first launch for both compilers. Runs on the GPU machine; the PTX files go to
$OUT (default /tmp/ptxas_times).

    python scripts/ptxas_times.py
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
os.environ["PYTEST_VERSION"] = "1"  # the tutorial's test config: no autotuning

from gpu import load_kernels  # noqa: E402
from tutorials import tutorial_path  # noqa: E402

import tilec  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

BWD_SIGNATURE = dict(Q="*fp16", K="*fp16", V="*fp16", sm_scale="fp32", DO="*fp16", DQ="*fp16",
                     DK="*fp16", DV="*fp16", M="*fp32", D="*fp32", stride_z="i32",
                     stride_h="i32", stride_tok="i32", H="i32", N_CTX="i32")


def kernels():
    """(name, kernel name, signature, constexprs, num_warps, num_stages, 16-divisible:
    for a host descriptor, its shape and strides, as a launch finds them)."""
    for d, causal in ((64, False), (128, False), (128, True)):
        constexprs = dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32,
                          BLK_SLICE_FACTOR=2, HEAD_DIM=d, CAUSAL=causal)
        yield (f"bwd D={d}{' causal' if causal else ''}", "_attn_bwd", BWD_SIGNATURE, constexprs,
               4, 5, ["stride_z", "stride_h", "stride_tok", "N_CTX"])
    for d, causal in ((64, False), (128, False), (128, True)):
        q, kv = f"tensordesc<fp16[128, {d}]>", f"tensordesc<fp16[64, {d}]>"
        signature = dict(sm_scale="fp32", M="*fp32", Z="i32", H="i32", desc_q=q, desc_k=kv,
                         desc_v=kv, desc_o=q, N_CTX="i32")
        constexprs = dict(HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, FP8_OUTPUT=False,
                          STAGE=3 if causal else 1, warp_specialize=False, IS_HOPPER=True)
        yield (f"fwd D={d}{' causal' if causal else ''}", "_attn_fwd", signature, constexprs,
               4, 3, ["N_CTX", "desc_q", "desc_k", "desc_v", "desc_o"])


def jit_function(module, name):
    fn = getattr(module, name)
    while hasattr(fn, "configs") or not hasattr(fn, "arg_names"):  # under autotune
        fn = fn.fn
    return fn


def triton_ptx(fn, signature, constexprs, warps, stages, divisible):
    full = {name: signature.get(name, "constexpr") for name in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if (name in divisible and not signature[name].startswith("tensordesc"))
             or signature.get(name, "").startswith("*")}
    compiled = triton.compile(ASTSource(fn, full, constexprs, attrs),
                              target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": warps, "num_stages": stages})
    return compiled.asm["ptx"]


def assemble(ptxas, path):
    """(ms, 'N registers, ... stack') of one ptxas run."""
    start = time.perf_counter()
    run = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", path + ".cubin"],
                         capture_output=True, text=True)
    ms = (time.perf_counter() - start) * 1e3
    used = [line.split("Used")[-1].strip() for line in run.stderr.splitlines() if "Used" in line]
    return ms, (used[-1] if used else run.stderr.strip()[-120:])


def main():
    out = os.path.join(os.environ.get("OUT", "/tmp"), "ptxas_times")
    os.makedirs(out, exist_ok=True)
    path = tutorial_path("06-fused-attention.py")
    sides = {"triton": load_kernels("t06_triton", False, path),
             "tilec": load_kernels("t06_tilec", True, path)}
    assemblers = {"CUDA's": tilec._C.find_ptxas(),
                  "Triton's": os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                           "bin", "ptxas")}
    for label, ptxas in assemblers.items():
        version = subprocess.run([ptxas, "--version"], capture_output=True, text=True)
        print(f"{label} ptxas: {version.stdout.strip().splitlines()[-1]}")
    print(f"{'kernel':<18} {'PTX':<7} {'lines':>6} " +
          " ".join(f"{label + ' ptxas':>15}" for label in assemblers) + "   registers, stack")
    for name, kernel, signature, constexprs, warps, stages, divisible in kernels():
        ptx = {}
        try:
            ptx["triton"] = triton_ptx(jit_function(sides["triton"], kernel), signature,
                                       constexprs, warps, stages, divisible)
            ptx["tilec"] = tilec.compile(jit_function(sides["tilec"], kernel), signature,
                                         constexprs, target="sm_90a", num_warps=warps,
                                         num_stages=stages, divisible_by_16=divisible).asm["ptx"]
        except Exception as e:  # noqa: BLE001  (one kernel's failure does not stop the table)
            print(f"{name:<18} failed: {type(e).__name__}: {str(e)[:160]}")
            continue
        for who in ("tilec", "triton"):
            stem = f"{kernel}_{name.replace(' ', '_').replace('=', '')}_{who}"
            file = os.path.join(out, stem + ".ptx")
            with open(file, "w") as f:
                f.write(ptx[who])
            runs = [assemble(p, file) for p in assemblers.values()]
            print(f"{name:<18} {who:<7} {ptx[who].count(chr(10)):>6} " +
                  " ".join(f"{ms:>12.0f} ms" for ms, _ in runs) + f"   {runs[0][1]}", flush=True)


if __name__ == "__main__":
    main()
