"""The GPU side of tilec: launches with CUDA tensors through the fast path,
kernel metadata, the driver API, streams, resources and the interpreter
switch. Where there is no GPU only the compile-only tests run."""

import os
import re
import subprocess
import tempfile
import threading

import numpy as np
import pytest

import tilec
import tilec.language as tl

from conftest import assert_destinations_distinct, gpu_available, gpu_ir_lines

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU")
needs_ptxas = pytest.mark.skipif(not tilec._C.find_ptxas(), reason="ptxas not found")
# A test of numbers on the CPU backend, and on the GPU where there is one.
ON_BOTH_BACKENDS = pytest.mark.parametrize(
    "device", ["cpu", pytest.param("cuda", marks=needs_gpu)])


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tilec.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * tl.load(y_ptr + offs) + tl.load(z_ptr + offs))


SCALE = 2.0


@tilec.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * SCALE, mask=m)


@tilec.jit
def big_dot_kernel(a_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, a))


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_compile_without_a_gpu(target):
    k = tilec.compile(add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                             "out_ptr": "*fp32", "n": "i32"},
                      constexprs={"BLOCK": 1024}, target=target, divisible_by_16=["n"])
    assert k.asm["tileir"].startswith("func") or "add_kernel" in k.asm["tileir"]
    assert f".target {target}" in k.asm["ptx"]
    assert ".visible .entry add_kernel" in k.asm["ptx"]
    assert len(k.asm["cubin"]) > 1000 and k.n_regs > 0 and k.n_spills == 0
    # aligned pointers, n a multiple of 16: 16-byte loads under a mask
    assert "ld.global.v4.f32" in k.asm["ptx"]
    assert k.metadata.target == target and k.metadata.num_warps == 4


@pytest.mark.parametrize("target,dtype,encoding", [("sm_90a", "*fp16", "#wgmma<"),
                                                   ("sm_80", "*fp16", "#mma<"),
                                                   ("sm_90a", "*fp32", "#wgmma<"),
                                                   ("sm_80", "*fp32", "#mma<")])
def test_gpu_ir_carries_the_accumulator_layout(target, dtype, encoding):
    """asm['tilegpu']: the kernel after the GPU layout passes. A tensor-core dot's
    accumulator layout is in its type; the loop carries it, from zeros made in it.
    (fp32 is tf32 by default: wgmma on sm_90a, mma.sync before.)"""
    sig = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": "*fp32", "K": "i32"}
    k = tilec.compile(staged_matmul, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                      target=target, divisible_by_16=["K"])
    gpu_ir = gpu_ir_lines(k)
    assert "gpu.convert_layout" not in k.asm["tileir"]
    converts = [i for i, line in enumerate(gpu_ir) if "gpu.convert_layout" in line]
    loop = next(i for i, line in enumerate(gpu_ir) if "= for(" in line)
    dot = next(line for line in gpu_ir if "= dot(" in line)
    # only the result moves, into the store's coalesced layout
    zeros = next(line for line in gpu_ir if "constant() {value = 0.0}" in line)
    assert encoding in zeros
    assert len(converts) == 1 and converts[0] > loop and "#blocked<" in gpu_ir[converts[0]]
    assert encoding in gpu_ir[loop] and encoding in dot
    if encoding == "#wgmma<":
        assert "wgmma.mma_async" in k.asm["ptx"]


