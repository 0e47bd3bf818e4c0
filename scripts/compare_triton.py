"""One kernel compiled by tilec and by Triton for the same config, side by side:
PTX size, static counts of the PTX instructions that say how a kernel moves
data (shared memory, barriers, async copies, TMA, tensor-core ops, shuffles,
global memory, spills), registers, shared memory and median run time. Each
side's PTX, IRs and cubin go to --out (default $OUT/compare, else /tmp/compare)
to be diffed. Runs on the GPU machine, except --ptx, which only counts files:

    python scripts/compare_triton.py attention --d 128 --n 4096 --causal
    python scripts/compare_triton.py matmul --m 4096 --n 4096 --k 4096 --block-k 64
    python scripts/compare_triton.py softmax --rows 16384 --cols 4096
    python scripts/compare_triton.py --ptx a.ptx [b.ptx]
"""

import argparse
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")

# What ptx_counts counts, in the order printed. Counts are static: an
# instruction in a loop body counts once, however many times it runs.
PTX_PATTERNS = (
    ("ld.shared", r"\bld\.shared\b"),
    ("st.shared", r"\bst\.shared\b"),
    ("bar.sync / barrier.sync", r"\b(?:bar|barrier)(?:\.cta)?\.sync\b"),
    ("cp.async (non-bulk copies)", r"\bcp\.async\.c[ag]\b"),
    ("cp.async.wait_group", r"\bcp\.async\.wait_(?:group|all)\b"),
    ("cp.async.bulk (TMA)", r"\bcp\.async\.bulk\.(?!commit_group|wait_group)"),
    ("wgmma.mma_async", r"\bwgmma\.mma_async\b"),
    ("wgmma.wait_group", r"\bwgmma\.wait_group\b"),
    ("mma.sync", r"\bmma\.sync\b"),
    ("ldmatrix", r"\bldmatrix\b"),
    ("stmatrix", r"\bstmatrix\b"),
    ("shfl", r"\bshfl\b"),
    ("ld.global", r"\bld\.global\b"),
    ("st.global", r"\bst\.global\b"),
    ("mbarrier", r"\bmbarrier\."),
    ("ld.local / st.local", r"\b(?:ld|st)\.local\b"),  # ptxas's own spills: "spills"
)
_COMPILED_PATTERNS = tuple((name, re.compile(pattern)) for name, pattern in PTX_PATTERNS)


def ptx_counts(ptx):
    """{what: count} for PTX text: its lines, its instructions (statements that
    are not directives), and each of PTX_PATTERNS, comments left out."""
    counts = {"PTX lines": len(ptx.splitlines()), "PTX instructions": 0}
    counts.update((name, 0) for name, _ in PTX_PATTERNS)
    for line in ptx.splitlines():
        code = line.split("//", 1)[0].strip()
        if not code:
            continue
        if code.endswith(";") and not code.startswith("."):
            counts["PTX instructions"] += 1
        for name, pattern in _COMPILED_PATTERNS:
            counts[name] += len(pattern.findall(code))
    return counts


def print_table(columns, ratio_of=None, ratio_heading="ratio"):
    """columns: {heading: {row: value}}, rows in the first column's order. With
    ratio_of=(a, b), a last column a/b where both are numbers and b is not 0."""
    headings = list(columns)
    rows = list(next(iter(columns.values())))
    width = max(len(r) for r in rows) + 2
    wide = max(12, *(len(h) + 2 for h in headings))
    line = f"{'':<{width}}" + "".join(f"{h:>{wide}}" for h in headings)
    print(line + (f"{ratio_heading:>{wide + 4}}" if ratio_of else ""))
    for row in rows:
        values = [columns[h].get(row, "-") for h in headings]
        cells = "".join(f"{format_value(v):>{wide}}" for v in values)
        if ratio_of:
            a, b = (columns[h].get(row) for h in ratio_of)
            numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
            cells += f"{(f'{a / b:.2f}' if numeric and b else '-'):>{wide + 4}}"
        print(f"{row:<{width}}{cells}")


