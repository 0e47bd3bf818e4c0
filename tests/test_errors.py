"""Compile errors: each says what is wrong and points at the line and column."""

import inspect

import numpy as np
import pytest

import tilec
import tilec.language as tl


def where(kernel, marker):
    """The file line and 1-based column where `marker` first appears in the kernel."""
    lines, first = inspect.getsourcelines(kernel.fn)
    body = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def ")) + 1
    for i, line in enumerate(lines):
        col = line.find(marker) if i >= body else -1
        if col >= 0:
            return first + i, col + 1
    raise AssertionError(f"{marker!r} not in the kernel")


def compile_error(kernel, *args, grid=(1,), **kwargs):
    with pytest.raises(tilec.CompilationError) as info:
        kernel[grid](*args, **kwargs)
    return info.value


def check(err, kernel, marker, message):
    line, col = where(kernel, marker)
    assert message in err.error, err.message
    assert (err.lineno, err.col) == (line, col), err.message
    assert err.filename == __file__
    # the source line and a caret are shown under the location
    assert marker in err.message and "^" in err.message


X = np.zeros(16, np.float32)


@tilec.jit
def undefined_name(x_ptr):
    tl.store(x_ptr, undefined_thing)


def test_undefined_name():
    err = compile_error(undefined_name, X)
    check(err, undefined_name, "undefined_thing", "name 'undefined_thing' is not defined")


@tilec.jit
def reached_raise(x_ptr, MODE: tl.constexpr):
    if MODE == 0:
        tl.store(x_ptr, 1.0)
    else:
        raise ValueError("unknown mode")


def test_a_reached_raise_is_an_error_at_its_line():
    reached_raise[(1,)](X, MODE=0)  # the branch with the raise is ruled out
    err = compile_error(reached_raise, X, MODE=1)
    check(err, reached_raise, "raise ValueError", "a kernel cannot raise exceptions")


@tilec.jit
def shape_mismatch(x_ptr):
    a = tl.arange(0, 128)
    b = tl.arange(0, 64)
    tl.store(x_ptr + a, a + b)


def test_shape_mismatch():
    err = compile_error(shape_mismatch, X)
    check(err, shape_mismatch, "a + b", "cannot broadcast tensor<128xi32> and tensor<64xi32>")


@tilec.jit
def runtime_arange(x_ptr, n):
    r = tl.arange(0, n)
    tl.store(x_ptr + r, 1.0)


def test_arange_needs_constexpr():
    err = compile_error(runtime_arange, X, 16)
    check(err, runtime_arange, "n)", "'end' must be a constexpr integer")


@tilec.jit
def arange_not_power_of_two(x_ptr):
    r = tl.arange(0, 100)
    tl.store(x_ptr + r, 1.0)


def test_arange_power_of_two():
    err = compile_error(arange_not_power_of_two, X)
    check(err, arange_not_power_of_two, "tl.arange(0, 100)", "must be a power of 2, got 100")


@tilec.jit
def takes_two(a, b):
    tl.store(a, b)


def test_wrong_number_of_arguments():
    with pytest.raises(TypeError, match="takes_two: missing a required argument: 'b'"):
        takes_two[(1,)](X)


@tilec.jit
def _helper(x, y):
    return x + y


@tilec.jit
def helper_wrong_arity(x_ptr):
    tl.store(x_ptr, _helper(1.0))


def test_jit_helper_wrong_number_of_arguments():
    err = compile_error(helper_wrong_arity, X)
    check(err, helper_wrong_arity, "_helper(1.0)", "_helper() missing required argument 'y'")


@tilec.jit
def uses_with(x_ptr):
    with open("f") as f:
        pass


def test_unsupported_construct():
    err = compile_error(uses_with, X)
    check(err, uses_with, "with", "unsupported Python construct")


@tilec.jit
def uses_lambda(x_ptr):
    f = lambda v: v + 1  # noqa: E731
    tl.store(x_ptr, f(1.0))


def test_lambda_is_unsupported():
    err = compile_error(uses_lambda, X)
    check(err, uses_lambda, "lambda", "unsupported Python construct")


def plain_python(x):
    return x


@tilec.jit
def calls_python(x_ptr):
    tl.store(x_ptr, plain_python(1.0))


def test_calling_a_non_jit_function():
    err = compile_error(calls_python, X)
    check(err, calls_python, "plain_python(", "cannot call Python function 'plain_python'")


