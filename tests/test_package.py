"""The package's shape: its modules import one another one way (no cycles,
counting imports inside functions too), and `import tilec.compat` gives the
`triton` modules that libraries and Triton's own tests import."""

import ast
import pathlib
import sys

import numpy as np
import pytest

import tilec

PACKAGE = pathlib.Path(tilec.__file__).parent


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path, name, modules):
    """The tilec modules that the module at `path` imports, anywhere in its code
    (`from a import b` imports a.b when that is a module, else a)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
    return found


def _graph():
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    names = set(modules) | {"tilec._C"}  # the extension module imports nothing of ours
    return {name: {m for m in _imports(path, name, names) if m in modules and m != name}
            for name, path in modules.items()}


def test_imports_run_one_way():
    graph = _graph()
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_language_and_backends_sit_below_the_runtime():
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith(("tilec.backends", "tilec.language.core", "tilec.errors", "tilec.knobs",
                            "tilec.testing")):
            assert not any(d.startswith(("tilec.runtime", "tilec.compiler")) for d in deps), name


@pytest.fixture
def triton_alias(monkeypatch):
    import tilec.compat
    saved = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    tilec.compat.install()
    yield
    tilec.compat.uninstall()
    sys.modules.update(saved)


def test_triton_modules_libraries_import(triton_alias):
    import triton
    from triton.backends.compiler import BaseBackend, GPUTarget, Language  # noqa: F401
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.backends.nvidia.driver import CudaDriver  # noqa: F401
    from triton.compiler import ASTSource, CompiledKernel, compile  # noqa: F401
    from triton.compiler.errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401
    from triton.runtime.jit import JITFunction, KernelInterface, TensorWrapper, reinterpret  # noqa
    from triton.runtime.autotuner import Autotuner, Config, Heuristics  # noqa: F401
    from triton.runtime.errors import InterpreterError, OutOfResources  # noqa: F401
    from triton.runtime.driver import driver
    from triton import knobs

    assert triton.runtime.jit is tilec.runtime.jit and triton.knobs is tilec.knobs
    assert "nvidia" in triton.backends.backends
    assert CUDABackend(GPUTarget("cuda", 90, 32)).parse_options({"num_warps": 8}).num_warps == 8
    active = driver.active
    for name in ("get_active_torch_device", "get_current_device", "set_current_device",
                 "get_current_stream", "get_current_target", "get_benchmarker"):
        assert callable(getattr(active, name)), name
    assert active.get_benchmarker() is tilec.testing.do_bench
    assert "max_shared_mem" in active.utils.get_device_properties(0)
    assert triton.runtime.driver.active is active
    assert knobs.runtime.launch_enter_hook is None
    import importlib.util
    assert importlib.util.find_spec("triton") is not None  # torch.cuda's lazy init asks


def test_missing_triton_module_names_the_alias(triton_alias):
    with pytest.raises(ModuleNotFoundError, match="tilec.compat.*tilec has no module"):
        import triton.no_such_module  # noqa: F401


def test_torch_compiler_modules_import_under_the_alias(triton_alias):
    pytest.importorskip("torch")
    import subprocess
    code = ("import tilec.compat, torch._dynamo, torch._inductor, torch._inductor.runtime.hints; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_knobs_scope_and_environment(monkeypatch, tmp_path):
    from tilec import knobs
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    assert knobs.autotuning.print is True
    with knobs.autotuning.scope():
        knobs.autotuning.print = False
        assert knobs.autotuning.print is False
    assert knobs.autotuning.print is True
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)
        assert tilec._C.cache_dir() == str(tmp_path)
    assert knobs.cache.dir != str(tmp_path)


def test_internal_testing_helpers(triton_alias, monkeypatch):
    """What Triton's own tests import from triton._internal_testing."""
    torch = pytest.importorskip("torch")
    import triton._internal_testing as t
    import tilec._internal_testing
    assert t is tilec._internal_testing
    x = t.numpy_random((3, 5), "int8")
    assert x.dtype == np.int8 and x.shape == (3, 5) and (x != 0).all()
    np.testing.assert_array_equal(x, t.numpy_random((3, 5), "int8"))  # seeded
    lo = t.numpy_random(1000, "int32", low=-5, high=5)
    assert lo.min() >= -5 and lo.max() < 5
    bf = t.numpy_random(64, "bfloat16")
    assert bf.dtype == np.float32 and not (bf.view(np.uint32) & 0xFFFF).any()
    u = t.numpy_random(17, "uint16")
    wrapped = t.to_triton(u, device="cpu")
    assert isinstance(wrapped, tilec.runtime.jit.TensorWrapper) and wrapped.dtype == tilec.language.uint16
    np.testing.assert_array_equal(t.to_numpy(wrapped), u)
    assert t.to_triton(np.ones(4, np.float32), "cpu", "bfloat16").dtype == torch.bfloat16
    assert t.str_to_triton_dtype("float16") == tilec.language.float16
    assert t.torch_dtype_name(torch.int64) == "int64" == t.torch_dtype_name(tilec.language.int64)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert t.is_interpreter() and not t.is_cuda() and t.get_arch() == "" and t.supports_tma()


def test_fresh_knobs_puts_everything_back(monkeypatch):
    from tilec import knobs
    from tilec._internal_testing import _fresh_knobs_impl
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    knobs.language.default_fp_fusion = False
    fresh, reset = _fresh_knobs_impl()
    try:
        k = fresh()
        assert k.autotuning.print is False and k.language.default_fp_fusion is True
        k.runtime.override_arch = "sm80"
    finally:
        reset()
    del knobs.language.default_fp_fusion
    assert knobs.autotuning.print is True and knobs.runtime.override_arch is None


def test_str_to_ty():
    tl = tilec.language
    assert tl.str_to_ty("fp32") == tl.float32 and tl.str_to_ty("i64") == tl.int64
    ptr = tl.str_to_ty("*kfp16")
    assert ptr.is_ptr() and ptr.element_ty == tl.float16 and ptr.const


def test_triton_c_libtriton_cublas(triton_alias):
    """Tutorial 09 compares with `triton._C.libtriton.nvidia.cublas.CublasLt`."""
    torch = pytest.importorskip("torch")
    from triton._C.libtriton import nvidia
    blas = nvidia.cublas.CublasLt(torch.empty(1024, dtype=torch.uint8))
    a, b = torch.randn(5, 7), torch.randn(3, 7)
    c = torch.empty(5, 3)
    blas.matmul(a, b, c)
    torch.testing.assert_close(c, a @ b.T)
    with pytest.raises(ValueError, match="do not fit"):
        blas.matmul(a, b, torch.empty(3, 5))


def test_aliased_submodule_leaves_tilec_alone(triton_alias):
    import triton
    import triton._C.libtriton  # noqa: F401
    assert triton._C is tilec._native and hasattr(tilec._C, "find_ptxas")


def test_must_use_result_marks_in_both_forms():
    def f(x):
        return x
    assert tilec.must_use_result(f) is f and f.must_use_result is True
    def g(x):
        return x
    assert tilec.must_use_result("why")(g) is g and g.must_use_result == "why"
