"""The disk cache of compiled GPU kernels (python/tilec/cache.py): a second
process reads the PTX and cubin back instead of running ptxas; whatever the
kernel depends on changes the key; damaged entries are recompiled and
rewritten; concurrent writers agree; TILEC_DISABLE_DISK_CACHE turns it off."""

import importlib.util
import json
import random
import struct
import subprocess
import sys

import pytest

import tilec
from tilec import _C
from tilec.compiler import cache

pytestmark = pytest.mark.skipif(not _C.find_ptxas(), reason="ptxas not found")

KERNELS = '''
import tilec
import tilec.language as tl

SCALE = 2


@tilec.jit
def twice(x):
    return x + x


@tilec.jit
def scaled(x):
    return twice(x) * SCALE


@tilec.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, scaled(tl.load(x_ptr + offs, mask=mask)), mask=mask)
'''

SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}

# Compiles the kernel of kernels.py in a fresh process, through tilec.compile
# or JITFunction._compile, and prints what came out.
RUNNER = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import kernels
import tilec
how, block = sys.argv[2], int(sys.argv[3])
if how == "compile":
    k = tilec.compile(kernels.kernel, signature=%r, constexprs={"BLOCK": block}, target="sm_90a")
else:
    specs = (("ptr", "f32", 16), ("ptr", "f32", 16), ("int", "i32", 1), ("constexpr", block))
    k = kernels.kernel._compile(specs, "sm_90a", {})
print(json.dumps({"from_cache": k.gpu.from_cache, "ptx": k.asm["ptx"],
                  "cubin": k.asm["cubin"].hex()}))