def test_gpu_ir_is_printed_when_read():
    """asm['tilegpu'] is made from the kernel when first read (a compile does not
    print it), the same text every time, and asm reads as Triton's dict does."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    k = tilec.compile(staged_matmul, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                      target="sm_90a", divisible_by_16=["K"])
    assert "tilegpu" in k.asm and not dict.__contains__(k.asm, "tilegpu")
    text = k.asm.get("tilegpu")
    assert "pipeline_stages = 3" in text and "#wgmma0 = #wgmma<" in text
    # every tensor has a layout, named by an alias defined ahead of the function
    head, body = text.split("func @staged_matmul(")
    defined = {line.split(" = ")[0] for line in head.splitlines()}
    used = set(re.findall(r"tensor<[^,>]*(?:<[^>]*>)?, (#[a-z]+[0-9]+)>", body))
    assert used and used <= defined and body.count("tensor<") == body.count(", #")
    again = tilec.compile(staged_matmul, signature=sig,
                          constexprs={"BM": 64, "BN": 64, "BK": 32}, target="sm_90a",
                          divisible_by_16=["K"])
    assert set(again.asm) >= {"tileir", "tileir-sema", "tilegpu", "ptx"}
    assert dict(again.asm.items())["tilegpu"] == text and again.asm == k.asm
    assert len(again.asm) == len(list(again.asm)) and again.asm.get("ttgir") is None
    with pytest.raises(KeyError):
        again.asm["ttgir"]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_gpu_ir_reads_back_as_it_prints(target):
    """asm['tilegpu'] parses back (layout aliases, encodings, GPU ops and their
    attributes) and prints the same text: a matmul, attention in both its
    forms (pipelined, TMA on sm_90a) and a warp-specialized loop."""
    import test_kernels
    from tilec import _C
    kernels = [tilec.compile(staged_matmul, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                       "c_ptr": "*fp32", "K": "i32"},
                             constexprs={"BM": 64, "BN": 64, "BK": 32}, target=target,
                             divisible_by_16=["K"])]
    for name in ("attn_block_ptr_kernel", "attn_descriptor_kernel"):
        kernels.append(tilec.compile(
            getattr(test_kernels, name), target=target, num_warps=4, num_stages=3,
            signature={"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16",
                       "sm_scale": "fp32", "N": "i32"},
            constexprs={"D": 64, "BM": 128, "BN": 64, "CAUSAL": True},
            divisible_by_16=["Q", "K", "V", "Out", "N"], warp_specialize_loops=True))
    for k in kernels:
        text = k.asm["tilegpu"]
        assert text.startswith("#") and "gpu." in text
        assert _C.run_passes(text, []) == text


def test_dump_ir_prints_every_gpu_pass(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "k.py"
    script.write_text(
        "import tilec, tilec.language as tl\n"
        "@tilec.jit\n"
        "def k(x_ptr):\n"
        "    tl.store(x_ptr + tl.arange(0, 128), 1.0)\n"
        "tilec.compile(k, signature={'x_ptr': '*fp32'}, target='sm_80')\n")
    env = {**__import__("os").environ, "TILEC_DUMP_IR": "1"}
    err = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, check=True).stderr
    for name in ("gpu-assign-layouts", "gpu-coalesce", "gpu-propagate-layouts",
                 "gpu-remove-conversions", "gpu-pipeline-loops", "gpu-warp-specialize",
                 "gpu-allocate-shared", "gpu-insert-barriers"):
        assert f"IR after {name} (k, sm_80, 4 warps)" in err
    assert "#blocked<" in err.split("IR after gpu-coalesce")[1]


@needs_ptxas
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_hopper_runs_tf32_dots_on_wgmma(precision):
    """As Triton does on sm_90a: tf32 dots (three of them for tf32x3) on the
    warpgroup tensor cores, k 8 per instruction; "ieee" stays off the tensor
    cores, and 8-bit integers stay on mma.sync (faster there)."""
    k = tilec.compile(precision_dot, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32"},
                      target="sm_90a", num_warps=4,
                      constexprs={"BM": 64, "BN": 64, "BK": 32, "PREC": precision})
    ptx = k.asm["ptx"]
    lines = [line.strip() for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert lines and all("m64n64k8.f32.tf32.tf32" in line for line in lines)
    assert len(lines) == (3 if precision == "tf32x3" else 1) * 32 // 8
    assert "mma.sync" not in ptx
    int8 = tilec.compile(precision_dot, signature={"a": "*i8", "b": "*i8", "c": "*i32"},
                         target="sm_90a", num_warps=4,
                         constexprs={"BM": 64, "BN": 64, "BK": 32, "PREC": None})
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in int8.asm["ptx"]
    ieee = tilec.compile(precision_dot, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32"},
                         target="sm_90a", num_warps=4,
                         constexprs={"BM": 64, "BN": 64, "BK": 32, "PREC": "ieee"})
    assert "wgmma" not in ieee.asm["ptx"] and "mma.sync" not in ieee.asm["ptx"]


@needs_ptxas
def test_dot_tiles_are_loaded_in_16_byte_vectors_of_their_own_type():
    """A kernel's accesses share 16-byte vectors of its narrowest type (8
    elements where it stores fp16), except a dot's A and B tiles: fp32 ones
    take 4 elements a thread, so that 16 lanes read 256 contiguous bytes (with
    8, each sector was fetched twice, and a tf32 matmul ran at 0.55 of Triton)."""
    k = tilec.compile(precision_dot, signature={"a": "*fp32", "b": "*fp32", "c": "*fp16"},
                      target="sm_90a", num_warps=4,
                      constexprs={"BM": 64, "BN": 64, "BK": 32, "PREC": "tf32"})

    def vector(line):  # the elements a thread holds along the contiguous dim
        bases = re.search(r"reg=\[([^\]]*)\]", line).group(1).split()
        n = 1
        while n < 64 and f"(0,{n})" in bases:
            n *= 2
        return n

    ir = gpu_ir_lines(k)
    loads = [line for line in ir if " = load(" in line]
    assert len(loads) == 2 and all(vector(line) == 4 for line in loads)
    (store,) = [line for line in ir if "gpu.convert_layout" in line and "xf16" in line]
    assert vector(store) == 8


@needs_ptxas
def test_tf32_tiles_wgmma_reads_transposed_are_copied_ahead_element_by_element():
    """wgmma reads tf32 tiles K-major only: a [K][N] B (a plain fp32 `a @ b`)
    is copied ahead by 4-byte cp.async into its K-major tile, as Triton does,
    each vector's elements addressed from its first one's pointer (a pointer
    each: 64-bit registers enough to spill at 128x128x64), and the dot runs on."""
    import test_kernels
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    k = tilec.compile(test_kernels.matmul_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=3, divisible_by_16=["K", "stride_am", "stride_bk", "stride_cm"],
                      constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64,
                                  "stride_ak": 1, "stride_bn": 1, "stride_cn": 1})
    (body,) = loop_bodies(k.asm["ptx"])
    assert "ld.global" not in body and "st.shared" not in body
    assert body.count("cp.async.cg.shared.global") == 16  # A: 128x64 f32, 16 bytes a copy
    assert body.count("cp.async.ca.shared.global") == 64  # B: an element a copy
    assert len(re.findall(r"cp\.async\.ca\.shared\.global \[[^]]*\], \[%rd\d+\+\d+\]", body)) == 48
    assert "wgmma.wait_group.sync.aligned 1;" in body
    assert k.n_spills == 0


@needs_ptxas
def test_fp8_products_are_added_to_the_accumulator_in_f32_as_triton_does():
    """`acc += tl.dot(a, b)` of fp8 tiles is not folded into the dot (Triton's
    max_num_imprecise_acc default on Hopper): each dot sums its K block on the
    tensor cores, at their reduced precision, and the sum over blocks is an
    f32 add. fp16 dots fold as before."""
    import test_kernels
    sig = {"a_ptr": "*fp8e5", "b_ptr": "*fp8e5", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
           "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}
    blocks = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}
    k = tilec.compile(test_kernels.matmul_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=3, constexprs=blocks)
    (body,) = loop_bodies(k.asm["ptx"])
    assert "wgmma.mma_async" in body and "add.f32" in body
    assert "max_num_imprecise_acc = -1" in k.asm["tileir"]
    f16 = tilec.compile(test_kernels.matmul_kernel, target="sm_90a", num_warps=4, num_stages=3,
                        signature={**sig, "a_ptr": "*fp16", "b_ptr": "*fp16"}, constexprs=blocks)
    (body,) = loop_bodies(f16.asm["ptx"])
    assert "wgmma.mma_async" in body and "add.f32" not in body


@tilec.jit
def imprecise_acc_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr, SPAN: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] + rn[None, :] * K  # K-major, as fp8 wgmma reads B
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc=acc, max_num_imprecise_acc=SPAN)
        a_ptrs += BK
        b_ptrs += BK
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@needs_ptxas
@pytest.mark.parametrize("span", [None, 0, 32, 64, 128])
def test_max_num_imprecise_acc_adds_each_span_in_f32(span):
    """Hopper sums fp8 products on the tensor cores at reduced precision:
    with max_num_imprecise_acc=n each n of K go to fresh registers, added to
    the accumulator in f32 (0: every instruction's 32), as Triton does (its
    test counts the adds); by default the dot sums its K in place, running on."""
    k = tilec.compile(imprecise_acc_matmul, signature={"a_ptr": "*fp8e5", "b_ptr": "*fp8e5",
                                                        "c_ptr": "*fp32", "K": "i32"},
                      target="sm_90a", num_warps=4, num_stages=3,
                      constexprs={"BM": 64, "BN": 64, "BK": 128, "SPAN": span},
                      divisible_by_16=["K"])
    (body,) = loop_bodies(k.asm["ptx"])
    per_thread = 64 * 64 // 128
    adds = 0 if span is None else per_thread * 128 // max(span, 32)
    assert body.count("add.f32") == adds
    assert ("wgmma.wait_group.sync.aligned 1;" in body) == (span is None)  # runs on


@tilec.jit
def precision_dot(a, b, c, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  PREC: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    x = tl.load(a + rm[:, None] * BK + rk[None, :])
    y = tl.load(b + rk[:, None] * BN + rn[None, :])
    tl.store(c + rm[:, None] * BN + rn[None, :], tl.dot(x, y, input_precision=PREC))


@needs_ptxas
def test_fp_fusion_is_on_by_default_and_can_be_turned_off():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "out_ptr": "*fp32"}
    fused = tilec.compile(fma_kernel, signature=sig, constexprs={"BLOCK": 128})
    plain = tilec.compile(fma_kernel, signature=sig, constexprs={"BLOCK": 128},
                          enable_fp_fusion=False)
    assert "mul.f32" in fused.asm["ptx"] and "mul.rn.f32" not in fused.asm["ptx"]
    assert "mul.rn.f32" in plain.asm["ptx"] and "add.rn.f32" in plain.asm["ptx"]


def test_compile_rejects_an_unknown_type():
    with pytest.raises(ValueError, match="unknown pointer type"):
        tilec.compile(add_kernel, signature={"x_ptr": "*float", "y_ptr": "*fp32",
                                             "out_ptr": "*fp32", "n": "i32"},
                      constexprs={"BLOCK": 64}, target="cpu")


def test_fp8_below_sm89_is_a_clear_error():
    @tilec.jit
    def to_fp8(x_ptr, out_ptr):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv))

    with pytest.raises(tilec.CompilationError, match="need sm_89 or newer.*sm_80"):
        tilec.compile(to_fp8, signature={"x_ptr": "*fp32", "out_ptr": "*fp8e4nv"},
                      target="sm_80")



@tilec.jit
def loop_dot_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_moves_that_split_a_register_into_unread_parts_are_dropped():
    # f16 tiles are loaded in 32-bit words, split into halves, and staged for the
    # dot as words again: the halves nobody reads must not reach ptxas.
    k = tilec.compile(loop_dot_kernel, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                  "c_ptr": "*fp32", "K": "i32"},
                      constexprs={"BM": 64, "BN": 64, "BK": 32}, target="sm_90a", num_stages=1)
    lines = k.asm["ptx"].split("\n")
    splits = [line for line in lines if line.strip().startswith("mov.b32 {")]
    rest = "\n".join(line for line in lines
                     if line not in splits and not line.strip().startswith(".reg"))
    for line in splits:
        for reg in re.findall(r"%h\d+", line.split("}")[0]):
            assert re.search(re.escape(reg) + r"\b", rest), line


@tilec.jit
def half_acc_row_kernel(x_ptr, y_ptr, z_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    y = tl.load(y_ptr + r[:, None] * B + r[None, :])
    z = tl.dot(x, y, out_dtype=tl.float16) + tl.load(z_ptr + r)[None, :]
    tl.store(z_ptr + r[:, None] * B + r[None, :], z)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("B", [32, 64])
def test_tensor_core_results_go_to_distinct_registers(target, B):
    # The accumulator is updated in place: a register named twice among an
    # mma's or wgmma's results would hold only one of them.
    k = tilec.compile(half_acc_row_kernel, signature={"x_ptr": "*fp16", "y_ptr": "*fp16",
                                                      "z_ptr": "*fp16"},
                      constexprs={"B": B}, target=target)
    ptx = k.asm["ptx"]
    assert "mma.sync" in ptx or "mma_async" in ptx
    assert_destinations_distinct(ptx, f"half_acc_row_kernel on {target}")


def torch_cuda():
    import torch
    return torch


@needs_gpu
def test_fast_path_launches_and_returns_the_same_kernel():
    torch = torch_cuda()
    n = 10_007
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    k1 = add_kernel[grid](x, y, out, n, BLOCK=256)
    out.zero_()
    k2 = add_kernel[grid](x, y, out, n, BLOCK=256)
    assert k1 is k2
    assert torch.equal(out, x + y)
    assert k1.metadata.backend == "cuda" and k1.n_regs > 0
    assert "ptx" in k1.asm and "cubin" in k1.asm
    # another constexpr: another specialization
    k3 = add_kernel[grid](x, y, out, n, BLOCK=1024)
    assert k3 is not k1 and torch.equal(out, x + y)


@needs_gpu
def test_changed_constexpr_global_recompiles_on_the_fast_path():
    global SCALE
    torch = torch_cuda()
    x = torch.ones(10, device="cuda")
    scale_kernel[(1,)](x, 10, BLOCK=16)
    scale_kernel[(1,)](x, 10, BLOCK=16)
    assert torch.all(x == 4)
    SCALE = 3.0
    try:
        scale_kernel[(1,)](x, 10, BLOCK=16)
        assert torch.all(x == 12)
    finally:
        SCALE = 2.0


@tilec.jit
def tuple_add_kernel(pair, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x_ptr, y_ptr = pair
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@needs_gpu
def test_tuple_arguments_on_the_fast_path_and_in_the_interpreter(monkeypatch):
    torch = torch_cuda()
    n = 1000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros_like(x)
    k1 = tuple_add_kernel[(4,)]((x, y), out, n, BLOCK=256)
    k2 = tuple_add_kernel[(4,)]((y, y), out, n, BLOCK=256)  # the C++ fast path
    assert k1 is k2 and torch.equal(out, y + y)
    monkeypatch.setenv("TILEC_INTERPRET", "1")
    out.zero_()
    k3 = tuple_add_kernel[(4,)]((x, y), out, n, BLOCK=256)
    assert k3.metadata.backend == "cpu" and torch.equal(out, x + y)


@tilec.jit
def desc_double_kernel(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([pm * BM, pn * BN], src.load([pm * BM, pn * BN]) * 2)


@needs_gpu
def test_autotuning_compiles_every_config_before_timing_any(monkeypatch, tmp_path):
    """The configs are compiled on threads of their own (ptxas runs without the
    GIL) before the first is timed, each once: the arguments each compile read
    are those its launch has, a config pre_hook's descriptor block shape too."""
    torch = torch_cuda()
    from tilec.compiler import compiler
    from tilec.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))  # nothing read back from disk
    compiles, timings = [], []
    real_compile, real_bench = compiler.compile_gpu, tilec.testing.do_bench

    def counting_compile(*args, **kwargs):
        compiles.append((threading.get_ident(), len(timings)))
        return real_compile(*args, **kwargs)

    def counting_bench(fn, **kwargs):
        timings.append(fn)
        return real_bench(fn, **kwargs)

    monkeypatch.setattr(compiler, "compile_gpu", counting_compile)
    monkeypatch.setattr(tilec.testing, "do_bench", counting_bench)
    configs = [tilec.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4, 8)]
    tuned = tilec.autotune(configs, key=["n"])(tilec.jit(add_kernel.fn))  # nothing in memory
    n = 10_007
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    tuned[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    assert torch.equal(out, x + y)
    # (close configs are timed twice: at least one timing each)
    assert len(compiles) == len(configs) and len(timings) >= len(configs)
    assert all(timed_before == 0 for _, timed_before in compiles)
    assert threading.get_ident() not in {thread for thread, _ in compiles}

    def set_block(nargs):
        for name in ("src", "dst"):
            nargs[name].block_shape = [nargs["BM"], nargs["BN"]]

    compiles.clear()
    configs = [tilec.Config({"BM": bm, "BN": 32}, pre_hook=set_block) for bm in (16, 32, 64)]
    tuned = tilec.autotune(configs, key=[])(tilec.jit(desc_double_kernel.fn))
    x = torch.randn(96, 64, device="cuda")
    y = torch.zeros_like(x)
    src, dst = TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(y, [1, 1])
    tuned[lambda meta: (tilec.cdiv(96, meta["BM"]), tilec.cdiv(64, meta["BN"]))](src, dst)
    assert torch.equal(y, x * 2)
    assert len(compiles) == len(configs)


@needs_gpu
def test_autotuner_warmup_compiles_the_configs_on_threads(monkeypatch, tmp_path):
    """warmup compiles every config for the GPU, each once, on other threads,
    runs nothing, and returns the kernels in the configs' order; launches then
    compile nothing more."""
    torch = torch_cuda()
    from tilec.compiler import compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    threads = []
    real_compile = compiler.compile_gpu

    def counting_compile(*args, **kwargs):
        threads.append(threading.get_ident())
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(compiler, "compile_gpu", counting_compile)
    configs = [tilec.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]
    tuned = tilec.autotune(configs, key=["n"])(tilec.jit(add_kernel.fn))
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros_like(x)
    kernels = tuned.warmup(x, y, out, n, grid=(1,))
    assert [(k.metadata.num_warps, k.gpu is not None) for k in kernels] == \
        [(c.num_warps, True) for c in configs]
    assert len(threads) == len(configs) and threading.get_ident() not in threads
    assert not out.any()
    tuned[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    assert torch.equal(out, x + y) and len(threads) == len(configs)


@needs_gpu
def test_host_tensor_descriptors_on_the_fast_path(monkeypatch):
    """Host TensorDescriptors (tutorial 06's) launch through the C++ fast path,
    keyed by block shape, padding and the sizes' and strides' divisibility."""
    torch = torch_cuda()
    from tilec.runtime import launch
    from tilec.tools.tensor_descriptor import TensorDescriptor

    def run(rows, cols, block):
        x = torch.randn(rows, cols, device="cuda")
        y = torch.zeros_like(x)
        grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(cols, block[1]))
        k = desc_double_kernel[grid](TensorDescriptor.from_tensor(x, block),
                                     TensorDescriptor.from_tensor(y, block), BM=block[0],
                                     BN=block[1])
        assert torch.equal(y, x * 2)
        return k

    k1 = run(64, 96, [16, 32])
    slow = launch.run_kernel
    monkeypatch.setattr(launch, "run_kernel", lambda *a: pytest.fail("took the slow path"))
    assert run(128, 64, [16, 32]) is k1  # other tensors and sizes, the same specialization
    monkeypatch.setattr(launch, "run_kernel", slow)
    k3 = run(50, 96, [16, 32])  # 50 rows: not a multiple of 16
    k4 = run(64, 96, [32, 32])  # another block shape
    assert k3 is not k1 and k4 is not k1 and k4 is not k3


@needs_gpu
def test_a_kernel_of_descriptors_is_tuned_by_the_gpus_clock(monkeypatch):
    """A kernel whose only tensors sit inside host TensorDescriptors (tutorial
    09's TMA matmuls) is timed by CUDA events. Timed by the CPU's clock it timed
    launches, and a config's queued runs were counted against the next one."""
    torch = torch_cuda()
    from tilec.tools.tensor_descriptor import TensorDescriptor

    def set_block(nargs):  # as tutorial 09's pre_hook: the descriptors take the config's tile
        for name in ("src", "dst"):
            nargs[name].block_shape = [nargs["BM"], nargs["BN"]]

    configs = [tilec.Config({"BM": bm, "BN": 32}, pre_hook=set_block) for bm in (16, 32)]
    tuned = tilec.autotune(configs, key=[])(desc_double_kernel)
    devices = []
    timed = tilec.testing.do_bench

    def recording_bench(fn, **kwargs):
        devices.append(kwargs.get("device"))
        return timed(fn, **kwargs)

    monkeypatch.setattr(tilec.testing, "do_bench", recording_bench)
    x = torch.randn(96, 64, device="cuda")
    y = torch.zeros_like(x)
    src, dst = TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(y, [1, 1])
    tuned[lambda meta: (tilec.cdiv(96, meta["BM"]), tilec.cdiv(64, meta["BN"]))](src, dst)
    # each config timed once, and again where the two come within 10%
    assert devices in (["cuda"] * 2, ["cuda"] * 4)
    assert torch.equal(y, x * 2)


@needs_gpu
def test_launch_on_a_side_stream():
    torch = torch_cuda()
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros_like(x)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)
        add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)
    s.synchronize()
    assert torch.equal(out, x + y)


