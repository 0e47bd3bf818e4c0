"""Bad input gets a clear error and loses nothing: each case a user ran into
(wrong arguments, grids, views, read-only memory) with the message it gets.
Grows with every such case. See also test_errors.py (kernels that do not
compile) and test_ops.py (kernels that read or write out of bounds)."""

import mmap

import numpy as np
import pytest

import tilec
import tilec.language as tl
from conftest import nonzero

torch = pytest.importorskip("torch")


@tilec.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@tilec.jit
def shift_store_kernel(out_ptr, shift, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + shift, offs.to(tl.float32), mask=offs < n)


@tilec.jit
def carried_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # The stored pointer is carried through a loop: still the argument `out_ptr`.
    p = out_ptr
    q = x_ptr
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        tl.store(p + tl.arange(0, BLOCK), tl.load(q + tl.arange(0, BLOCK), mask=offs < n),
                 mask=offs < n)
        p += BLOCK
        q += BLOCK


# --- read-only memory


def test_read_only_memmap_output_is_refused(tmp_path, rng):
    path = tmp_path / "data.bin"
    np.zeros(64, np.float32).tofile(path)
    out = np.memmap(path, dtype=np.float32, mode="r")
    x = nonzero(rng, 64)
    with pytest.raises(ValueError, match="argument 'out_ptr' is read-only but the kernel "
                                         "stores through it"):
        copy_kernel[(1,)](x, out, 64, BLOCK=64)
    np.testing.assert_array_equal(np.fromfile(path, np.float32), 0)


def test_read_only_input_is_fine(tmp_path, rng):
    x = np.frombuffer(nonzero(rng, 37).tobytes(), np.float32)  # not writeable
    out = np.zeros(37, np.float32)
    copy_kernel[(1,)](x, out, 37, BLOCK=64)
    np.testing.assert_array_equal(out, x)


def test_frombuffer_of_bytes_is_not_written(rng):
    data = bytes(64 * 4)
    out = np.frombuffer(data, np.float32)
    with pytest.raises(ValueError, match="'out_ptr' is read-only"):
        carried_store_kernel[(1,)](nonzero(rng, 64), out, 64, BLOCK=16)
    assert data == bytes(64 * 4)


def test_read_only_mmap_object(tmp_path):
    path = tmp_path / "ro.bin"
    path.write_bytes(bytes(256))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        out = np.frombuffer(m, np.float32)
        with pytest.raises(ValueError, match="read-only"):
            shift_store_kernel[(1,)](out, 0, 64, BLOCK=64)
        del out


# --- grids


@pytest.mark.parametrize("grid, axis", [((2**40,), 0), ((1, 65536), 1), ((1, 1, 70000), 2),
                                        ((2**31,), 0)])
def test_grid_over_the_launch_limits(grid, axis):
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=f"grid dimension {axis} is {grid[axis]}, more than"):
        copy_kernel[grid](x, x.copy(), 4, BLOCK=4)


def test_grid_of_numpy_and_torch_integers(rng):
    x = nonzero(rng, 100)
    out = np.zeros_like(x)
    copy_kernel[(np.int64(4),)](x, out, np.int64(100), BLOCK=32)
    np.testing.assert_array_equal(out, x)
    out[:] = 0
    copy_kernel[lambda meta: (torch.tensor(4).item(), np.int32(1))](x, out, np.int32(100),
                                                                      BLOCK=32)
    np.testing.assert_array_equal(out, x)


def test_grid_of_floats_is_refused():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="the grid must be 1 to 3 ints"):
        copy_kernel[(1.5,)](x, x.copy(), 4, BLOCK=4)


# --- views


def test_store_before_a_view_names_the_argument_and_line():
    buf = np.zeros(64, np.float32)
    view = buf[16:]
    with pytest.raises(tilec.KernelError) as info:
        shift_store_kernel[(1,)](view, -4, 8, BLOCK=8)
    message = str(info.value)
    assert "16 bytes before argument 'out_ptr'" in message
    assert "tl.store(out_ptr + offs + shift" in message
    np.testing.assert_array_equal(buf, 0)  # the neighbouring view kept its bytes


def test_store_past_a_torch_view():
    buf = torch.zeros(64)
    view = buf[8:24]
    with pytest.raises(tilec.KernelError, match="past the end of argument 'out_ptr'"):
        shift_store_kernel[(1,)](view, 12, 8, BLOCK=8)
    assert torch.count_nonzero(buf[:8]) == 0 and torch.count_nonzero(buf[24:]) == 0


