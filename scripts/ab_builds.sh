#!/usr/bin/env bash
# A/B timing of two builds on one GPU in one call: the working tree against an
# older source tree, each built with every core, then COMMAND run ROUNDS times
# (default 2) with each in turn, its output lines prefixed "new" / "old".
# Timings from separate calls may land on other cards or clocks; these do not.
# PYTHON picks the interpreter that builds (one with nanobind and scikit-build-core).
#
#   here:   rm -rf .old && mkdir .old && git archive REV | tar -x -C .old
#   device: run(command="bash scripts/ab_builds.sh .old python3 benchmarks/gpu.py --quick",
#               carry=[".old"])
set -uo pipefail
OLD_TREE=$1
shift
[[ -f "$OLD_TREE/pyproject.toml" && $# -gt 0 ]] || {
  echo "usage: bash scripts/ab_builds.sh OLD_SOURCE_TREE COMMAND..." >&2; exit 2; }
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tilec-ab}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
build() { # source tree, target folder
  rm -rf "$2"  # pip --target leaves an existing package in place
  (cd "$1" && CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) ${PYTHON:-python3} -m pip install --no-build-isolation \
     --no-deps --target "$2" . > "$OUT/build-$(basename "$2").log" 2>&1) ||
    { echo "build of $1 failed:"; tail -30 "$OUT/build-$(basename "$2").log"; exit 1; }
}
build . /tmp/tilec-new
build "$OLD_TREE" /tmp/tilec-old
for ((round = 1; round <= ${ROUNDS:-2}; ++round)); do
  for side in new old; do
    PYTHONPATH=/tmp/tilec-$side "$@" 2>&1 | sed "s/^/$side /"
  done
done