@needs_gpu
def test_cpu_and_gpu_tensors_in_one_launch_is_an_error():
    torch = torch_cuda()
    x = torch.ones(16, device="cuda")
    y = torch.ones(16)
    with pytest.raises(RuntimeError, match="one device"):
        add_kernel[(1,)](x, y, x, 16, BLOCK=16)


@needs_gpu
def test_interpreter_switch_runs_cuda_tensors_on_the_cpu(monkeypatch):
    torch = torch_cuda()
    monkeypatch.setenv("TILEC_INTERPRET", "1")
    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    out = torch.zeros_like(x)
    k = add_kernel[(1,)](x, y, out, 100, BLOCK=128)
    assert k.metadata.backend == "cpu"
    assert torch.equal(out, x + y)


@needs_gpu
def test_driver_and_device_properties():
    from tilec.runtime import driver
    dev = driver.active.get_current_device()
    props = driver.active.utils.get_device_properties(dev)
    assert props["multiprocessor_count"] > 0 and props["warpSize"] == 32
    assert props["max_shared_mem"] >= 48 * 1024 and props["max_num_regs"] > 0
    assert driver.active.get_current_stream() is not None


@needs_gpu
def test_warmup_and_init_handles():
    torch = torch_cuda()
    x = torch.ones(64, device="cuda")
    k = add_kernel.warmup(x, x, x, 64, BLOCK=64, grid=(1,))
    assert k.metadata.backend == "cuda" and k.function is None
    k._init_handles()
    assert k.function is not None and k.n_regs > 0


@needs_gpu
def test_shared_memory_over_the_limit_is_out_of_resources():
    torch = torch_cuda()
    a = torch.ones(256, 256, device="cuda")
    c = torch.empty_like(a)
    with pytest.raises(tilec.OutOfResources, match="shared memory"):
        big_dot_kernel[(1,)](a, c, B=256)


@needs_gpu
def test_cuda_array_interface_arguments():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(64, dtype=cupy.float32)
    out = cupy.zeros(64, dtype=cupy.float32)
    add_kernel[(1,)](x, x, out, 64, BLOCK=64)
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(64) * 2.0)


