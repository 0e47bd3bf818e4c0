#!/usr/bin/env bash
# Builds tilec, then profiles one kernel as tilec and as Triton run it, with ncu
# (warp stalls, pipes, memory), and dumps each one's SASS instruction mix:
#   bash scripts/profile.sh scripts/profile_matmul.py matmul    (CONFIG=..., see the script)
#   bash scripts/profile.sh scripts/profile_attention.py _attn_bwd   (D=, N=, CAUSAL=)
# The runner (IMPL=tilec|triton) launches the kernel at least 3 times and writes
# its cubin to $OUT/KERNEL-IMPL.cubin. Logs in $OUT.
set -uo pipefail
RUNNER=$1 KERNEL=$2
OUT=${OUT:-/tmp/tilec-profile}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=/tmp/tilec-site PYTHONUNBUFFERED=1 TILEC_DISABLE_DISK_CACHE=1
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps \
  --target /tmp/tilec-site . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
for IMPL in tilec triton; do
  export IMPL
  echo "== $IMPL"
  python3 "$RUNNER"
  cuobjdump -sass "$OUT/$KERNEL-$IMPL.cubin" > "$OUT/$KERNEL-$IMPL.sass"
  echo "SASS instruction mix:"
  grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z][A-Z0-9_.]+' "$OUT/$KERNEL-$IMPL.sass" | awk '{print $2}' \
    | sed 's/\..*//' | sort | uniq -c | sort -rn | head -22 | tr '\n' ' '; echo
  NCU_PROFILING=1 ncu --launch-skip 2 --launch-count 1 -k "regex:^$KERNEL\$" --section WarpStateStats \
    --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section Occupancy --section SpeedOfLight python3 "$RUNNER" > "$OUT/ncu-$IMPL.log" 2>&1
  grep -E "Issue|Pipe|Throughput|Occupancy|Registers|Block Limit|Eligible|Active Warps|Duration" "$OUT/ncu-$IMPL.log" | head -30
  stalls=""
  for r in barrier long_scoreboard short_scoreboard math_pipe_throttle mio_throttle wait \
           not_selected dispatch_stall lg_throttle selected no_instruction branch_resolving \
           imc_miss membar sleeping; do
    stalls="$stalls,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
  done
  NCU_PROFILING=1 ncu --launch-skip 2 --launch-count 1 -k "regex:^$KERNEL\$" --metrics "${stalls#,}" \
    python3 "$RUNNER" > "$OUT/stalls-$IMPL.log" 2>&1
  grep -E "stalled" "$OUT/stalls-$IMPL.log" | awk '{print $1, $NF}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | tr '\n' ' '; echo
done
