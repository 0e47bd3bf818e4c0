#!/usr/bin/env bash
# One call on the GPU machine does it all: builds tilec with every core, runs the
# tests (each on the CPU backend and on the GPU), compute-sanitizer on the core
# kernels, the examples and the benchmarks, and leaves the logs in $OUT. Used as
#   run(command="bash scripts/gpu_check.sh")          # everything
#   run(command="bash scripts/gpu_check.sh tests")    # build + tests only
#   run(command="bash scripts/gpu_check.sh tests tutorials")  # several parts in one call
#   run(command="bash scripts/gpu_check.sh language") # build + the wider language's benchmarks
#   run(command="bash scripts/gpu_check.sh attention") # build + flash attention vs Triton
#   run(command="bash scripts/gpu_check.sh training")  # build + training kernels (norms, losses, ...) vs Triton
#   run(command="bash scripts/gpu_check.sh persistent")  # build + tutorial 09's matmuls vs Triton (carry .conformance)
#   run(command="bash scripts/gpu_check.sh tuning")      # build + tuning timings against the same configs alone
#   run(command="bash scripts/gpu_check.sh ws")          # build + warp specialization on tutorials 06 and 09 vs Triton (carry .conformance)
#   run(command="bash scripts/gpu_check.sh cold")        # build + tutorial 06's cold first launches and ptxas times vs Triton (carry .conformance)
#   run(command="bash scripts/gpu_check.sh compile")     # build + the own compile time of every benchmark kernel (carry .conformance)
# A change's effect on the GPU, against the build before it in the same call:
# scripts/ab_builds.sh.
set -uo pipefail
OUT=${OUT:-/tmp/tilec-gpu-check}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
ARGS=" ${*:-all} "
want() {  # whether any of the named parts was asked for (all: everything but conformance)
  for part in "$@"; do [[ $ARGS == *" $part "* ]] && return 0; done
  [[ $ARGS == *" all "* && $1 != conformance* ]]
}

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

if want tests; then
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
if want sanitize; then
  start=$(date +%s)
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --print-limit 20 $PY scripts/sanitize_kernels.py \
      > "$OUT/sanitizer-$tool.log" 2>&1
    echo "compute-sanitizer $tool ($(( $(date +%s) - start )) s): $(grep -v "^=* *$" "$OUT/sanitizer-$tool.log" | tail -2 | tr '\n' ' ')"
    # the training kernels (norms, losses, rotary, gated units), forward and backward
    compute-sanitizer --tool $tool --print-limit 20 $PY -m pytest -q -p no:cacheprovider -k cuda \
      tests/test_training_kernels.py > "$OUT/sanitizer-training-$tool.log" 2>&1
    echo "compute-sanitizer $tool, training kernels ($(( $(date +%s) - start )) s):" \
      "$(grep -E "passed|failed" "$OUT/sanitizer-training-$tool.log" | tail -1) $(tail -1 "$OUT/sanitizer-training-$tool.log")"
  done
fi
if want bench; then
  $PY examples/run_all.py > "$OUT/examples.log" 2>&1; cat "$OUT/examples.log"
  $PY benchmarks/gpu.py --plot "$OUT" 2>&1 | tee "$OUT/bench.log"
  $PY benchmarks/block_matmul.py 2>&1 | tee "$OUT/block_matmul.log"  # block pointers, NN and NT
fi
if want attention; then  # flash attention against Triton and SDPA; tilec's PTX beside Triton's
  $PY benchmarks/attention.py --plot "$OUT" 2>&1 | tee "$OUT/attention.log"
  $PY benchmarks/attention.py --autotune 2>&1 | tee -a "$OUT/attention.log"  # each side's autotuner
  rm -rf /tmp/compare
  for d in 64 128; do
    $PY scripts/compare_triton.py attention --d $d --out /tmp/compare/d$d 2>&1 | tee -a "$OUT/compare.log"
  done
  tar -C /tmp -czf "$OUT/compare.tgz" compare
fi
if want persistent && [[ -d .conformance ]]; then  # tutorial 09's matmuls (pointers, TMA, persistent) vs Triton
  $PY benchmarks/tutorials.py ${PERSISTENT_ARGS:-} 2>&1 | tee "$OUT/persistent.log"
fi
if want ws && [[ -d .conformance ]]; then  # warp specialization on tutorials 06 and 09, each side with and without
  $PY benchmarks/warp_specialize.py 2>&1 | tee "$OUT/warp_specialize.log"
fi
if want compile; then  # own compile (source to PTX) of the benchmarks' kernels, warm, on this host
  $PY benchmarks/own_compile.py 2>&1 | tee "$OUT/own_compile.log"