@needs_gpu
def test_numpy_and_gpu_results_agree_for_the_examples():
    torch = torch_cuda()
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    import softmax
    rows, cols = 37, 781
    xs = torch.randn(rows, cols, device="cuda")
    ys = torch.empty_like(xs)
    softmax.softmax_kernel[(rows,)](ys, xs, cols, cols, cols, BLOCK=1024)
    host = xs.cpu().numpy()
    out = np.empty_like(host)
    softmax.softmax_kernel[(rows,)](out, host, cols, cols, cols, BLOCK=1024)
    np.testing.assert_allclose(ys.cpu().numpy(), out, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(ys, torch.softmax(xs, 1))


@tilec.jit
def staged_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@needs_ptxas
def test_stages_that_do_not_fit_fall_back_with_a_warning():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ce = {"BM": 256, "BN": 256, "BK": 64}
    k = tilec.compile(staged_matmul, signature=sig, constexprs=ce, target="sm_90a", num_stages=2,
                      num_warps=8, divisible_by_16=["K"])
    assert k.metadata.num_stages == 2 and "cp.async" in k.asm["ptx"]
    with pytest.warns(UserWarning, match="num_stages=6 needs more shared memory"):
        k = tilec.compile(staged_matmul, signature=sig, constexprs=ce, target="sm_90a",
                          num_stages=6, num_warps=8, divisible_by_16=["K"])
    assert 1 <= k.metadata.num_stages < 6
    assert k.metadata.shared <= 232448


@needs_ptxas
def test_maxnreg_caps_registers():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ce = {"BM": 128, "BN": 128, "BK": 32}
    k = tilec.compile(staged_matmul, signature=sig, constexprs=ce, target="sm_90a", num_warps=4,
                      divisible_by_16=["K"])
    capped = tilec.compile(staged_matmul, signature=sig, constexprs=ce, target="sm_90a",
                           num_warps=4, maxnreg=96, divisible_by_16=["K"])
    assert ".maxnreg 96" in capped.asm["ptx"] and ".maxnreg" not in k.asm["ptx"]
    assert k.n_regs > 96 >= capped.n_regs


@needs_ptxas
def test_n_spills_counts_local_memory_words_as_tritons_does():
    """Triton's n_spills is the local memory a thread uses, in 4-byte words
    (its stack frame), not the bytes spilled."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ce = {"BM": 128, "BN": 128, "BK": 32}
    k = tilec.compile(staged_matmul, signature=sig, constexprs=ce, target="sm_80", num_warps=4,
                      maxnreg=64, divisible_by_16=["K"])
    assert k.gpu.spill_bytes > 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        with open(path, "w") as f:
            f.write(k.asm["ptx"])
        log = subprocess.run([tilec._C.find_ptxas(), "-arch=sm_80", "-v", path, "-o",
                              path + ".cubin"], capture_output=True, text=True).stderr
    frame = int(re.search(r"(\d+) bytes stack frame", log).group(1))
    assert k.n_spills > 0 and k.n_spills * 4 == frame


class DLPackOnly:
    """An array that offers nothing but DLPack, as JAX arrays do."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


@needs_gpu
def test_dlpack_arguments():
    torch = torch_cuda()
    x = torch.arange(64, dtype=torch.float32, device="cuda")
    out = torch.zeros_like(x)
    add_kernel[(1,)](DLPackOnly(x), DLPackOnly(x), DLPackOnly(out), 64, BLOCK=64)
    assert torch.equal(out, 2 * x)


@tilec.jit
def checked_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be 100% positive")
    tl.device_print("x %d", x)


@needs_ptxas
def test_debug_asserts_and_prints_assemble():
    sig = {"x_ptr": "*fp32", "n": "i32"}
    plain = tilec.compile(checked_kernel, signature=sig, constexprs={"BLOCK": 64})
    checked = tilec.compile(checked_kernel, signature=sig, constexprs={"BLOCK": 64}, debug=True)
    assert "trap" not in plain.asm["ptx"]  # as in Triton: asserts only in debug mode
    assert "trap" in checked.asm["ptx"] and "vprintf" in checked.asm["ptx"]
    assert len(checked.asm["cubin"]) > 0


@needs_gpu
@pytest.mark.parametrize("assembler", ["ptxas", "nvjitlink", "driver"])
def test_every_assembler_runs_a_tensor_core_kernel(assembler, monkeypatch, tmp_path):
    """ptxas, else nvJitLink, else the driver's JIT: each makes a module that runs."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILEC_ASSEMBLER", assembler)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))  # nothing cached: each assembles

    dot_kernel = tilec.jit(staged_matmul.fn)  # a fresh kernel: nothing cached in memory

    a = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    c = torch.empty(64, 128, device="cuda")
    try:
        k = dot_kernel[(1,)](a, b, c, 256, BM=64, BN=128, BK=32)
    except RuntimeError as e:  # nvJitLink is an optional library
        if assembler == "nvjitlink" and "could not be loaded" in str(e):
            pytest.skip(str(e))
        raise
    assert k.gpu.assembler.lower() == ("" if assembler == "driver" else assembler)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-3)


_RANDOM_VS_TRITON = '''
import sys
import torch
import triton
import triton.language as ttl
sys.modules.pop("tilec.compat", None)
import tilec
import tilec.language as tl

assert triton is not tilec and "tilec" not in triton.__file__


def make(jit, lang):
    @jit
    def kernel(i_ptr, w_ptr, u_ptr, n_ptr, seed, n, BLOCK: lang.constexpr):
        offs = lang.program_id(0) * BLOCK + lang.arange(0, BLOCK)
        m = offs < n
        lang.store(i_ptr + offs, lang.randint(seed, offs), mask=m)
        lang.store(w_ptr + offs, lang.randint(seed, offs.to(lang.int64) * 7 + 2**35), mask=m)
        lang.store(u_ptr + offs, lang.rand(seed, offs), mask=m)
        lang.store(n_ptr + offs, lang.randn(seed, offs), mask=m)
    return kernel


n = 100003
outs = {}
for name, jit, lang in (("triton", triton.jit, ttl), ("tilec", tilec.jit, tl)):
    i = torch.empty(n, dtype=torch.int32, device="cuda")
    w = torch.empty(n, dtype=torch.int32, device="cuda")
    u = torch.empty(n, device="cuda")
    g = torch.empty(n, device="cuda")
    make(jit, lang)[(triton.cdiv(n, 1024),)](i, w, u, g, 987654321, n, BLOCK=1024)
    outs[name] = (i, w, u, g)
assert torch.equal(outs["triton"][0], outs["tilec"][0]), "randint differs"
assert torch.equal(outs["triton"][1], outs["tilec"][1]), "randint of 64-bit offsets differs"
assert torch.equal(outs["triton"][2], outs["tilec"][2]), "rand differs"
torch.testing.assert_close(outs["triton"][3], outs["tilec"][3], rtol=1e-5, atol=1e-5)
print("same bits")
'''


@needs_gpu
def test_random_numbers_match_triton_bit_for_bit(tmp_path):
    """Triton itself (where installed) and tilec, same seed and offsets, on the GPU."""
    import subprocess
    import sys
    try:
        import importlib.util
        if importlib.util.find_spec("triton") is None:
            pytest.skip("Triton is not installed")
    except ValueError:
        pytest.skip("triton is aliased to tilec in this process")
    script = tmp_path / "random_vs_triton.py"
    script.write_text(_RANDOM_VS_TRITON)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300)
    if "No module named 'triton'" in result.stderr:
        pytest.skip("Triton is not installed")
    assert result.returncode == 0 and "same bits" in result.stdout, result.stderr[-3000:]


# --- arguments as Triton takes them, on the GPU


@needs_gpu
def test_autograd_tensors_on_the_gpu():
    import torch
    base = torch.randn(300, device="cuda")
    leaf = torch.randn(257, device="cuda", requires_grad=True)
    kinds = {"leaf": leaf, "nonleaf": leaf * 2, "param": torch.nn.Parameter(base[:257].clone()),
             "offset view": base[43:]}
    for name, x in kinds.items():
        y = torch.randn(257, device="cuda")
        out = torch.empty(257, device="cuda", requires_grad=True)
        for _ in range(2):  # the first launch compiles, the second takes the fast path
            add_kernel[(3,)](x, y, out, 257, BLOCK=128)
        torch.testing.assert_close(out.detach(), x.detach()[:257] + y, msg=name)


@needs_gpu
def test_autograd_function_launches_kernels():
    import torch

    class Add(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            out = torch.empty_like(x)
            add_kernel[(tilec.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
            return out

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    x = torch.randn(1000, device="cuda", requires_grad=True)
    y = torch.randn(1000, device="cuda", requires_grad=True)
    out = Add.apply(x, y)
    out.sum().backward()
    torch.testing.assert_close(out, x + y)
    assert torch.equal(x.grad, torch.ones_like(x))


@needs_gpu
def test_fp8_and_zero_dim_tensors_on_the_gpu():
    import torch

    @tilec.jit
    def copy_scaled(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m).to(tl.float32) * tl.load(s_ptr)
        tl.store(out_ptr + offs, x, mask=m)

    for dtype in (torch.float8_e5m2, torch.float8_e4m3fn):
        x = torch.tensor([0.5, -1.0, 2.0, 3.0], device="cuda").to(dtype)
        out = torch.empty(4, device="cuda")
        copy_scaled[(1,)](x, torch.tensor(2.0, device="cuda"), out, 4, BLOCK=4)
        torch.testing.assert_close(out, x.float() * 2)


@needs_gpu
def test_warmup_kernel_launched_with_all_arguments():
    """Tutorial 02: warmup(), then kernel[grid](...) with the constexprs passed too."""
    import torch
    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    out = torch.empty_like(x)
    kernel = add_kernel.warmup(x, y, out, 100, BLOCK=128, grid=(1,))
    kernel._init_handles()
    kernel[(1, 1, 1)](x, y, out, 100, 128)
    torch.testing.assert_close(out, x + y)
    out.zero_()
    kernel[(1,)](x, y, out, 100)
    torch.testing.assert_close(out, x + y)
    with pytest.raises(TypeError, match="runtime arguments or all 5"):
        kernel[(1,)](x, y, out)


@needs_gpu
def test_grid_limits_on_the_gpu():
    import torch
    x = torch.zeros(4, device="cuda")
    add_kernel[(1,)](x, x, x, 4, BLOCK=4)
    with pytest.raises(ValueError, match="grid dimension 1 is 65536"):
        add_kernel[(1, 65536)](x, x, x, 4, BLOCK=4)


@tilec.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, b))


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_89", "sm_90a"])
@pytest.mark.parametrize("fp8", ["fp8e5", "fp8e4nv"])
def test_fp8_dot_assembles(target, fp8):
    """mma.sync on fp8 operands needs PTX ISA 8.4 (tutorial 03's fp8 matmul)."""
    k = tilec.compile(fp8_dot_kernel, signature={"a_ptr": f"*{fp8}", "b_ptr": f"*{fp8}",
                                                 "c_ptr": "*fp32"},
                      constexprs={"B": 64}, target=target)
    assert len(k.asm["cubin"]) > 1000


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3fn"])
def test_cublaslt_matmul_of_the_tutorials(dtype):
    import torch
    from tilec._native.libtriton import nvidia
    blas = nvidia.cublas.CublasLt(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"))
    a = torch.randn(64, 32, device="cuda").to(getattr(torch, dtype))
    b = torch.randn(48, 32, device="cuda").to(getattr(torch, dtype))
    c = torch.empty(64, 48, device="cuda", dtype=a.dtype)
    blas.matmul(a, b, c)
    ref = (a.float() @ b.float().T).to(a.dtype)
    torch.testing.assert_close(c.float(), ref.float(), rtol=0.07, atol=0.5)


def loop_bodies(ptx):
    """The PTX between each loop's head and end labels."""
    import re
    return re.findall(r"^\$L_for_\d+:\n(.*?)^\$L_for_end_\d+:", ptx, re.S | re.M)


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_a_deep_pipelines_first_stages_are_copied_by_a_loop(target):
    """num_stages-1 stages are copied before a pipelined loop's first
    iteration: two are written out, three or more are a loop of their own
    over the stages (one copy of each tile in the PTX), each stage into its
    own slot."""
    import re
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ptx = {}
    for stages in (3, 5):
        k = tilec.compile(staged_matmul, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                          target=target, num_stages=stages, divisible_by_16=["K"])
        assert k.metadata.num_stages == stages
        ptx[stages] = k.asm["ptx"]
    assert "$L_first_stages" not in ptx[3] and ptx[3].count("cp.async.commit_group") == 3
    (first,) = re.findall(r"^(\$L_first_stages_\d+):\n(.*?)^\t@%p\d+ bra \1;", ptx[5],
                          re.S | re.M)
    assert first[1].count("cp.async.commit_group") == 1
    assert re.search(r"setp\.lt\.u32 %p\d+, %r\d+, 4;", first[1])  # the slots 0..3
    (body,) = loop_bodies(ptx[5])
    assert body.count("cp.async.commit_group") == 1
    assert len(ptx[5].splitlines()) < len(ptx[3].splitlines())


@needs_ptxas
def test_a_pipeline_starts_after_every_reader_of_the_scratch_it_overlaps():
    """The epilogue's conversion reuses the stages' shared memory; the next
    tile's first copies (through the outer loop's back edge) wait for it."""
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    k = tilec.compile(test_kernels.persistent_matmul_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3, constexprs={"BM": 64, "BN": 64, "BK": 32},
                      divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])
    lines = [l.strip() for l in k.asm["ptx"].splitlines() if l.strip()]
    start = next(i for i, l in enumerate(lines) if l.startswith("// pipelined loads"))
    assert lines[start - 1] == "bar.sync 0;"
    assert any("ld.shared" in l for l in lines[start:])  # the epilogue reads scratch


@needs_ptxas
def test_cp_async_tiles_reach_wgmma_without_a_proxy_fence():
    """A pointer matmul's k loop on sm_90a: cp.async copies, wgmma reads; the
    wait and the barrier order them, as in Triton, with no fence.proxy.async
    (a MEMBAR.ALL.CTA) at every k step."""
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    k = tilec.compile(test_kernels.persistent_matmul_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3, constexprs={"BM": 128, "BN": 128, "BK": 64},
                      divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])
    body = next(b for b in loop_bodies(k.asm["ptx"]) if "wgmma.mma_async" in b)
    assert "cp.async.wait_group" in body and ("cp.async.ca" in body or "cp.async.cg" in body)
    assert "fence.proxy.async" not in body


def flattened_descriptor_matmul(split=False):
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32"}
    return tilec.compile(test_kernels.flat_descriptor_matmul_kernel, signature=sig,
                         target="sm_90a", num_warps=4, num_stages=3,
                         constexprs={"BM": 128, "BN": 128, "BK": 64, "PROGRAMS": 132,
                                     "SPLIT": split},
                         divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])


@needs_ptxas
@pytest.mark.parametrize("split", [False, True])
def test_a_flattened_tile_loop_keeps_one_pipeline_across_tiles(split):
    """tl.range(flatten=True): one loop over (tile, k step), its TMA copies
    running ahead across tiles; the dot asynchronous, its accumulator started
    again by wgmma's scale-d on a tile's first step (no select), the epilogue
    waiting for it in its branch."""
    import re
    k = flattened_descriptor_matmul(split)
    ptx = k.asm["ptx"]
    assert ptx.count("// pipelined loads") == 1
    loop = loop_bodies(ptx)[0]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in loop
    first = re.search(r"not\.pred (%p\d+), %p\d+;", loop).group(1)
    wgmmas = re.findall(r"wgmma\.mma_async\S* \{[^}]*\}, %rd\d+, %rd\d+, (%p\d+)", loop)
    assert wgmmas and wgmmas[0] == first and wgmmas[-1] != first
    assert "wgmma.wait_group.sync.aligned 1;" in loop
    epilogue = loop[loop.index("wgmma.wait_group.sync.aligned 1;"):]
    assert re.match(r"wgmma\.wait_group\.sync\.aligned 1;\n\t@!%p\d+ bra \$L_else_\d+;\n"
                    r"\twgmma\.wait_group\.sync\.aligned 0;", epilogue)
    assert "selp.f32" not in loop


