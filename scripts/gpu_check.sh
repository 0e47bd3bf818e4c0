#!/usr/bin/env bash
# One call on the GPU machine does it all: builds tilec with every core, runs the
# tests and the benchmarks, and leaves the logs in $OUT. Used as
#   run(command="bash scripts/gpu_check.sh")
set -uo pipefail
OUT=${OUT:-/tmp/tilec-gpu-check}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

{ nvidia-smi; python3 --version; g++ --version | head -1; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
  > "$OUT/env.log" 2>&1

# The machine's Python has the build tools but no internet: install into a folder
# of our own, with no build isolation and no dependencies.
PY=python3
export PYTHONPATH=/tmp/tilec-site
start=$(date +%s)
if ! CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) $PY -m pip install --no-build-isolation --no-deps \
    --target /tmp/tilec-site . > "$OUT/build.log" 2>&1; then
  echo "build failed:"; tail -40 "$OUT/build.log"; exit 1
fi
echo "build: $(( $(date +%s) - start )) s"
ldd /tmp/tilec-site/tilec/_C*.so >> "$OUT/env.log" 2>&1

if $PY -c "import pytest" 2>/dev/null; then
  $PY -m pytest -q tests > "$OUT/tests.log" 2>&1
  echo "tests: $(tail -1 "$OUT/tests.log")"
else
  echo "tests: pytest is not installed here"
fi
$PY examples/run_all.py > "$OUT/examples.log" 2>&1; cat "$OUT/examples.log"
$PY benchmarks/cpu_backend.py > "$OUT/bench.log" 2>&1; cat "$OUT/bench.log"