def test_strided_and_negative_views_stay_in_bounds(rng):
    base = nonzero(rng, 200)
    x = base[::3]  # a strided view: the kernel reads it as contiguous, so copy it first
    out = np.zeros(len(x), np.float32)
    copy_kernel[(1,)](np.ascontiguousarray(x), out, len(x), BLOCK=128)
    np.testing.assert_array_equal(out, x)
    t = torch.arange(10.0).flip(0)  # a flipped torch view is a copy: fine either way
    out_t = torch.zeros(10)
    copy_kernel[(1,)](t, out_t, 10, BLOCK=16)
    assert torch.equal(out_t, t)


# --- arguments as Triton takes them


def test_torch_tensors_of_every_kind(rng):
    leaf = torch.tensor(nonzero(rng, 50), requires_grad=True)
    nonleaf = leaf * 2
    param = torch.nn.Parameter(torch.tensor(nonzero(rng, 50)))
    base = torch.tensor(nonzero(rng, 80))
    offset_view = base[30:]
    for x in (leaf, nonleaf, param, offset_view):
        out = torch.zeros(50)
        copy_kernel[(2,)](x, out, 50, BLOCK=32)
        assert torch.equal(out, x.detach()[:50])
    out = torch.zeros(50, requires_grad=True)
    copy_kernel[(2,)](base, out, 50, BLOCK=32)  # written in place, as Triton does
    assert torch.equal(out.detach(), base[:50])


def test_zero_dim_tensor_is_a_pointer():
    @tilec.jit
    def scale_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(s_ptr), mask=m)

    x = torch.arange(1.0, 8.0)
    scale_kernel[(1,)](x, torch.tensor(3.0), 7, BLOCK=8)
    assert torch.equal(x, torch.arange(1.0, 8.0) * 3)


def test_none_for_an_unused_pointer(rng):
    @tilec.jit
    def maybe_bias_kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        if bias_ptr is not None:
            x += tl.load(bias_ptr + offs, mask=m)
        tl.store(out_ptr + offs, x, mask=m)

    x, b = nonzero(rng, 20), nonzero(rng, 20)
    out = np.zeros_like(x)
    maybe_bias_kernel[(1,)](x, None, out, 20, BLOCK=32)
    np.testing.assert_array_equal(out, x)
    maybe_bias_kernel[(1,)](x, b, out, 20, BLOCK=32)
    np.testing.assert_allclose(out, x + b)


def test_numpy_and_torch_scalars_as_arguments(rng):
    @tilec.jit
    def fill_kernel(out_ptr, value, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.int64), mask=offs < n)

    out = np.zeros(10, np.int64)
    fill_kernel[(1,)](out, np.int64(2**40 + 3), np.int16(10), BLOCK=16)
    assert (out == 2**40 + 3).all()


def test_fp8_torch_tensors_as_arguments():
    x = torch.tensor([0.5, -1.0, 2.0, 448.0]).to(torch.float8_e4m3fn)
    out = torch.zeros(4, dtype=torch.float8_e4m3fn)
    copy_kernel[(1,)](x, out, 4, BLOCK=4)
    assert torch.equal(out.view(torch.uint8), x.view(torch.uint8))
    y = torch.tensor([0.5, -1.0]).to(torch.float8_e5m2)
    out_y = torch.zeros(2, dtype=torch.float8_e5m2)
    copy_kernel[(1,)](y, out_y, 2, BLOCK=2)
    assert torch.equal(out_y.view(torch.uint8), y.view(torch.uint8))


# --- pointer tables


@tilec.jit
def pointer_table_kernel(table_ptr, sizes_ptr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    ptr = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes_ptr + g)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=m) * 2, mask=m)


def test_loads_and_stores_through_a_pointer_table(rng):
    arrays = [torch.tensor(nonzero(rng, n)) for n in (5, 17, 32)]
    expected = [a * 2 for a in arrays]
    table = torch.tensor([a.data_ptr() for a in arrays], dtype=torch.int64)
    sizes = torch.tensor([a.numel() for a in arrays], dtype=torch.int32)
    pointer_table_kernel[(3,)](table, sizes, BLOCK=32)
    for a, e in zip(arrays, expected):
        assert torch.equal(a, e)