@needs_ptxas
def test_a_flattened_loop_divides_only_when_the_tile_changes():
    """The copies step (tile, k step) on and keep the tile's offsets: the
    tile's divisions (the grouped order) run once per tile, in the branch
    taken when the tile changes, not at every k step. The body's own tile and
    k step (its first and last k step) are stepped too: no division at all."""
    import re
    loop = loop_bodies(flattened_descriptor_matmul().asm["ptx"])[0]
    # Leave out the branches: the epilogue's (its own tile index) and the one
    # computing the next tile's offsets.
    steady = re.sub(r"bra (\$L_(else|same_outer)_\d+);\n.*?^\1:", "", loop, flags=re.S | re.M)
    assert steady != loop and "cp.async.bulk.tensor" in steady
    divisions = [l for l in steady.splitlines() if "div.s32" in l or "rem.s32" in l]
    assert not divisions, divisions
    changes = re.search(r"bra \$L_same_outer_\d+;\n(.*?)^\$L_same_outer", loop, re.S | re.M)
    assert "div.s32" in changes.group(1)


@needs_ptxas
def test_a_flattened_loop_keeps_a_tiles_clamped_offsets():
    """Tutorial 09's pointer kernel clamps its tile's rows and columns
    (tl.where(offs < M, offs, 0)); the copies keep those vectors per tile
    (computed again only when the tile changes), not per k step."""
    import re
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "done_ptr": "*i32",
           "M": "i32", "N": "i32", "K": "i32", "step": "i32"}
    k = tilec.compile(test_kernels.flat_matmul_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3,
                      constexprs={"BM": 128, "BN": 128, "BK": 64, "FLATTEN": True, "CLAMP": True},
                      divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])
    loop = loop_bodies(k.asm["ptx"])[0]
    steady = re.sub(r"bra (\$L_(else|same_outer)_\d+);\n.*?^\1:", "", loop, flags=re.S | re.M)
    assert steady != loop and "cp.async.cg.shared.global" in steady
    assert "selp.b32" not in steady  # no clamping
    changes = re.search(r"bra \$L_same_outer_\d+;\n(.*?)^\$L_same_outer", loop, re.S | re.M)
    assert "selp.b32" in changes.group(1)


@needs_ptxas
def test_loads_no_dot_reads_are_copied_ahead_with_the_operands():
    """Rows of m and Di at a carried offset (tutorial 06's backward): copied
    with cp.async by one thread of those holding each element, stepped on by
    the loop's own amount, read back from the stage; no ld.global in the loop."""
    import test_kernels
    sig = {n: "*fp16" for n in ("K", "V", "Q", "DO")}
    sig.update({"M": "*fp32", "Di": "*fp32", "DK": "*fp32", "DV": "*fp32", "N": "i32"})
    k = tilec.compile(test_kernels.dkdv_loop_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=3, constexprs={"D": 64, "BM": 32, "BN": 64, "ROWS": True},
                      divisible_by_16=list(sig))
    loop = loop_bodies(k.asm["ptx"])[-1]
    assert "ld.global" not in loop
    assert "cp.async.ca.shared.global" in loop  # the rows (4 or 8 bytes a copy)
    assert "ld.shared" in loop


@needs_ptxas
@pytest.mark.parametrize("stages", [1, 3])
def test_a_loop_without_dots_copies_ahead_where_tl_range_asks(stages):
    """tl.range(num_stages=3) on a reduction loop: its loads go by cp.async
    into stages and are read back (no ld.global in the loop); the loop that
    stores runs as written, and so does one with num_stages=1."""
    import test_kernels
    sig = {"y_ptr": "*fp32", "x_ptr": "*fp32", "stats_ptr": "*fp32", "n": "i32"}
    k = tilec.compile(test_kernels.streamed_norm_kernel, signature=sig, target="sm_90a",
                      num_warps=4, constexprs={"BLOCK": 1024, "STAGES": stages},
                      divisible_by_16=["n"])
    reduce_loop, store_loop = loop_bodies(k.asm["ptx"])
    assert "ld.global" in store_loop and "cp.async" not in store_loop
    if stages == 1:
        assert "ld.global" in reduce_loop and "cp.async" not in reduce_loop
    else:
        assert "ld.global" not in reduce_loop
        assert "cp.async.cg.shared.global" in reduce_loop and "ld.shared" in reduce_loop
        assert "pipeline_stages = 3" in k.asm["tilegpu"]


@needs_ptxas
def test_a_column_major_block_pointer_copies_by_tma():
    """B read through a column-major block pointer (order (0, 1)) goes by TMA
    on sm_90a, as A does: its map sees the dims swapped (K innermost), and its
    copies name k second; on sm_80 both go by cp.async."""
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": 32}
    k = tilec.compile(test_kernels.col_major_b_matmul_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3, constexprs=consts,
                      divisible_by_16=["M", "N", "K"])
    assert "pipeline_stages = 3, pipeline_tma = 1" in k.asm["tilegpu"]
    (body,) = loop_bodies(k.asm["ptx"])
    assert body.count("cp.async.bulk.tensor.2d") == 2 and "cp.async.cg" not in body
    ws = tilec.compile(test_kernels.col_major_b_matmul_kernel, signature=sig, target="sm_90a",
                       num_warps=4, num_stages=3, constexprs=consts,
                       divisible_by_16=["M", "N", "K"], warp_specialize_loops=True)
    assert "gpu.produce" in ws.asm["tilegpu"]
    old = tilec.compile(test_kernels.col_major_b_matmul_kernel, signature=sig, target="sm_80",
                        num_warps=4, num_stages=3, constexprs=consts,
                        divisible_by_16=["M", "N", "K"])
    assert "pipeline_tma = 0" in old.asm["tilegpu"]


@needs_ptxas
@pytest.mark.parametrize("a_invariant", [False, True])
def test_dots_accumulating_in_place_run_on_only_behind_a_synchronous_dot(a_invariant):
    """With no synchronous wgmma dot in the loop nothing would wait for a dot
    left running before the next copies overwrite its stage: each one waits."""
    import test_kernels
    sig = {"A": "*fp16", "B": "*fp16", "D": "*fp16", "C": "*fp32", "E": "*fp32", "K": "i32"}
    k = tilec.compile(test_kernels.in_place_dots_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3,
                      constexprs={"BM": 64, "BN": 64, "BK": 64, "A_INVARIANT": a_invariant})
    (body,) = loop_bodies(k.asm["ptx"])
    dots = body.count("wgmma.commit_group")
    assert dots == (1 if a_invariant else 2)
    assert body.count("wgmma.wait_group.sync.aligned 0;") == dots


@needs_ptxas
def test_an_else_branch_reading_an_asynchronous_accumulator_waits_for_it():
    import re
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "snap_ptr": "*fp32", "M": "i32",
           "N": "i32", "K": "i32", "SNAP": "i32"}
    k = tilec.compile(test_kernels.carried_offsets_matmul_kernel, signature=sig,
                      target="sm_90a", num_warps=4, num_stages=3,
                      constexprs={"BM": 64, "BN": 64, "BK": 32, "CARRIED": False},
                      divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "snap_ptr", "M", "N", "K"])
    loop = loop_bodies(k.asm["ptx"])[0]
    assert "wgmma.wait_group.sync.aligned 1;" in loop  # the dot runs on
    other = re.search(r"^\$L_else_\d+:\n(.*)", loop, re.S | re.M).group(1)
    assert other.lstrip().startswith("wgmma.wait_group.sync.aligned 0;")


@needs_ptxas
def test_each_copied_pointer_moves_on_just_before_its_copy():
    """The next value of a pipelined pointer is computed before the cp.async
    that reads the current one: with every advance after all the copies,
    ptxas moved each copy's address through one register pair, every move
    waiting for the copy before it (29% of a matmul's stall samples)."""
    import re
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    k = tilec.compile(test_kernels.persistent_matmul_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=3, constexprs={"BM": 64, "BN": 64, "BK": 32},
                      divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])
    inner = loop_bodies(k.asm["ptx"])[-1]
    lines = inner.splitlines()
    copies = [i for i, l in enumerate(lines) if "cp.async.cg.shared.global" in l]
    assert copies
    for i in copies:
        src = re.search(r"\], \[(%rd\d+)\]", lines[i]).group(1)
        advance = re.compile(r"mad\.wide\.[su]32 %rd\d+, %r\d+, \d+, " + re.escape(src) + ";")
        assert any(advance.search(l) for l in lines[max(0, i - 4):i]), lines[i]


@needs_ptxas
def test_loads_feeding_two_dots_are_pipelined_once():
    """q^T and do of attention backward's dk/dv loop each feed one dot as
    loaded and another transposed: one cp.async copy into a tile both read."""
    import test_kernels
    sig = {"K": "*fp16", "V": "*fp16", "Q": "*fp16", "DO": "*fp16", "M": "*fp32", "Di": "*fp32",
           "DK": "*fp32", "DV": "*fp32", "N": "i32"}
    k = tilec.compile(test_kernels.dkdv_loop_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=3, constexprs={"D": 64, "BM": 32, "BN": 64},
                      divisible_by_16=["K", "V", "Q", "DO", "DK", "DV", "N"])
    (body,) = loop_bodies(k.asm["ptx"])
    assert body.count("cp.async.cg.shared.global") == 4  # 2 tiles of 32x64 fp16, 128 threads
    assert "ld.global" not in body and "st.shared" not in body and "ld.shared" not in body
    assert body.count("wgmma.mma_async") >= 4
    # dv and dk accumulate in place: their dots run on (the next synchronous
    # dot's wait covers them); only qk^T and dp^T, read at once, are waited for.
    assert body.count("wgmma.wait_group.sync.aligned 0;") == 2
    # At D=128 and 128 rows (dk and dv: 256 registers a thread) none runs on:
    # the operands they would keep live spill.
    k = tilec.compile(test_kernels.dkdv_loop_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=2, constexprs={"D": 128, "BM": 32, "BN": 128},
                      divisible_by_16=["K", "V", "Q", "DO", "DK", "DV", "N"])
    (body,) = loop_bodies(k.asm["ptx"])
    assert body.count("wgmma.wait_group.sync.aligned 0;") == 4


