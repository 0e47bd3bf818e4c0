#!/bin/bash
# The instructions tilec's own compile (source to PTX, sm_90a) of benchmark
# kernels takes, counted by valgrind's callgrind inside compileKernel and
# emitPtx: unlike wall time on a shared machine, the same from run to run, so
# a compile-time change can be measured in one run of each build. Needs
# valgrind; builds an unstripped copy of the extension (build/instr) first,
# as callgrind finds those two functions by symbol. NAME picks the kernels as
# benchmarks/own_compile.py --only does, from the launches of SOURCES (its
# --sources); the count is per compile.
#
#   scripts/compile_instructions.sh ["t06 D=128 causal=1 _attn_bwd 32"] [reps] [sources]
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:-"t06 D=128 causal=1 _attn_bwd 32"}
REPS=${2:-3}
SOURCES=${3:-t06}
PY=${PYTHON:-.venv/bin/python}
[[ $PY == /* ]] || PY=$PWD/$PY  # (not realpath: a venv's python is a link to one without nanobind)
mkdir -p build/instr
(cd build/instr && cmake -G Ninja -DSKBUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O3 -g -DNDEBUG" \
    -Dnanobind_DIR="$($PY -c 'import nanobind; print(nanobind.cmake_dir())')" \
    -DPython_EXECUTABLE="$PY" ../.. > cmake.log && ninja _C > ninja.log)
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
cp -r python/tilec "$site/" && cp build/instr/_C*.so "$site/tilec/"
PYTHONPATH=$site valgrind --tool=callgrind --callgrind-out-file="$site/out" \
  --toggle-collect='tilec::compileKernel*' --toggle-collect='tilec::nvidia::emitPtx*' \
  "$PY" benchmarks/own_compile.py --only "$NAME" --reps "$REPS" --sources $SOURCES > "$site/log" 2>&1
kernels=$(sed -n 's/^\([0-9]*\) kernels;.*/\1/p' "$site/log")
total=$(callgrind_annotate "$site/out" | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
echo "$kernels kernel(s) matching '$NAME', $REPS compiles each: $(( total / (kernels * REPS) )) instructions per compile"
