#!/usr/bin/env bash
# One call on the GPU machine does it all: builds tilec with every core, runs the
# tests (each on the CPU backend and on the GPU), compute-sanitizer on the core
# kernels, the examples and the benchmarks, and leaves the logs in $OUT. Used as
#   run(command="bash scripts/gpu_check.sh")          # everything
#   run(command="bash scripts/gpu_check.sh tests")    # build + tests only
#   run(command="bash scripts/gpu_check.sh language") # build + the wider language's benchmarks
set -uo pipefail
OUT=${OUT:-/tmp/tilec-gpu-check}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
WHAT=${1:-all}

{ nvidia-smi; python3 --version; g++ --version | head -1; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
  > "$OUT/env.log" 2>&1

# The machine's Python has the build tools but no internet: install into a folder
# of our own, with no build isolation and no dependencies.
PY=python3
export PYTHONPATH=/tmp/tilec-site PYTHONUNBUFFERED=1
start=$(date +%s)
rm -rf /tmp/tilec-site  # pip --target leaves an existing package in place: a warm machine kept the old one
if ! CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) $PY -m pip install --no-build-isolation --no-deps \
    --target /tmp/tilec-site . > "$OUT/build.log" 2>&1; then
  echo "build failed:"; tail -40 "$OUT/build.log"; exit 1
fi
echo "build: $(( $(date +%s) - start )) s"

if [[ $WHAT == all || $WHAT == tests ]]; then
  start=$(date +%s)
  $PY -m pytest -q -n 8 -p no:cacheprovider tests > "$OUT/tests.log" 2>&1
  echo "tests ($(( $(date +%s) - start )) s): $(tail -1 "$OUT/tests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -60
  for warps in 1 8; do # every layout changes with the warp count
    TILEC_TEST_NUM_WARPS=$warps $PY -m pytest -q -n 8 -p no:cacheprovider -k cuda \
      tests/test_ops.py tests/test_kernels.py > "$OUT/tests_w$warps.log" 2>&1
    echo "tests on the GPU with num_warps=$warps: $(tail -1 "$OUT/tests_w$warps.log")"
    grep -E "^(FAILED|ERROR)" "$OUT/tests_w$warps.log" | head -30
  done
fi
if [[ $WHAT == all || $WHAT == sanitize ]]; then
  start=$(date +%s)
  compute-sanitizer --tool memcheck --print-limit 20 $PY scripts/sanitize_kernels.py \
    > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer ($(( $(date +%s) - start )) s): $(tail -1 "$OUT/sanitizer.log")"
fi
if [[ $WHAT == all || $WHAT == bench ]]; then
  $PY examples/run_all.py > "$OUT/examples.log" 2>&1; cat "$OUT/examples.log"
  $PY benchmarks/gpu.py --plot "$OUT" 2>&1 | tee "$OUT/bench.log"
fi
if [[ $WHAT == all || $WHAT == bench || $WHAT == language ]]; then
  $PY benchmarks/language_ops.py 2>&1 | tee "$OUT/language_ops.log"
fi