@tilec.jit
def float_bitwise(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x & 1)


def test_bitwise_on_float():
    err = compile_error(float_bitwise, X)
    check(err, float_bitwise, "x & 1", "bitwise operator '&' needs integers")


@tilec.jit
def returns_value(x_ptr):
    return tl.load(x_ptr)


def test_kernel_returning_a_value():
    err = compile_error(returns_value, X)
    check(err, returns_value, "tl.load(x_ptr)", "a kernel cannot return a value")


@tilec.jit
def uses_break(x_ptr, n):
    for i in range(n):
        break


def test_break_is_unsupported():
    err = compile_error(uses_break, X, 4)
    check(err, uses_break, "break", "'break' is not supported in kernels")


@tilec.jit
def loop_type_change(x_ptr, n):
    acc = tl.zeros((16,), dtype=tl.float32)
    for i in range(n):
        acc = tl.arange(0, 16)
    tl.store(x_ptr + tl.arange(0, 16), acc)


def test_loop_carried_type_change():
    err = compile_error(loop_type_change, X, 4)
    check(err, loop_type_change, "for i", "'acc' is tensor<16xf32> and tensor<16xi32>")


@tilec.jit
def bad_keyword(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr, maks=None))


def test_unknown_keyword():
    err = compile_error(bad_keyword, X)
    check(err, bad_keyword, "maks=None", "tl.load() got an unexpected keyword argument 'maks'")