''' % (SIGNATURE,)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache directory of this test's own, for it and its subprocesses."""
    path = tmp_path / "cache"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(path))
    monkeypatch.delenv("TILEC_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.delenv("TILEC_ASSEMBLER", raising=False)
    return path


@pytest.fixture
def kernels(tmp_path):
    """kernels.py written to tmp_path and imported: fresh @jit functions that a
    test may edit, and that subprocesses import from the same file."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    spec = importlib.util.spec_from_file_location(f"kernels_{tmp_path.name}",
                                                  tmp_path / "kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_kernel(kernels, block=128, **kwargs):
    kwargs.setdefault("target", "sm_90a")
    return tilec.compile(kernels.kernel, signature=SIGNATURE, constexprs={"BLOCK": block},
                         **kwargs)


def entries(cache_dir):
    """The cache's files, temp files included."""
    if not cache_dir.exists():
        return []
    return sorted(p for p in cache_dir.rglob("*") if p.is_file())


def run_in_subprocess(tmp_path, how="compile", block=128):
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    out = subprocess.run([sys.executable, str(script), str(tmp_path), how, str(block)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


# --- hits


def test_a_second_process_reads_the_kernel_from_disk(tmp_path, cache_dir, kernels):
    first = run_in_subprocess(tmp_path)
    second = run_in_subprocess(tmp_path)
    assert not first["from_cache"]
    assert second["from_cache"]
    assert (second["ptx"], second["cubin"]) == (first["ptx"], first["cubin"])
    # JITFunction._compile (what a launch calls) finds what tilec.compile stored.
    third = run_in_subprocess(tmp_path, how="jit")
    assert third["from_cache"] and third["cubin"] == first["cubin"]
    assert len(entries(cache_dir)) == 1


def test_a_hit_is_the_kernel_that_was_stored(cache_dir, kernels):
    first = compile_kernel(kernels)
    again = compile_kernel(kernels)  # tilec.compile keeps nothing in memory: read from disk
    assert not first.gpu.from_cache and again.gpu.from_cache
    assert again.gpu.to_bytes() == first.gpu.to_bytes()
    assert again.asm["tileir"] == first.asm["tileir"]  # the front end still ran
    assert (again.n_regs, again.metadata.shared) == (first.n_regs, first.metadata.shared)
    assert again.compile_ms < first.compile_ms  # no emission and no ptxas


def test_jit_compile_reads_the_disk(cache_dir, kernels):
    compile_kernel(kernels)
    specs = (("ptr", "f32", 16), ("ptr", "f32", 16), ("int", "i32", 1), ("constexpr", 128))
    assert kernels.kernel._compile(specs, "sm_90a", {}).gpu.from_cache


# --- what the key holds


def edit_source(fn, old, new):
    assert old in fn.src
    fn.src = fn.src.replace(old, new)


CHANGES = {
    "constexpr": lambda k: compile_kernel(k, block=256),
    "num_warps": lambda k: compile_kernel(k, num_warps=8),
    "num_stages": lambda k: compile_kernel(k, num_stages=2),
    "fp_fusion": lambda k: compile_kernel(k, enable_fp_fusion=False),
    "debug": lambda k: compile_kernel(k, debug=True),
    "target": lambda k: compile_kernel(k, target="sm_80"),
    "signature": lambda k: tilec.compile(k.kernel, signature={**SIGNATURE, "n": "i64"},
                                         constexprs={"BLOCK": 128}),
    # Comments change no IR: only the sources in the key tell these apart.
    "kernel source": lambda k: (edit_source(k.kernel, "mask = offs < n", "mask = offs < n  # !"),
                                compile_kernel(k))[1],
    "callee source": lambda k: (edit_source(k.twice, "return x + x", "return x + x  # !"),
                                compile_kernel(k))[1],
    "constexpr global": lambda k: (setattr(k, "SCALE", 3), compile_kernel(k))[1],
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_misses(cache_dir, kernels, change):
    compile_kernel(kernels)
    assert compile_kernel(kernels).gpu.from_cache
    changed = CHANGES[change](kernels)
    assert not changed.gpu.from_cache
    assert len(entries(cache_dir)) == 2


def test_key_reaches_callees_through_callees(kernels):
    assert kernels.kernel.reached_functions() == [kernels.kernel, kernels.scaled,
                                                       kernels.twice]


def test_key_tells_values_apart():
    assert len({cache.canonical(v) for v in (1, 1.0, True, "1", (1,), None)}) == 6
    assert cache.canonical(tilec.language.float16) == "dtype:f16"
    assert cache.compiler_version().startswith(tilec.__version__ + "+")


# --- damaged entries


def corrupt(path, how):
    data = path.read_bytes()
    if how == "flip":
        data = bytearray(data)
        for i in (0, len(data) // 2, len(data) - 1):
            data[i] ^= 0x5A
        data = bytes(data)
    elif how == "truncate":
        data = data[: len(data) // 3]
    elif how == "empty":
        data = b""
    elif how == "valid header, not a kernel":
        data = disk_entry(b"not a kernel")
    path.write_bytes(data)


def disk_entry(payload):
    """A file the disk cache accepts (its header's hash checks out) holding `payload`."""
    digest = _C.hash_hex(payload)
    h1, h2 = int(digest[:16], 16), int(digest[16:], 16)
    return b"TILEC1" + struct.pack("<QQQ", len(payload), h1, h2) + payload


@pytest.mark.parametrize("how", ["flip", "truncate", "empty", "valid header, not a kernel"])
def test_a_damaged_entry_is_recompiled_and_rewritten(cache_dir, kernels, how):
    first = compile_kernel(kernels)
    [path] = entries(cache_dir)
    corrupt(path, how)
    again = compile_kernel(kernels)
    assert not again.gpu.from_cache
    assert again.asm["cubin"] == first.asm["cubin"]
    assert entries(cache_dir) == [path]
    assert compile_kernel(kernels).gpu.from_cache  # rewritten whole


def test_kernel_bytes_round_trip_and_reject_malformed_input(cache_dir, kernels):
    data = compile_kernel(kernels).gpu.to_bytes()
    assert _C.gpu_kernel_from_bytes(data).to_bytes() == data
    for n in range(len(data)):
        assert _C.gpu_kernel_from_bytes(data[:n]) is None
    assert _C.gpu_kernel_from_bytes(data + b"\0") is None
    rng = random.Random(7)
    for _ in range(2000):  # most flips land in the PTX or cubin and still parse: no crash
        damaged = bytearray(data)
        damaged[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        _C.gpu_kernel_from_bytes(bytes(damaged))


@pytest.mark.parametrize("field, value", [
    (b"num_regs", b"12x"), (b"num_regs", b" 12"), (b"num_threads", b"0"),
    (b"params", b"iz"), (b"options.debug", b"2"), (b"emit_ms", b"0x12"),
    (b"format", b"tilec-gpu-kernel-0"),
    (b"tensor_maps", b"2 2 128 64 64 | 0,0,1"),  # 1 of its 5 fields
    (b"tensor_maps", b"2 2 128 64 64 | 0,0,1 | 9,0,1 | 0,0,2 | 0,0,3 | 1,0,1"),  # step kind 9
])
def test_kernel_bytes_with_a_bad_field_are_rejected(cache_dir, kernels, field, value):
    data = compile_kernel(kernels).gpu.to_bytes()
    fields = unpack(data)
    assert field in fields
    fields[field] = value
    assert _C.gpu_kernel_from_bytes(pack(fields)) is None
    fields[b"unknown"] = b""
    assert _C.gpu_kernel_from_bytes(pack(fields)) is None


def unpack(data):
    """packFields's format: a count, then length-prefixed names and values."""
    (count,), pos, fields = struct.unpack_from("<Q", data), 8, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", data, pos)
        name = data[pos + 8:pos + 8 + n]
        pos += 8 + n
        (n,) = struct.unpack_from("<Q", data, pos)
        fields[name] = data[pos + 8:pos + 8 + n]
        pos += 8 + n
    return fields


def pack(fields):
    out = struct.pack("<Q", len(fields))
    for name, value in fields.items():
        out += struct.pack("<Q", len(name)) + name + struct.pack("<Q", len(value)) + value
    return out


# --- processes at once, and off


def test_four_processes_compiling_at_once_agree(tmp_path, cache_dir, kernels):
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), "compile", "128"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert len({r["cubin"] for r in results}) == 1
    assert len(entries(cache_dir)) == 1  # one entry, no temp files left behind
    assert run_in_subprocess(tmp_path)["from_cache"]


def test_disabled_cache_writes_nothing(cache_dir, kernels, monkeypatch):
    monkeypatch.setenv("TILEC_DISABLE_DISK_CACHE", "1")
    assert _C.cache_dir() == ""
    assert not compile_kernel(kernels).gpu.from_cache
    assert not compile_kernel(kernels).gpu.from_cache
    assert entries(cache_dir) == []


def test_cpu_target_and_kernels_without_cubin_are_not_stored(cache_dir, kernels, monkeypatch):
    compile_kernel(kernels, target="cpu")
    specs = (("ptr", "f32", 16), ("ptr", "f32", 16), ("int", "i32", 1), ("constexpr", 128))
    kernels.kernel._compile(specs)
    monkeypatch.setenv("TILEC_ASSEMBLER", "driver")  # PTX for the driver's JIT: cheap to redo
    assert not compile_kernel(kernels).asm.get("cubin")
    assert entries(cache_dir) == []