@needs_ptxas
@pytest.mark.parametrize("kernel_name", ["attn_block_ptr_kernel", "attn_descriptor_kernel"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_loop_moves_data_only_through_pipelined_copies(kernel_name, causal):
    import test_kernels
    kernel = getattr(test_kernels, kernel_name)
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
           "N": "i32"}
    k = tilec.compile(kernel, signature=sig, target="sm_90a", num_warps=4, num_stages=3,
                      constexprs={"D": 64, "BM": 128, "BN": 64, "CAUSAL": causal},
                      divisible_by_16=["Q", "K", "V", "Out", "N"])
    ptx = k.asm["ptx"]
    bodies = loop_bodies(ptx)
    assert len(bodies) == 1
    for body in bodies:
        # K and V arrive by TMA into the tiles wgmma reads: the block
        # pointers' base moves with the head (program_id(1) * N * D), a third
        # dim of their maps that each copy names; the scores, the softmax and p
        # stay in registers (p is wgmma's A operand).
        copy = ("cp.async.bulk.tensor.2d" if kernel_name == "attn_descriptor_kernel"
                else "cp.async.bulk.tensor.3d")
        assert copy in body and "cp.async.cg" not in body
        assert "ld.global" not in body and "st.shared" not in body and "ld.shared" not in body
        assert "wgmma.mma_async" in body
        assert any("}, {%r" in line for line in body.splitlines() if "wgmma.mma_async" in line)
    assert k.n_spills == 0


def _host_descriptor_attention(divisible):
    import test_kernels
    D, BM, BN = 64, 128, 64
    sig = {"desc_q": f"tensordesc<fp16[{BM}, {D}]>", "desc_k": f"tensordesc<fp16[{BN}, {D}]>",
           "desc_v": f"tensordesc<fp16[{BN}, {D}]>", "desc_o": f"tensordesc<fp16[{BM}, {D}]>",
           "sm_scale": "fp32", "N": "i32"}
    return tilec.compile(test_kernels.attn_host_descriptor_kernel, signature=sig,
                         target="sm_90a", num_warps=4, num_stages=2,
                         constexprs={"D": D, "BM": BM, "BN": BN, "CAUSAL": False},
                         divisible_by_16=list(sig) if divisible else ["N"])


@needs_ptxas
def test_host_descriptor_tiles_arrive_by_tma():
    """K and V of tutorial 06's loop: one thread copies each stage with TMA
    into the tiles wgmma reads; every thread waits on the stage's mbarrier."""
    k = _host_descriptor_attention(divisible=True)
    ptx = k.asm["ptx"]
    (body,) = loop_bodies(ptx)
    assert body.count("cp.async.bulk.tensor.2d") == 2  # K and V: 64 rows of 128 bytes each
    assert "mbarrier.try_wait.parity" in body and "mbarrier.arrive.expect_tx" in body
    assert "cp.async.cg" not in body and "ld.global" not in body and "st.shared" not in body
    # a tensor map each for Q (copied by TMA straight into the tile q @ k^T
    # reads), K, V (64-row boxes), then O's (stored by TMA, 128 rows)
    assert ptx.count(".param .align 64 .b8") == 4
    assert [m["box"] for m in k.metadata.tensor_maps] == [[128, 64], [64, 64], [64, 64],
                                                          [128, 64]]
    # Q arrives while the first stages are copied: the loop waits for it once
    # before its first iteration, with no register or st.shared on its way.
    head = ptx[:ptx.index(body)]
    assert "ld.global" not in head and "st.shared" not in head
    assert head.count("mbarrier.try_wait.parity") == 1
    assert k.n_spills == 0


def _descriptor_store(how, dtype="fp16", divisible=True, split=False):
    import test_kernels
    block = f"[64, {32 if split else 64}]"
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": f"*{dtype}",
           "c_desc": f"tensordesc<{dtype}{block}>" if how == "host" else f"*{dtype}",
           "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
    return tilec.compile(test_kernels.store_through_descriptor_kernel, signature=sig,
                         target="sm_90a", num_warps=4, num_stages=2,
                         constexprs={"BM": 64, "BN": 64, "BK": 32, "HOW": how, "SPLIT": split},
                         divisible_by_16=list(sig) if divisible else ["a_ptr", "b_ptr", "K"])


@needs_ptxas
@pytest.mark.parametrize("how", ["host", "in_kernel", "block_ptr"])
@pytest.mark.parametrize("dtype,blocks", [("fp16", 1), ("fp32", 2), ("fp8e4nv", 1)])
def test_tiles_go_out_by_tma(how, dtype, blocks):
    """An epilogue's store through a descriptor or block pointer: the threads
    write the tile to shared memory in the accumulator's own layout, and one
    thread copies it out, a 128-byte-wide column block per copy."""
    k = _descriptor_store(how, dtype)
    ptx = k.asm["ptx"]
    assert "st.global" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == blocks
    assert "cp.async.bulk.wait_group.read 0" in ptx
    # 64 rows of the tile's bytes, at most 128 (the swizzle) per copy
    bytes, box, swizzle = {"fp16": (2, [64, 64], 128), "fp32": (4, [64, 32], 128),
                           "fp8e4nv": (1, [64, 64], 64)}[dtype]
    assert k.metadata.tensor_maps[-1] == {"element_bytes": bytes, "box": box, "swizzle": swizzle}
    assert k.n_spills == 0


@needs_ptxas
def test_a_tma_store_returns_before_its_copy_has_read_the_tile():
    """In a loop over tiles the next tile's loop runs while the copy reads the
    last tile: the tile has shared memory of its own, the store first waits
    for the copy before it, and the kernel for the last one before it returns."""
    import re
    k = _descriptor_store("host")
    ptx = k.asm["ptx"]
    store = ptx[ptx.index("// TMA store"):]
    waits = [m.start() for m in re.finditer(r"cp\.async\.bulk\.wait_group\.read 0;", store)]
    assert len(waits) == 2
    assert waits[0] < store.index("bar.sync") < store.index("cp.async.bulk.tensor.2d.global")
    assert "bra.uni $L_for_1" in store[:waits[1]]  # no wait in the loop after the copy
    assert store[waits[1]:].split("\n")[1].strip() == "ret;"
    assert k.metadata.shared >= 64 * 64 * 2 + 2 * 2 * 64 * 32 * 2  # the tile, past two stages


@needs_ptxas
def test_two_tma_stores_of_one_loop_wait_for_their_own_copies():
    """Subtiled: each half's store waits for its own last copy, not for the
    other half's copy issued just before it."""
    ptx = _descriptor_store("host", split=True).asm["ptx"]
    assert ptx.count("cp.async.bulk.wait_group.read 1;") == 2
    assert ptx.count("cp.async.bulk.wait_group.read 0;") == 1  # before ret


@needs_ptxas
def test_a_tma_store_outside_loops_has_no_tile_of_its_own():
    """Attention's output store at the kernel's end: nothing runs while its
    copy reads the tile, so it stages in the scratch and waits there; a tile
    of its own would take 32 KiB at D=128 (one block per SM instead of two)."""
    import test_kernels
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
           "N": "i32"}
    k = tilec.compile(test_kernels.attn_descriptor_kernel, signature=sig, target="sm_90a",
                      num_warps=4, num_stages=2,
                      constexprs={"D": 128, "BM": 128, "BN": 64, "CAUSAL": False},
                      divisible_by_16=["Q", "K", "V", "Out", "N"])
    ptx = k.asm["ptx"]
    store = ptx[ptx.index("// TMA store"):]
    copy = store.index("cp.async.bulk.commit_group")
    assert "cp.async.bulk.wait_group.read 0" in store[copy:store.index("ret;")]
    # Q's resident tile (and its mbarrier) and two stages of K and V, no tile
    # for the store:
    assert k.metadata.shared <= 128 * 128 * 2 + 2 * 2 * 64 * 128 * 2 + 1024


@needs_ptxas
def test_tma_stores_give_their_tile_back_before_stages_go():
    """When stages and a tile of the store's own do not fit, the store stages
    its tile in the scratch and waits for its copy; the stages stay."""
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "c_desc": "tensordesc<fp32[128, 128]>",
           "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
    k = tilec.compile(test_kernels.store_through_descriptor_kernel, signature=sig,
                      target="sm_90a", num_warps=8, num_stages=3,
                      constexprs={"BM": 128, "BN": 128, "BK": 128, "HOW": "host"},
                      divisible_by_16=list(sig))
    ptx = k.asm["ptx"]
    assert "pipelined loads: 3 stages" in ptx and k.metadata.shared <= 232448
    store = ptx[ptx.index("// TMA store"):]
    copy = store.index("cp.async.bulk.commit_group")
    assert "cp.async.bulk.wait_group.read 0" in store[copy:store.index("bra.uni")]


@tilec.jit
def store_then_read_back_kernel(c_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                                SIGNAL: tl.constexpr):
    """A tile stored through a descriptor, then read back (or a flag raised):
    the TMA store must have landed, not only read its shared tile."""
    desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    tile = tl.full((BM, BN), 3.0, tl.float16)
    desc.store([0, 0], tile)
    if SIGNAL:
        tl.atomic_add(out_ptr, 1)
    else:
        back = tl.load(c_ptr + tl.arange(0, BN))
        tl.store(out_ptr + tl.arange(0, BN), back)


@needs_ptxas
@pytest.mark.parametrize("signal", [False, True])
def test_a_tma_store_read_back_later_lands_first(signal):
    k = tilec.compile(store_then_read_back_kernel,
                      signature={"c_ptr": "*fp16", "out_ptr": "*fp16" if not signal else "*i32",
                                 "M": "i32", "N": "i32"},
                      constexprs={"BM": 64, "BN": 64, "SIGNAL": signal}, target="sm_90a",
                      num_warps=4, divisible_by_16=["c_ptr", "out_ptr", "M", "N"])
    ptx = k.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert "cp.async.bulk.wait_group 0" in ptx and "fence.proxy.async.global" in ptx
    assert "wait_group.read" not in ptx


@needs_ptxas
def test_16_bit_integers_are_not_stored_by_tma():
    """i16 lives in 32-bit registers: the tile writer is for elements of register width."""
    k = _descriptor_store("block_ptr", "i16")
    assert "cp.async.bulk.tensor.2d.global" not in k.asm["ptx"]


@tilec.jit
def atomic_result_compared_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_add(x_ptr + offs, 1)
    tl.store(y_ptr + offs, tl.where(old == 5, 1, 2))


