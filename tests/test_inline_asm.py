"""tl.inline_asm_elementwise: PTX run on the GPU for each `pack` elements.

On the GPU each kernel runs and is checked against numpy. Elsewhere the CPU
backend refuses it with a clear error (it cannot run PTX), and the kernel is
assembled for sm_90a where ptxas is found."""

import numpy as np
import pytest

import tilec
import tilec.language as tl
import sys

import tilec.runtime.launch  # noqa: E402
pytestmark = pytest.mark.usefixtures("device")


def launch(device, kernel, grid, *args, **kwargs):
    """Runs the kernel on the GPU (True), or checks the CPU's refusal and that
    the kernel assembles (False)."""
    if device == "cuda":
        kernel[grid](*args, **kwargs)
        return True
    with pytest.raises(tilec.KernelError, match="only the NVIDIA backend can run"):
        kernel[grid](*args, **kwargs)
    if tilec._C.find_ptxas():
        values, options = kernel._bind(args, dict(kwargs))
        specs, _, _, _ = kernel._specialize(values)
        compiled = kernel._compile(specs, "sm_90a", tilec.runtime.launch.gpu_options(options))
        assert compiled.asm["cubin"] and "inline asm" in compiled.asm["ptx"]
    return False


@tilec.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=m)


def test_one_int32_per_invocation(device, rng):
    n = 300
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    if launch(device, shift_kernel, (tilec.cdiv(n, 128),), x, out, n, BLOCK=128):
        np.testing.assert_array_equal(out, x << 3)


@tilec.jit
def triton_doc_kernel(a_ptr, b_ptr, c_ptr, d_ptr, n, BLOCK: tl.constexpr):
    """The example of Triton's documentation: four uint8 in one register."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
        args=[a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(c_ptr + offs, c, mask=m)
    tl.store(d_ptr + offs, d, mask=m)


def test_packed_uint8_and_two_results(device, rng):
    n = 61
    a = rng.integers(0, 256, n).astype(np.uint8)
    b = (rng.standard_normal(n) * 200).astype(np.float32)
    c, d = np.zeros(n, np.int32), np.zeros(n, np.float32)
    if launch(device, triton_doc_kernel, (1,), a, b, c, d, n, BLOCK=64):
        np.testing.assert_array_equal(c, a.astype(np.int32))
        np.testing.assert_array_equal(d, np.maximum(a.astype(np.float32), b))


@tilec.jit
def half_kernel(x_ptr, out_ptr, PACK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if PACK == 2:
        y = tl.inline_asm_elementwise("neg.f16x2 $0, $1;", "=r,r", [x], dtype=tl.float16,
                                      is_pure=True, pack=2)
    else:
        y = tl.inline_asm_elementwise("neg.f16 $0, $1;", "=h,h", [x], dtype=tl.float16,
                                      is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("pack", [1, 2])
def test_float16_alone_and_in_pairs(device, rng, pack):
    x = rng.standard_normal(128).astype(np.float16)
    out = np.zeros(128, np.float16)
    if launch(device, half_kernel, (1,), x, out, PACK=pack, BLOCK=128):
        np.testing.assert_array_equal(out, -x)


@tilec.jit
def mixed_kernel(x_ptr, y_ptr, out_ptr, big_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    # a float register, a scalar broadcast against a tensor, and a 64-bit register
    z = tl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, $3;", "=f,f,f,f",
                                  [x, y, s], dtype=tl.float32, is_pure=True, pack=1)
    w = tl.inline_asm_elementwise("mul.lo.s64 $0, $1, 3;", "=l,l", [offs.to(tl.int64)],
                                  dtype=tl.int64, is_pure=True, pack=1)
    tl.store(out_ptr + offs, z)
    tl.store(big_ptr + offs, w)


def test_float_and_64_bit_registers_and_a_scalar(device, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    out, big = np.zeros(64, np.float32), np.zeros(64, np.int64)
    if launch(device, mixed_kernel, (1,), x, y, out, big, 1.5, BLOCK=64):
        ref = (x.astype(np.float64) * y + np.float32(1.5)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=1e-6)
        np.testing.assert_array_equal(big, np.arange(64) * 3)


@tilec.jit
def int8_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("add.s16 $0, $1, 100;", "=h,h", [x], dtype=tl.int8,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


def test_int8_in_a_16_bit_register_wraps(device, rng):
    x = rng.integers(-128, 128, 32).astype(np.int8)
    out = np.zeros(32, np.int8)
    if launch(device, int8_kernel, (1,), x, out, BLOCK=32):
        np.testing.assert_array_equal(out, (x.astype(np.int32) + 100).astype(np.int8))


@tilec.jit
def no_args_kernel(out_ptr):
    v = tl.inline_asm_elementwise("mov.u32 $0, 41;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)
    tl.store(out_ptr, v + 1)


def test_no_arguments_gives_a_scalar(device):
    out = np.zeros(1, np.int32)
    if launch(device, no_args_kernel, (1,), out):
        assert out[0] == 42


@tilec.jit
def misuse_kernel(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if CASE == 0:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    elif CASE == 1:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=h,h", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    elif CASE == 2:
        y = tl.inline_asm_elementwise("mov.b32 $0, $2;", "=r,r", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    elif CASE == 3:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,0", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    else:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                      is_pure=True, pack=3)
    tl.store(x_ptr + tl.arange(0, 16), y)


@pytest.mark.parametrize("case,message", [
    (0, "the constraints name 1 outputs and 2 inputs, but with pack=1 the results need 1 "
        "output registers and the args 1 input registers"),
    (1, "operand $0 ('h') is a 16-bit register, but it holds 32 bits (1 x f32); use 'r' or 'f'"),
    (2, "the asm names $2, but there are only 2 operands"),
    (3, "tied operands are not supported"),
    (4, "pack must be a constexpr power of 2 from 1 to 16, got constexpr 3"),
])
def test_misuse_is_a_compilation_error(case, message):
    import re
    with pytest.raises(tilec.CompilationError, match=re.escape(message)):
        misuse_kernel[(1,)](np.zeros(16, np.float32), CASE=case)