@tilec.jit
def store_to_subscript(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    x[0] = 1.0


def test_assign_to_subscript():
    err = compile_error(store_to_subscript, X)
    check(err, store_to_subscript, "x[0]", "cannot assign to this expression")


def load_kernel(tmp_path, source, name):
    """A @jit kernel whose text is `source`, which Python itself may reject."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)

    def stub(x_ptr):
        pass

    kernel = tilec.jit(stub)
    kernel.src, kernel.first_line, kernel.filename = source, 1, str(path)
    return kernel


def test_syntax_error(tmp_path):
    source = "def k(x_ptr):\n    tl.store(x_ptr, (1.0 + ))\n"
    kernel = load_kernel(tmp_path, source, "syntax")
    with pytest.raises(tilec.CompilationError) as info:
        kernel[(1,)](X)
    err = info.value
    assert (err.filename, err.lineno) == (str(tmp_path / "syntax.py"), 2)
    assert err.col == source.splitlines()[1].index(")") + 1
    assert "expected an expression" in err.error


def test_bad_indentation(tmp_path):
    source = "def k(x_ptr):\n    x = 1\n      y = 2\n"
    kernel = load_kernel(tmp_path, source, "indent")
    with pytest.raises(tilec.CompilationError) as info:
        kernel[(1,)](X)
    assert info.value.lineno == 3
    assert "unexpected indent" in info.value.error


@tilec.jit
def _inner_bad(x):
    return x + missing_global


@tilec.jit
def outer_calls_bad(x_ptr):
    tl.store(x_ptr, _inner_bad(1.0))


def test_error_inside_helper_points_into_helper_and_notes_the_call():
    err = compile_error(outer_calls_bad, X)
    check(err, _inner_bad, "missing_global", "name 'missing_global' is not defined")
    line, _ = where(outer_calls_bad, "_inner_bad(1.0)")
    assert f":{line}:" in err.message and "in the call to '_inner_bad'" in err.message


@tilec.jit
def one_branch_only(x_ptr, n):
    if n > 3:
        y = 1.0
    tl.store(x_ptr, y)


def test_variable_defined_in_one_branch():
    err = compile_error(one_branch_only, X, 5)
    check(err, one_branch_only, "y)", "'y' is assigned in only one branch")


def test_constexpr_param_given_tensor():
    @tilec.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        pass

    with pytest.raises(TypeError, match="'BLOCK' is tl.constexpr but got a tensor"):
        k[(1,)](X, X)


def test_unsupported_argument_type():
    with pytest.raises(TypeError, match="argument 'b' has type dict"):
        takes_two[(1,)](X, {})


def test_bad_grid():
    with pytest.raises(ValueError, match="the grid must be 1 to 3 ints"):
        takes_two[(1, 2, 3, 4)](X, 1.0)


@tilec.jit
def bad_atomic_kernel(ptr, CASE: tl.constexpr):
    if CASE == "and_float":
        tl.atomic_and(ptr, 1.0)
    elif CASE == "sem":
        tl.atomic_add(ptr, 1, sem="strong")
    else:
        tl.atomic_max(ptr, 1, scope="block")


@pytest.mark.parametrize("case,message", [
    ("and_float", "tl.atomic_and() does not take f32 elements"),
    ("sem", "sem must be one of 'relaxed', 'acquire', 'release', 'acq_rel', got 'strong'"),
    ("scope", "scope must be one of 'cta', 'gpu', 'sys', got 'block'")])
def test_atomic_errors_name_the_line(case, message):
    with pytest.raises(tilec.CompilationError) as info:
        bad_atomic_kernel[(1,)](np.zeros(4, np.float32), CASE=case)
    assert message in str(info.value)


@tilec.jit
def scalar_range_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    if CASE == "big":
        x = x + 300
    elif CASE == "negative":
        x = x * -1
    else:
        x = x + 255  # fits
    tl.store(x_ptr + offs, x)


@pytest.mark.parametrize("case,message", [("big", "Scalar 300 is out of range for type uint8"),
                                          ("negative", "between an unsigned tensor and a negative "
                                                       "scalar (-1)")])
def test_python_int_out_of_range_for_the_tensor_type(case, message):
    with pytest.raises(tilec.CompilationError) as info:
        scalar_range_kernel[(1,)](np.zeros(8, np.uint8), CASE=case)
    assert message in str(info.value) and "test_errors.py" in str(info.value)
    x = np.arange(8, dtype=np.uint8)
    scalar_range_kernel[(1,)](x, CASE="fits")
    np.testing.assert_array_equal(x, (np.arange(8) + 255).astype(np.uint8))


@tilec.jit
def gather_kernel(x_ptr, idx_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.gather(x, tl.load(idx_ptr + offs), 0))


def test_gather_index_outside_the_source_is_a_clear_error():
    idx = np.arange(4096, dtype=np.int32)[::-1].copy()
    x = np.arange(4096, dtype=np.float32)
    gather_kernel[(1,)](x, idx, N=4096)  # a large gather: one op, no pairwise compare
    np.testing.assert_array_equal(x, np.arange(4096)[::-1])
    idx[7] = 4096
    with pytest.raises(tilec.KernelError) as info:
        gather_kernel[(1,)](x, idx, N=4096)
    assert "tl.gather(): index 4096 is outside the source's 4096 elements along axis 0" in str(
        info.value) and "test_errors.py" in str(info.value)


@tilec.jit
def const_pointer_kernel(x_ptr: tl.const, out_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)  # reading through it is fine
    if CASE == "store":
        tl.store(x_ptr + offs, x)
    elif CASE == "atomic":
        tl.atomic_add(x_ptr + offs, x)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("case", ["store", "atomic"])
def test_writing_through_a_const_pointer_is_an_error(case):
    x, out = np.ones(16, np.float32), np.zeros(16, np.float32)
    const_pointer_kernel[(1,)](x, out, CASE="read")
    np.testing.assert_array_equal(out, x)
    with pytest.raises(tilec.CompilationError) as info:
        const_pointer_kernel[(1,)](x, out, CASE=case)
    assert "Cannot store to a constant pointer" in str(info.value)
    assert "test_errors.py" in str(info.value)


@tilec.jit
def _pair_add(a, b, c, d):
    return a + c, b + d


@tilec.jit
def mismatched_tuple_reduce_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.reduce((x, tl.arange(0, 8)), 0, _pair_add)


def test_tensors_reduced_together_must_share_a_shape():
    with pytest.raises(tilec.CompilationError) as info:
        mismatched_tuple_reduce_kernel[(1,)](np.zeros(16, np.float32))
    assert "tl.reduce(): the tensors it takes together must have one shape" in str(info.value)


@tilec.jit
def too_imprecise(a_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    c = tl.dot(a, a, max_num_imprecise_acc=32)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)


def test_max_num_imprecise_acc_is_at_most_k():
    torch = pytest.importorskip("torch")
    a = torch.zeros(16, 16).to(torch.float8_e5m2)
    err = compile_error(too_imprecise, a, torch.zeros(16, 16))
    check(err, too_imprecise, "max_num_imprecise_acc=32",
          "max_num_imprecise_acc (32) must be from 0 to K (16)")