@needs_ptxas
def test_an_atomic_result_is_not_a_known_constant():
    """The atomic's result register starts at 0 but the atom writes it: the
    compare on it is emitted, not folded to `0 == 5`."""
    import re
    k = tilec.compile(atomic_result_compared_kernel, signature={"x_ptr": "*i32", "y_ptr": "*i32"},
                      constexprs={"BLOCK": 128}, target="sm_90a", num_warps=4,
                      divisible_by_16=["x_ptr", "y_ptr"])
    ptx = k.asm["ptx"]
    olds = re.findall(r"atom\.[\w.]+ (%r\d+),", ptx)
    assert olds
    assert all(re.search(r"setp\.\w+\.\w+ %p\d+, " + r + r"\b", ptx) for r in olds)


@needs_ptxas
@pytest.mark.parametrize("dtype", ["fp16", "fp8e4nv"])
def test_stores_with_unproven_strides_go_out_without_tma(dtype):
    k = _descriptor_store("in_kernel", dtype, divisible=False)
    assert "st.global" in k.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global" not in k.asm["ptx"]


@needs_ptxas
def test_descriptors_copy_by_tma_where_strides_are_16_byte_multiples():
    """TMA needs strides that are multiples of 16 bytes, and takes tiles of any
    size. compile() takes a tensordesc's strides as such (Triton's
    TensorDescriptor holds no other), sizes proven or not; a launch
    specializes each stride as it finds it, and without that proof no copy is
    a TMA one."""
    k = _host_descriptor_attention(divisible=False)
    (body,) = loop_bodies(k.asm["ptx"])
    assert body.count("cp.async.bulk.tensor.2d") == 2 and len(k.metadata.tensor_maps) == 4
    from tilec import _args
    from tilec.tools.tensor_descriptor import TensorDescriptor
    x = np.zeros((4, 72), np.float16)
    for strides, expected in (((72, 1), 8), ((64, 1), 16), ((36, 1), 1)):
        spec, _ = _args.specialize("d", TensorDescriptor(x, (4, 36), strides, [4, 16]), False,
                                   True)
        assert spec[5] == (1, 1, expected, 1)  # sizes 4 and 36, then the strides
    import test_kernels
    fields = {"desc_q": "desc", "desc_k": "desc", "desc_v": "desc", "desc_o": "desc"}
    specs = []
    for i, name in enumerate(test_kernels.attn_host_descriptor_kernel.arg_names):
        if name in fields:
            d = tilec.compiler.compiler._spec(name, "tensordesc<fp16[64, 64]>" if name in
                                              ("desc_k", "desc_v") else "tensordesc<fp16[128, 64]>",
                                              False)
            specs.append(d[:5] + ((1, 1, 1, 1),) + d[6:])  # strides unproven
        elif name == "sm_scale":
            specs.append(("float", "f32"))
        elif name == "N":
            specs.append(("int", "i32", 16))
        else:
            specs.append(("constexpr", {"D": 64, "BM": 128, "BN": 64, "CAUSAL": False}[name]))
    fn = test_kernels.attn_host_descriptor_kernel
    compiled, log = fn._compile_ir(tuple(specs), "sm_90a")
    gpu = tilec.compiler.compiler.gpu_kernel(fn, compiled, tuple(specs), log, "sm_90a",
                                             {**tilec.compiler.compiler.DEFAULT_GPU_OPTIONS,
                                              "num_stages": 2})
    assert "cp.async.bulk" not in gpu.ptx and gpu.tensor_maps == []


@needs_ptxas
def test_tensor_maps_survive_the_disk_cache():
    from tilec import _C
    k = _host_descriptor_attention(divisible=True)
    again = _C.gpu_kernel_from_bytes(k.gpu.to_bytes())
    assert again.tensor_maps == k.gpu.tensor_maps and len(again.tensor_maps) == 4
    assert again.to_bytes() == k.gpu.to_bytes()


@tilec.jit
def split_epilogue_kernel(a_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Tutorial 09's subtiled epilogue: the accumulator split in two halves."""
    r = tl.arange(0, BM)
    n = tl.arange(0, BN)
    a = tl.load(a_ptr + r[:, None] * 64 + tl.arange(0, 64)[None, :])
    b = tl.load(a_ptr + tl.arange(0, 64)[:, None] * BN + n[None, :])
    acc = tl.dot(a, b)
    acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
    half = r[:, None] * BN + tl.arange(0, BN // 2)[None, :]
    tl.store(c_ptr + half, acc0.to(tl.float16))
    tl.store(c_ptr + half + BN // 2, acc1.to(tl.float16))


@needs_ptxas
def test_a_split_of_the_accumulator_stays_in_registers():
    """split's lane mask (an iota reshaped and broadcast) is computed where the
    accumulator's registers are, not moved there through shared memory."""
    import re
    k = tilec.compile(split_epilogue_kernel, signature={"a_ptr": "*fp16", "c_ptr": "*fp16"},
                      constexprs={"BM": 128, "BN": 128}, target="sm_90a", num_warps=4)
    ptx = k.asm["ptx"]
    conversions = re.findall(r"// convert #\w+<(\S+)", ptx)
    assert not [c for c in conversions if c.count("x") == 2]  # no 3-D conversion
    # The halves lie along a register bit: the lane mask is known per register,
    # so its compares, selects and max-with-the-floor fold away.
    assert not re.findall(r"\b(?:selp|max)\.", ptx)
    assert len(re.findall(r"\bsetp\.", ptx)) <= 3


def _index_pointer_matmul():
    import test_kernels
    return tilec.compile(test_kernels.index_pointer_matmul_kernel,
                         signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
                                    "M": "i32", "N": "i32", "K": "i32"},
                         constexprs={"BM": 128, "BN": 128, "BK": 64}, target="sm_90a",
                         num_warps=4, num_stages=3,
                         divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])


@needs_ptxas
def test_no_instruction_computes_a_register_nobody_reads():
    """The lowering computes values for every register of a layout (each
    element's address) and uses only some (a vector's first); the unread ones
    are dropped from the PTX."""
    import re
    k = _index_pointer_matmul()
    body = k.asm["ptx"].split("{", 1)[1]
    pure = r"(?:add|sub|mul|mad|mov|cvt|setp|selp|xor|and|or|shl|shr|bfe|min|max)"
    written = re.findall(r"^\s*(?:@!?%p\d+ )?" + pure + r"[.\w]* (%[a-z]+\d+),", body, re.M)
    assert written
    reads = re.findall(r"%[a-z]+\d+", body)
    assert [r for r in set(written) if reads.count(r) < 2] == []  # each read besides its write


@needs_ptxas
def test_pointers_computed_from_the_loop_index_are_pipelined():
    k = _index_pointer_matmul()
    (body,) = loop_bodies(k.asm["ptx"])
    assert "cp.async.cg.shared.global" in body and "wgmma.mma_async" in body
    assert "ld.global" not in body and "st.shared" not in body


@tilec.jit
def hinted_rows_kernel(x_ptr, y_ptr, rows_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Rows gathered through an index whose runs only the hints tell."""
    r = tl.load(rows_ptr + tl.arange(0, BM))
    c = tl.max_contiguous(tl.multiple_of(tl.load(rows_ptr + BM + tl.arange(0, BN)), 16), 16)
    x = tl.load(x_ptr + r[:, None] * 256 + c[None, :])
    tl.store(y_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], x)


@needs_ptxas
def test_hints_let_loads_be_vectors():
    """tl.multiple_of / tl.max_contiguous reach the axis analysis, as in Triton."""
    k = tilec.compile(hinted_rows_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                     "rows_ptr": "*i32"},
                      constexprs={"BM": 16, "BN": 64}, target="sm_90a", num_warps=4)
    assert "ld.global.v4.b32" in k.asm["ptx"] or "ld.global.v4.f32" in k.asm["ptx"]


@tilec.jit
def late_load_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs  # read only after the loop
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        acc += i
    tl.store(y_ptr + offs, acc + tl.load(ptrs))


@needs_ptxas
def test_addresses_are_computed_where_an_access_reads_them():
    """Address arithmetic that only loads and stores read is computed at each
    access, for its vectors' first elements only: the load's addresses are
    not held across the loop, and each vector of 4 has one address."""
    k = tilec.compile(late_load_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                      constexprs={"BLOCK": 1024}, target="sm_90a", num_warps=4)
    ptx = k.asm["ptx"]
    loop_end = ptx.index("$L_for_end")
    assert "mad.wide" not in ptx[:loop_end] and "add.s64" not in ptx[:loop_end]
    assert ptx.count("ld.global.v4") == ptx.count("st.global.v4") == 2
    assert ptx.count("mad.wide") + ptx.count("add.s64") == 4  # one address per vector


@tilec.jit
def access_shapes_kernel(x_ptr, y_ptr, z_ptr, n, BM: tl.constexpr, BN: tl.constexpr):
    """Addresses and masks that only accesses read, in the shapes kernels use:
    row pointers plus column offsets read by a load and a store, a masked load
    with `other`, a splat stored through them, and a row copied through a
    pointer computed from another."""
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    rows = x_ptr + r[:, None] * BN
    ptrs = rows + c[None, :]
    mask = (r[:, None] < n) & (c[None, :] < BN - 8)
    x = tl.load(ptrs, mask=mask, other=-1.0)
    tl.store(y_ptr + r[:, None] * BN + c[None, :], x * 2, mask=mask)
    tl.store(z_ptr + r[:, None] * BN + c[None, :], 7.0, mask=r[:, None] < n)
    last = x_ptr + (BM - 1) * BN + tl.arange(0, BN)  # the last row, from the first
    tl.store(last, tl.load(last - (BM - 1) * BN) + 1)


@needs_ptxas
@pytest.mark.parametrize("target,warps", [("sm_80", 4), ("sm_90a", 1), ("sm_90a", 4), ("sm_90a", 8)])
def test_addresses_read_only_by_accesses_assemble(target, warps):
    """Each vector's address is computed, and no empty register is read
    (ptxas would reject the PTX)."""
    k = tilec.compile(access_shapes_kernel,
                      signature={"x_ptr": "*fp16", "y_ptr": "*fp16", "z_ptr": "*fp16", "n": "i32"},
                      constexprs={"BM": 32, "BN": 64}, target=target, num_warps=warps)
    ptx = k.asm["ptx"]
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    assert ", ]" not in ptx and "[]" not in ptx and ", ;" not in ptx


@ON_BOTH_BACKENDS
def test_addresses_read_only_by_accesses_read_the_right_elements(device):
    import torch
    BM, BN, n = 32, 64, 20
    x = torch.randn(BM * BN, device=device, dtype=torch.float16)
    y = torch.zeros_like(x)
    z = torch.zeros_like(x)
    expect_x = x.clone()
    access_shapes_kernel[(1,)](x, y, z, n, BM=BM, BN=BN, num_warps=4)
    r = torch.arange(BM, device=device)[:, None]
    c = torch.arange(BN, device=device)[None, :]
    mask = (r < n) & (c < BN - 8)
    x2 = expect_x.view(BM, BN)
    torch.testing.assert_close(y.view(BM, BN), torch.where(mask, x2 * 2, torch.zeros_like(x2)))
    torch.testing.assert_close(z.view(BM, BN), torch.where(r < n, torch.full_like(x2, 7.0),
                                                           torch.zeros_like(x2)))
    torch.testing.assert_close(x.view(BM, BN)[-1], expect_x[:BN] + 1)
    torch.testing.assert_close(x.view(BM, BN)[:-1], x2[:-1])


@ON_BOTH_BACKENDS
def test_addresses_computed_at_the_access_read_the_right_elements(device):
    import torch
    x = torch.randn(1024, device=device)
    y = torch.empty_like(x)
    late_load_kernel[(1,)](x, y, 5, BLOCK=1024)
    torch.testing.assert_close(y, x + 10)


@needs_ptxas
def test_16_bit_accumulators_go_to_shared_memory_by_whole_matrices():
    """A matmul's f16 epilogue stores its accumulator with stmatrix (16
    instructions for 128x128 at 4 warps, not 64 st.shared of two halves);
    a transposed one goes by transposed matrices (stmatrix.trans), and a
    loaded tile comes to the accumulator's layout by ldmatrix."""
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
           "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}
    k = tilec.compile(test_kernels.matmul_kernel, signature=sig, target="sm_90a", num_warps=4,
                      num_stages=3, constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    ptx = k.asm["ptx"]
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 16
    epilogue = ptx[ptx.index("stmatrix"):]
    assert "st.shared" not in epilogue
    sig = {n: "*fp16" for n in ("a_ptr", "b_ptr", "x_ptr", "y_ptr", "d_ptr", "c_ptr", "pt_ptr")}
    k = tilec.compile(test_kernels.dot_of_a_dot_kernel, signature=sig, target="sm_90a",
                      num_warps=4, constexprs={"M": 64, "N": 64, "K": 64, "P_IS_B": False})
    assert "mma.sync" not in k.asm["ptx"]  # wgmma: ldmatrix only converts
    assert "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in k.asm["ptx"]
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in k.asm["ptx"]  # x, to the accumulator's layout
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in k.asm["ptx"]  # y, to its transpose


def _warp_specialized_matmul(warps, BM, target="sm_90a"):
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    return tilec.compile(test_kernels.ws_persistent_matmul_kernel, signature=sig, target=target,
                         num_warps=warps, num_stages=3,
                         constexprs={"BM": BM, "BN": 64, "BK": 64, "PROGRAMS": 3},
                         divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "K"])


@needs_ptxas
@pytest.mark.parametrize("warps,BM", [(4, 64), (8, 128)])
def test_a_producer_warpgroup_issues_the_copies(warps, BM):
    """tl.range(warp_specialize=True) on sm_90a: a fifth (ninth) warpgroup's one
    thread issues every TMA copy into the ring; the kernel's warps wait for
    each slot, run wgmma and free the slot, syncing among themselves only.
    The producer hands most of its registers over (setmaxnreg)."""
    k = _warp_specialized_matmul(warps, BM)
    ptx = k.asm["ptx"]
    consumers = 32 * warps
    assert k.metadata.num_warps == warps + 4
    assert f".maxntid {consumers + 128}, 1, 1" in ptx
    assert "gpu.warp_specialize" in k.asm["tilegpu"] and "gpu.produce" in k.asm["tilegpu"]
    consumer_part, producer_part = ptx.split("\n$L_producer_")
    assert "cp.async.bulk.tensor.2d.shared::cluster" not in consumer_part
    assert producer_part.count("cp.async.bulk.tensor.2d.shared::cluster") == 2  # A and B
    setup, consumers_only = consumer_part.split(" bra $L_producer_")
    assert "bar.sync 0" in setup and "mbarrier.init" in setup  # every thread of the block
    assert "bar.sync 0" not in consumers_only
    (k_loop,) = [body for body in loop_bodies(consumer_part) if "wgmma.mma_async" in body]
    assert "mbarrier.try_wait.parity" in k_loop and "mbarrier.arrive.shared::cta" in k_loop
    assert "bar.sync" not in k_loop
    # Two blocks an SM where shared memory allows (as the kernel without the
    # producer would run), else one: the producer keeps 24 (40) registers.
    maxnreg, kept, taken = {4: (128, 24, 232), 8: (168, 40, 232)}[warps]
    assert f".maxnreg {maxnreg}\n" in ptx
    assert f"setmaxnreg.dec.sync.aligned.u32 {kept};" in producer_part
    assert f"setmaxnreg.inc.sync.aligned.u32 {taken};" in consumers_only
    assert k.n_spills == 0


def _attention(warps, **options):
    import test_kernels
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
           "N": "i32"}
    return tilec.compile(test_kernels.attn_descriptor_kernel, signature=sig, num_warps=warps,
                         num_stages=3, constexprs={"D": 128, "BM": 128, "BN": 64, "CAUSAL": True},
                         divisible_by_16=["Q", "K", "V", "Out", "N"], **options)


