"""Programmatic dependent launch: tl.extra.cuda.gdc_wait/gdc_launch_dependents
in kernels launched with launch_pdl=True (Triton's tutorial 11). On the CPU the
launches run in order and the calls do nothing; on sm_90 they are griddepcontrol
instructions and the launch carries the PDL attribute."""

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.language.extra.cuda import gdc_launch_dependents

pytestmark = pytest.mark.usefixtures("device")


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_GDC:
        tl.extra.cuda.gdc_wait()  # x may be the previous launch's output
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if USE_GDC:
        gdc_launch_dependents()  # imported by value
    tl.store(out_ptr + offs, x + y, mask=mask)


@pytest.mark.parametrize("pdl", [True, False])
def test_chained_launches_see_each_others_results(device, rng, pdl):
    n = 10_007
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    mid = np.zeros(n, np.float32)
    out = np.zeros(n, np.float32)
    grid = (tilec.cdiv(n, 256),)
    add_kernel[grid](x, y, mid, n, BLOCK=256, USE_GDC=pdl, launch_pdl=pdl)
    add_kernel[grid](mid, y, out, n, BLOCK=256, USE_GDC=pdl, launch_pdl=pdl)
    np.testing.assert_array_equal(out, (x + y) + y)


@pytest.mark.cpu_only
def test_griddepcontrol_in_ptx_from_sm_90():
    if not tilec._C.find_ptxas():
        pytest.skip("ptxas not found")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    consts = {"BLOCK": 128, "USE_GDC": True}
    hopper = tilec.compile(add_kernel, sig, consts, target="sm_90a", launch_pdl=True)
    assert "griddepcontrol.wait;" in hopper.asm["ptx"]
    assert "griddepcontrol.launch_dependents;" in hopper.asm["ptx"]
    assert hopper.asm["cubin"] and hopper.metadata.launch_pdl
    ampere = tilec.compile(add_kernel, sig, consts, target="sm_80")
    assert "griddepcontrol" not in ampere.asm["ptx"] and not ampere.metadata.launch_pdl


def test_outside_a_kernel_is_an_error():
    with pytest.raises(RuntimeError, match="only inside a @tilec.jit kernel"):
        tl.extra.cuda.gdc_wait()
