"""The C++ tests of the runtime pieces (tests/cpp): the CUDA driver wrapper (with
no driver, and against a stand-in libcuda), the assembler (against real ptxas)
and the disk cache (concurrent writers, corrupted files). Each is built with
the system's C++ compiler and must report no failures."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
CXX = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")

pytestmark = pytest.mark.skipif(CXX is None or sys.platform != "linux",
                                reason="needs a C++ compiler on Linux")


def build(tmp_path_factory, name, sources, extra=()):
    out = tmp_path_factory.getbasetemp() / name
    if not out.exists():
        cmd = [CXX, "-std=c++17", "-O1", "-I", os.path.join(ROOT, "src"), *extra, "-o", str(out)]
        cmd += [os.path.join(ROOT, s) for s in sources] + ["-ldl", "-pthread"]
        subprocess.run(cmd, check=True)
    return str(out)


def run(program, env=None):
    result = subprocess.run([program], capture_output=True, text=True, timeout=300,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " 0 failed" in result.stdout, result.stdout[-3000:]


def test_disk_cache(tmp_path_factory):
    run(build(tmp_path_factory, "test_disk_cache",
              ["tests/cpp/test_disk_cache.cpp", "src/runtime/disk_cache.cpp"]))


@pytest.mark.skipif(not shutil.which("ptxas") and not os.path.exists("/usr/local/cuda/bin/ptxas"),
                    reason="ptxas not found")
def test_assembler(tmp_path_factory):
    run(build(tmp_path_factory, "test_assembler",
              ["tests/cpp/test_assembler.cpp", "src/runtime/assembler.cpp"]))


def test_cuda_driver_without_and_with_a_stand_in_driver(tmp_path_factory):
    program = build(tmp_path_factory, "test_cuda_driver",
                    ["tests/cpp/test_cuda_driver.cpp", "src/runtime/cuda_driver.cpp"])
    fake_dir = tmp_path_factory.mktemp("fakecuda")
    subprocess.run([CXX, "-std=c++17", "-O1", "-fPIC", "-shared",
                    os.path.join(ROOT, "tests/cpp/fake_libcuda.cpp"),
                    "-o", str(fake_dir / "libcuda.so.1")], check=True)
    fake = {"TILEC_TEST_FAKE_DRIVER": "1", "LD_LIBRARY_PATH": str(fake_dir)}
    run(program, fake)
    run(program, {**fake, "FAKE_CUDA_DEVICES": "0"})
    if not os.path.exists("/dev/nvidiactl"):  # a real driver would be found instead
        run(program)