def format_value(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# --- kernels: each builds its inputs from the options and returns
# (compiled kernel, run), run() launching it once and returning its output.

def build_attention(triton, kernels, opts):
    import torch
    n = opts.n or 4096
    shape = (opts.batch, opts.heads, n, opts.d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
    config = (opts.block_m or 128, opts.block_n or 64, opts.warps or 4, opts.stages or 3)
    sm_scale = 1.0 / math.sqrt(opts.d)
    compiled = kernels.forward(q, k, v, opts.causal, sm_scale, *config)[2]
    return compiled, lambda: kernels.forward(q, k, v, opts.causal, sm_scale, *config)[0]


def build_matmul(triton, kernels, opts):
    import torch
    m, n, k = opts.m or 4096, opts.n or 4096, opts.k or 4096
    bm, bn, bk = opts.block_m or 128, opts.block_n or 128, opts.block_k or 32
    if m % bm or n % bn:
        raise ValueError(f"matmul_kernel does not mask rows or columns: M ({m}) must be a "
                         f"multiple of BLOCK_M ({bm}), N ({n}) of BLOCK_N ({bn})")
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

    def run():
        return kernels.matmul_kernel[grid](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=opts.group,
            num_warps=opts.warps or 8, num_stages=opts.stages or 3)
    return run(), lambda: (run(), c)[1]


def build_softmax(triton, kernels, opts):
    import torch
    x = torch.randn(opts.rows, opts.cols, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(opts.cols)
    warps = opts.warps or (8 if block >= 2048 else 4)

    def run():
        return kernels.softmax_kernel[(opts.rows,)](y, x, x.stride(0), y.stride(0), opts.cols,
                                                   BLOCK=block, num_warps=warps,
                                                   num_stages=opts.stages or 3)
    return run(), lambda: (run(), y)[1]


# name -> (file under benchmarks/ holding the kernel, builder, the options it reads)
KERNELS = {
    "attention": ("attention_kernels.py", build_attention,
                  ("batch", "heads", "n", "d", "causal", "block_m", "block_n", "warps", "stages")),
    "matmul": ("triton_kernels.py", build_matmul,
               ("m", "n", "k", "block_m", "block_n", "block_k", "group", "warps", "stages")),
    "softmax": ("triton_kernels.py", build_softmax, ("rows", "cols", "warps", "stages")),
}


def compile_side(who, kernel, opts):
    """{row: value} for one side, its compiled kernel and its output; prints and
    returns None for the row values when it fails."""
    import tilec
    import torch
    import triton
    from gpu import bench, load_kernels
    filename, build, _ = KERNELS[kernel]
    kernels = load_kernels(f"compare_{who}_{kernel}", who == "tilec", filename)
    torch.manual_seed(0)  # both sides get the same inputs
    try:
        compiled, run = build(tilec if who == "tilec" else triton, kernels, opts)
        out = run()
        torch.cuda.synchronize()
        compiled._init_handles()  # loaded already; sets n_regs where ptxas did not say
        ms = bench(run, reps=opts.reps)
    except Exception as e:  # one side failing still shows the other
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"{who}: fail: {type(e).__name__}: {first}")
        return None, None, None
    row = ptx_counts(compiled.asm.get("ptx", ""))
    row.update({"registers": compiled.n_regs, "spills": compiled.n_spills,
                "shared memory (bytes)": compiled.metadata.shared,
                "num_stages": compiled.metadata.num_stages, "median time (ms)": ms})
    return row, compiled, out


def write_asm(folder, kernel, who, compiled):
    """Every text and binary form the compiled kernel holds, as KERNEL.WHO.KIND."""
    written = []
    for kind, value in compiled.asm.items():
        path = os.path.join(folder, f"{kernel}.{who}.{kind}")
        if isinstance(value, str):
            with open(path, "w") as f:
                f.write(value)
        elif isinstance(value, (bytes, bytearray)):
            with open(path, "wb") as f:
                f.write(value)
        else:
            continue
        written.append(os.path.basename(path))
    return written


def compare(opts):
    sys.path.insert(0, BENCHMARKS)
    import gpu  # noqa: F401  (first: points both caches at fresh folders)
    import torch
    import triton
    print(f"{opts.kernel} on {torch.cuda.get_device_name()}, triton {triton.__version__}; "
          f"options: {describe(opts)}")
    os.makedirs(opts.out, exist_ok=True)
    columns, outputs = {}, {}
    for who in ("tilec", "triton"):
        row, compiled, out = compile_side(who, opts.kernel, opts)
        if row is None:
            continue
        columns[who], outputs[who] = row, out
        print(f"{who}: wrote {', '.join(write_asm(opts.out, opts.kernel, who, compiled))} "
              f"to {opts.out}")
    if not columns:
        return 1
    print_table(columns, ("tilec", "triton") if len(columns) == 2 else None, "tilec/triton")
    if len(outputs) == 2:
        diff = (outputs["tilec"].float() - outputs["triton"].float()).abs().max().item()
        print(f"max |tilec - triton| of the outputs: {diff:.3g}")
    print("spills: tilec, bytes of spill stores plus spill loads (ptxas's report); Triton, "
          "local memory per thread in 32-bit words. The ld.local / st.local row is the PTX's own "
          "local memory, before ptxas spills.")
    return 0 if len(columns) == 2 else 1


def describe(opts):
    """The options the kernel reads, "default" where its builder picks."""
    names = KERNELS[opts.kernel][2]
    return ", ".join(f"{name}={'default' if getattr(opts, name) is None else getattr(opts, name)}"
                     for name in names)


def count_files(paths):
    columns = {}
    for path in paths:
        with open(path) as f:
            heading = os.path.basename(path) if os.path.basename(path) not in columns else path
            columns[heading] = ptx_counts(f.read())
    print_table(columns, tuple(columns) if len(columns) == 2 else None, "1st/2nd")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("kernel", nargs="?", choices=sorted(KERNELS))
    parser.add_argument("--ptx", nargs="+", metavar="FILE", help="only count these PTX files")
    parser.add_argument("--out", default=os.path.join(os.environ["OUT"], "compare")
                        if os.environ.get("OUT") else "/tmp/compare")
    parser.add_argument("--reps", type=int, default=30, help="timed repetitions")
    parser.add_argument("--block-m", type=int)
    parser.add_argument("--block-n", type=int)
    parser.add_argument("--block-k", type=int, help="matmul")
    parser.add_argument("--warps", type=int)
    parser.add_argument("--stages", type=int)
    group = parser.add_argument_group("attention")
    group.add_argument("--d", type=int, default=64, choices=(64, 128), help="head size")
    group.add_argument("--n", type=int, help="sequence length (matmul: N); default 4096")
    group.add_argument("--causal", action="store_true")
    group.add_argument("--batch", type=int, default=4)
    group.add_argument("--heads", type=int, default=16)
    group = parser.add_argument_group("matmul")
    group.add_argument("--m", type=int)
    group.add_argument("--k", type=int)
    group.add_argument("--group", type=int, default=8, help="GROUP_M")
    group = parser.add_argument_group("softmax")
    group.add_argument("--rows", type=int, default=16384)
    group.add_argument("--cols", type=int, default=4096)
    opts = parser.parse_args(argv)
    if opts.ptx and len(opts.ptx) > 2:
        parser.error("--ptx takes one or two files")
    if not opts.ptx and not opts.kernel:
        parser.error("name a kernel, or give --ptx FILE [FILE]")
    return opts


def main(argv=None):
    opts = parse_args(argv)
    if opts.ptx:
        return count_files(opts.ptx)
    return compare(opts)


if __name__ == "__main__":
    sys.exit(main())