@needs_ptxas
def test_warp_specialize_loops_asks_for_every_outermost_pipelined_loop():
    """The launch option warp_specialize_loops (the autotuner's variant): as if
    tl.range(warp_specialize=True) marked each outermost loop that pipelines its
    loads, here attention's loop over the keys; nothing without it, or on sm_90."""
    ws = _attention(8, target="sm_90a", warp_specialize_loops=True)
    assert ws.metadata.num_warps == 12 and "gpu.warp_specialize" in ws.asm["tilegpu"]
    assert ws.asm["tilegpu"].count("ws_ring = 1") == 1
    for plain in (_attention(8, target="sm_90a"),
                  _attention(8, target="sm_90", warp_specialize_loops=True)):
        assert plain.metadata.num_warps == 8 and "gpu.warp_specialize" not in plain.asm["tilegpu"]
    # A kernel that asks for its own loop keeps it: the persistent matmul's tile loop.
    own = _warp_specialized_matmul(8, 128)
    import test_kernels
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    both = tilec.compile(test_kernels.ws_persistent_matmul_kernel, signature=sig,
                         target="sm_90a", num_warps=8, num_stages=3,
                         constexprs={"BM": 128, "BN": 64, "BK": 64, "PROGRAMS": 3},
                         divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "K"],
                         warp_specialize_loops=True)
    assert both.asm["ptx"] == own.asm["ptx"]

@needs_ptxas
def test_warp_specialized_rows_split_over_two_consumer_warpgroups_when_one_would_not_hold_them():
    """At 4 warps, one consumer warpgroup of attention at D=128 would hold a
    128x64 and a 128x128 f32 accumulator (192 registers a thread): its rows
    split over two warpgroups, the kernel laid out as at 8 warps (as Triton
    partitions it). At D=64 one warpgroup holds them (128), and keeps them."""
    import test_kernels
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
           "N": "i32"}

    def compile(d, bm, bn, warps):
        return tilec.compile(test_kernels.ws_attention_kernel, signature=sig, target="sm_90a",
                             num_warps=warps, num_stages=3, divisible_by_16=["N"],
                             constexprs={"D": d, "BM": bm, "BN": bn, "CAUSAL": False})
    split, eight = compile(128, 128, 64, 4), compile(128, 128, 64, 8)
    assert split.metadata.num_warps == 12 and split.asm["ptx"] == eight.asm["ptx"]
    kept = compile(64, 128, 64, 4)
    assert kept.metadata.num_warps == 8 and "gpu.warp_specialize" in kept.asm["tilegpu"]



@needs_gpu
def test_the_autotuner_times_warp_specialized_variants_on_hopper():
    """On sm_90a the fastest configs are timed again warp-specialized; the
    launch runs whichever was fastest, and its result is right."""
    torch = torch_cuda()
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warp specialization is sm_90a's")
    import test_kernels
    configs = [tilec.Config({"BM": 128, "BN": 64}, num_warps=8, num_stages=3),
               tilec.Config({"BM": 64, "BN": 64}, num_warps=4, num_stages=2)]
    tuned = tilec.autotune(configs, key=["N"])(test_kernels.attn_descriptor_kernel)
    heads, N, D = 3, 640, 128
    q, k, v = (torch.randn((heads, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
    out = torch.empty_like(q)
    tuned[lambda meta: (N // meta["BM"], heads)](q, k, v, out, 0.125, N, D=D, CAUSAL=True)
    timed = list(tuned.configs_timings)
    assert sorted(c.warp_specialize_loops for c in timed) == [False, False, True, True]
    assert all(c.warp_specialized() in timed for c in configs)
    assert tuned.best_config == min(timed, key=tuned.configs_timings.get)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.125)
    torch.testing.assert_close(out, ref, atol=2e-2, rtol=0)


@tilec.jit
def _scaled_copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) * 2, mask=offs < n)


@needs_gpu
def test_the_autotuner_times_close_configs_again(monkeypatch):
    """The configs within 10% of the fastest are timed a second time, slowest
    first, and ranked by the mean of both timings; a config far behind is
    timed once."""
    torch = torch_cuda()
    first = {64: 1.00, 128: 1.05, 256: 2.0, 512: 1.08}
    second = {64: 1.20, 128: 1.00, 512: 1.10}
    calls = []

    def scripted(fn, warmup=25, rep=100, quantiles=None, device=None, **_):
        fn()
        block = calls[-1]
        t = (second if calls.count(block) > 1 else first)[block]
        return [t, t, t]

    configs = [tilec.Config({"BLOCK": b}, num_warps=4) for b in first]
    tuned = tilec.autotune(configs, key=["n"])(_scaled_copy)
    original = tuned._bench

    def counted(args, grid, kwargs, config, failures):
        calls.append(config.kwargs["BLOCK"])
        return original(args, grid, kwargs, config, failures)

    monkeypatch.setattr(tuned, "_bench", counted)
    monkeypatch.setattr(tilec.testing, "do_bench", scripted)
    n = 1000
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    tuned[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](src, dst, n)
    assert calls[:4] == [64, 128, 256, 512] and calls[4:] == [512, 128, 64]
    assert tuned.best_config.kwargs["BLOCK"] == 128
    assert tuned.configs_timings[tuned.best_config] == [1.025] * 3
    assert tuned.configs_timings[configs[2]] == [2.0] * 3
    torch.testing.assert_close(dst, src * 2)


@needs_ptxas
def test_warp_specialize_is_a_hint_elsewhere():
    """Without sm_90a (setmaxnreg, wgmma) the loop runs as written, its tiles
    copied ahead by the kernel's own warps."""
    k = _warp_specialized_matmul(4, 64, target="sm_90")
    assert "gpu.warp_specialize" not in k.asm["tilegpu"]
    assert k.metadata.num_warps == 4 and ".maxntid 128, 1, 1" in k.asm["ptx"]
