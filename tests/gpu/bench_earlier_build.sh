#!/usr/bin/env bash
# The same timings for an earlier source tree of the project, in the same GPU run as the current
# one (before/after comparisons): builds the tree at $1 into a scratch folder and runs the quick
# GPU bench (or the cases of BENCH_ONLY) and the eager-cost bench with its module. JSON to $OUT.
set -uo pipefail
tree=$1
OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
PY=$(command -v python3)
build=${BUILD_BEFORE:-/tmp/build-before}
extra=()
[ -n "${DLPACK_INCLUDE_DIR:-}" ] && extra+=("-DDLPACK_INCLUDE_DIR=$DLPACK_INCLUDE_DIR")
cmake -S "$tree" -B "$build" -G Ninja -DPython3_EXECUTABLE="$PY" -DAITER_COMPAT_GPU_ARCHS=sm_90 \
  -DAITER_COMPAT_BUILD_TESTS=OFF -DAITER_COMPAT_BUILD_BENCH=OFF "${extra[@]}" > "$OUT/before_configure.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target _aiter_compat > "$OUT/before_build.log" 2>&1 ||
  { tail -20 "$OUT/before_build.log" "$OUT/before_configure.log"; exit 1; }
export PYTHONPATH=$build/python AITER_COMPAT_LOG_LEVEL=warn
echo "earlier build ($tree):"
timeout 200 "$PY" "$tree"/bench/gpu_attention.py --quick ${BENCH_ONLY:+--only "$BENCH_ONLY"} --json "$OUT/before_bench.json" 2>&1 |
  tee "$OUT/before_bench.log"
timeout 120 "$PY" bench/eager_overhead.py --json "$OUT/before_eager.json" 2>&1 | tee "$OUT/before_eager.log"