fi
if want cold && [[ -d .conformance ]]; then  # tutorial 06's first launches with empty caches vs Triton
  $PY benchmarks/cold_start.py 2>&1 | tee "$OUT/cold_start.log"
  $PY benchmarks/cold_start.py --tuned --causal 0 2>&1 | tee -a "$OUT/cold_start.log"
  $PY scripts/ptxas_times.py 2>&1 | tee "$OUT/ptxas_times.log"  # ptxas on each side's PTX
  tar -C "$OUT" -czf "$OUT/ptxas_times.tgz" ptxas_times && rm -rf "$OUT/ptxas_times"
fi
if [[ $ARGS == *" tuning "* && -d .conformance ]]; then  # does autotuning measure what runs alone? (not in all)
  $PY benchmarks/tutorials.py --only tma tma_persistent --k 4096 --timings --verify-tuning 2>&1 \
    | tee "$OUT/tuning.log"
fi
if want training; then  # memory-bound training kernels, forward and backward, against Triton and torch
  $PY benchmarks/training.py 2>&1 | tee "$OUT/training.log"
fi
if want bench language; then
  $PY benchmarks/language_ops.py 2>&1 | tee "$OUT/language_ops.log"
fi
# Triton's tutorials and tests, unchanged, with `import triton` giving tilec. The
# conformance folder is ../shared/conformance, copied into .conformance (ignored
# by git) and carried: `cp -r ../shared/conformance .conformance`.
CONF=$PWD/.conformance
if want tutorials && [[ -d $CONF ]]; then
  mkdir -p "$OUT/tutorials"
  start=$(date +%s)
  for t in ${TUTORIALS:-01-vector-add 02-fused-softmax 03-matrix-multiplication 04-low-memory-dropout \
           05-layer-norm 06-fused-attention 07-extern-functions 08-grouped-gemm \
           09-persistent-matmul 10-block-scaled-matmul 11-programmatic-dependent-launch}; do
    # TUTORIAL_IMPLS="tilec triton" runs each with both, to compare their tables;
    # TUTORIAL_JOBS=1 then keeps the timings apart (three at a time otherwise);
    # TUTORIAL_SINGLE_CONFIG=1 autotunes over the one config a tutorial keeps for
    # its tests (06), the same for both.
    for impl in ${TUTORIAL_IMPLS:-tilec}; do
      while (( $(jobs -r | wc -l) >= ${TUTORIAL_JOBS:-3} )); do sleep 1; done
      log=$t; [[ $impl != tilec ]] && log=$t-$impl
      ( env ${TUTORIAL_SINGLE_CONFIG:+PYTEST_VERSION=1} timeout ${TUTORIAL_TIMEOUT:-420} \
          bash "$CONF/run_tutorial.sh" $t --impl $impl > "$OUT/tutorials/$log.log" 2>&1
        echo "$log rc=$?" >> "$OUT/tutorials/summary.txt" ) &
    done
  done
  wait
  echo "tutorials ($(( $(date +%s) - start )) s):"; sort "$OUT/tutorials/summary.txt"
  for f in "$OUT"/tutorials/*.log; do
    grep -q "Error\|error:" "$f" && { echo "== $f"; grep -m3 -B2 "Error" "$f" | tail -6; }
  done
  tar -C "$OUT" -czf "$OUT/tutorials.tgz" tutorials && rm -rf "$OUT/tutorials"  # one file back
fi
# conformance-IMPL[-cpu|-cuda] (cuda by default); several may run at once, e.g.
#   bash scripts/gpu_check.sh conformance-triton-cuda conformance-triton-cpu
conformance() {  # impl device
  local impl=$1 device=$2 start=$(date +%s)
  if [[ $impl == triton ]]; then
    # The installed Triton's test helpers can be older than the tests (names they
    # import are missing): the helpers beside the tests stand in. Test plumbing only.
    cp "$CONF/triton-3.6/python/triton/_internal_testing.py" \
      "$($PY -c 'import triton, os; print(os.path.dirname(triton.__file__))')/_internal_testing.py"
  fi
  OUT=$OUT JOBS=${JOBS:-8} timeout ${CONFORMANCE_TIMEOUT:-560} bash "$CONF/run.sh" --impl $impl \
    --device $device -q -W ignore --continue-on-collection-errors -p no:randomly \
    --timeout=${CONFORMANCE_TEST_TIMEOUT:-120} --durations=15 -rfE \
    ${CONFORMANCE_FILES:-} > "$OUT/conformance-$impl-$device.log" 2>&1
  echo "conformance $impl $device ($(( $(date +%s) - start )) s): $(tail -1 "$OUT/conformance-$impl-$device.log")"
  grep -A16 "slowest" "$OUT/conformance-$impl-$device.log" | head -17
  gzip -f "$OUT/conformance-$impl-$device.xml" "$OUT/conformance-$impl-$device.log"  # small enough to come back
}
for mode in "$@"; do
  if [[ $mode == conformance-* ]] && [[ -d $CONF ]]; then
    spec=${mode#conformance-}
    impl=${spec%%-*}; device=cuda; [[ $spec == *-cpu ]] && device=cpu
    conformance $impl $device &
  fi
done
wait
