#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build from source, then run the GPU suite (every kernel
# against the CPU reference; prefill again on the mma.sync kernels where warpgroup ones exist),
# compute-sanitizer memcheck and racecheck, and timings. Logs and JSON go to $OUT (default
# ./gpu-results). Skips, saying why, where there is no GPU.
#   BENCH=quick|full|0: which timings (BENCH_ONLY=REGEX: those cases alone); BENCH_AB=REGEX: those
#   cases again, same run, under BENCH_AB_ENV (default AITER_COMPAT_NO_WGMMA=1: the mma.sync
#   kernels); SANITIZERS="memcheck racecheck" by default, each run with the merge kernel and again
#   with the folded split merge (SANITIZE_FOLD=0: the first alone); TESTS=0 skips the test runs (and the
#   C API check, tests/gpu/capi_gpu_check.c); MMA_SYNC=0 skips the prefill cases' second run on
#   the mma.sync kernels, PRODUCER=0 their run on the warpgroup kernels' producer twins (and the
#   twins' sanitizer runs and bench/twin_choice.py);
#   TEST_TIMEOUT (seconds, 480) bounds the suite; GPU_TESTS (default tests/gpu) names the test
#   files to run, when the whole suite does not fit one run. bench/eager_overhead.py and
#   bench/fp8_row_width.py run with the timings.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU suite skipped: no NVIDIA GPU (nvidia-smi finds none)"
  exit 0
fi
nvidia-smi -L | tee "$OUT/gpu.txt"
PY=$(command -v python3)
extra=()
[ -n "${DLPACK_INCLUDE_DIR:-}" ] && extra+=("-DDLPACK_INCLUDE_DIR=$DLPACK_INCLUDE_DIR")
# The build needs DLPack's header (Debian: libdlpack-dev). A GPU machine without it (no package
# registry there) must be given a folder holding dlpack/dlpack.h: say so before building anything.
if [ ! -f "${DLPACK_INCLUDE_DIR:-/usr/include}/dlpack/dlpack.h" ] && [ ! -f /usr/local/include/dlpack/dlpack.h ]; then
  echo "no dlpack/dlpack.h under ${DLPACK_INCLUDE_DIR:-/usr/include} or /usr/local/include: set DLPACK_INCLUDE_DIR to a" \
    "folder holding dlpack/dlpack.h (copy Debian's /usr/include/dlpack/dlpack.h to the machine)" >&2
  exit 1
fi
set -e
cmake -S . -B build-gpu -G Ninja -DPython3_EXECUTABLE="$PY" -DAITER_COMPAT_GPU_ARCHS="${ARCHS:-sm_90}" \
  -DAITER_COMPAT_BUILD_TESTS=OFF -DAITER_COMPAT_BUILD_BENCH=OFF "${extra[@]}" > "$OUT/configure.log" 2>&1 ||
  { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target aiter-compat _aiter_compat aiter_compat > "$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "$OUT/build.log" | head -40; exit 1; }
# The C API's GPU route from a C program, against the same calls on host memory.
cc -O2 -std=c11 -Icapi/include ${DLPACK_INCLUDE_DIR:+-I"$DLPACK_INCLUDE_DIR"} tests/gpu/capi_gpu_check.c \
  -Lbuild-gpu -laiter_compat -Wl,-rpath,"$PWD/build-gpu" -ldl -lm -o build-gpu/capi_gpu_check >> "$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
set +e
# The machine code: matrix instructions per tiled kernel and any local-memory (spill) traffic.
if command -v cuobjdump >/dev/null; then
  for co in build-gpu/kernels/attention_sm_*.co; do
    cuobjdump -sass "$co" | awk -v co="${co##*/}" '/Function :/{f=$3; seen[f]=1} /HGMMA/{g[f]++} /HMMA/{h[f]++}
      /LDL|STL/{l[f]++} END{for (k in seen) if (k ~ /tiled/) printf "sass %s %s: HGMMA %d HMMA %d local %d\n", co, k, g[k], h[k], l[k]}' | sort
  done | tee "$OUT/sass_summary.txt"
fi
./build-gpu/aiter-compat probe | tee "$OUT/probe.txt"
# Every kernel family against the CPU reference on this GPU (exit 5 when one fails), and its cost.
XDG_CACHE_HOME="$OUT/cache" ./build-gpu/aiter-compat selftest | tee "$OUT/selftest.txt"
selftest_rc=${PIPESTATUS[0]}
export AITER_COMPAT_PYTHONPATH=$PWD/build-gpu/python PYTHONPATH=$PWD/build-gpu/python AITER_COMPAT_LOG_LEVEL=warn
timeout 120 "$PY" bench/selftest_cost.py --json "$OUT/selftest_cost.json" 2>&1 | tee "$OUT/selftest_cost.txt"
tests_rc=0
# The prefill and extend cases (not AITer's grids), run again on the other prefill kernels below.
prefill_cases="(varlen or extend or underestimated or flash_attn_func or softcap or descales or batch_prefill or triton) and not grid"
if [ "${TESTS:-1}" != 0 ]; then
  AITER_COMPAT_GPU_SUMMARY=$OUT/gpu_summary.json timeout "${TEST_TIMEOUT:-480}" "$PY" -m pytest -q -rs ${GPU_TESTS:-tests/gpu} 2>&1 |
    tee "$OUT/gpu_tests.log" | tail -40
  tests_rc=${PIPESTATUS[0]}
  if [ "${MMA_SYNC:-1}" != 0 ] && grep -q "ac_tiled_wgmma" "$OUT/sass_summary.txt" 2>/dev/null; then
    echo "prefill cases again on the mma.sync rows kernels (AITER_COMPAT_NO_WGMMA=1):"
    AITER_COMPAT_NO_WGMMA=1 timeout 200 "$PY" -m pytest -q -rs ${GPU_TESTS:-tests/gpu} -k "$prefill_cases" \
      2>&1 | tee "$OUT/gpu_tests_mma_sync.log" | tail -5
    [ "${PIPESTATUS[0]}" -ne 0 ] && tests_rc=1
  fi
  # The prefill cases again on the warpgroup kernels' producer twins wherever the warpgroup row
  # runs (=auto would give them only the long head dim 64 calls, few of the suite's small ones:
  # docs/kernel-notes.md, version 21). PRODUCER=0 skips them.
  if [ "${PRODUCER:-1}" != 0 ] && grep -q "ac_tiled_wgmma_producer" "$OUT/sass_summary.txt" 2>/dev/null; then
    echo "prefill cases again on the producer twins (AITER_COMPAT_WGMMA_PRODUCER=1):"
    AITER_COMPAT_WGMMA_PRODUCER=1 timeout 200 "$PY" -m pytest -q -rs ${GPU_TESTS:-tests/gpu} -k "$prefill_cases" \
      2>&1 | tee "$OUT/gpu_tests_producer.log" | tail -5
    [ "${PIPESTATUS[0]}" -ne 0 ] && tests_rc=1
  fi
  # The split-KV cases again with the merge folded into the "keys" split kernels (opt-in until it
  # has run on a GPU: docs/kernel-notes.md, version 14).
  echo "split cases again with the folded merge (AITER_COMPAT_SPLIT_MERGE=fold):"
  AITER_COMPAT_SPLIT_MERGE=fold timeout 200 "$PY" -m pytest -q -rs ${GPU_TESTS:-tests/gpu} -k "split and not grid" \
    2>&1 | tee "$OUT/gpu_tests_fold.log" | tail -5
  [ "${PIPESTATUS[0]}" -ne 0 ] && tests_rc=1
fi
capi_rc=0
if [ "${TESTS:-1}" != 0 ]; then
  ./build-gpu/capi_gpu_check 2>&1 | tee "$OUT/capi_gpu_check.log"
  capi_rc=${PIPESTATUS[0]}
fi
san_rc=0
# Each tool on the default launches, then with the folded split merge (SANITIZE_FOLD=0 skips it),
# then on the warpgroup kernels' producer twins (PRODUCER=0 skips it).
twins=0
if [ "${PRODUCER:-1}" = 0 ]; then
  echo "producer twins' sanitizer pass and bench/twin_choice.py skipped: PRODUCER=0"
elif grep -q "ac_tiled_wgmma_producer" "$OUT/sass_summary.txt" 2>/dev/null; then
  twins=1
else
  echo "producer twins' sanitizer pass and bench/twin_choice.py skipped: no ac_tiled_wgmma_producer kernel in $OUT/sass_summary.txt"
fi
for tool in ${SANITIZERS:-memcheck racecheck}; do
  for merge in kernel fold producer; do
    [ "$merge" = fold ] && [ "${SANITIZE_FOLD:-1}" = 0 ] && continue
    [ "$merge" = producer ] && [ "$twins" = 0 ] && continue
    split_merge=$merge producer=0
    [ "$merge" = producer ] && split_merge=kernel producer=1
    AITER_COMPAT_SPLIT_MERGE=$split_merge AITER_COMPAT_WGMMA_PRODUCER=$producer timeout 240 \
      compute-sanitizer --tool $tool --error-exitcode 9 "$PY" tests/gpu/sanitizer_cases.py > "$OUT/$tool-$merge.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool ($([ "$merge" = producer ] && echo "producer twins" || echo "$merge merge")): rc=$rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitizer cases ran' "$OUT/$tool-$merge.log" | tr '\n' ' ')"
    [ $rc -ne 0 ] && san_rc=$rc
  done
done
case "${BENCH:-quick}" in
  quick) timeout 200 "$PY" bench/gpu_attention.py --quick ${BENCH_ONLY:+--only "$BENCH_ONLY"} --json "$OUT/bench_quick.json" 2>&1 | tee "$OUT/bench.log" ;;
  full) timeout 400 "$PY" bench/gpu_attention.py ${BENCH_ONLY:+--only "$BENCH_ONLY"} --json "$OUT/bench_full.json" 2>&1 | tee "$OUT/bench.log" ;;
esac
[ "${BENCH:-quick}" != 0 ] && timeout 120 "$PY" bench/eager_overhead.py --json "$OUT/eager.json" 2>&1 | tee "$OUT/eager.log"
[ "${BENCH:-quick}" != 0 ] && timeout 90 "$PY" bench/fp8_row_width.py --json "$OUT/fp8_row_width.json" 2>&1 | tee "$OUT/fp8_row_width.log"
# Where the producer twins win, and whether AITER_COMPAT_WGMMA_PRODUCER=auto picks the faster kernel.
[ "${BENCH:-quick}" != 0 ] && [ "$twins" = 1 ] &&
  timeout 240 "$PY" bench/twin_choice.py --json "$OUT/twin_choice.json" 2>&1 | tee "$OUT/twin_choice.log"
if [ -n "${BENCH_AB:-}" ]; then
  ab_env=${BENCH_AB_ENV:-AITER_COMPAT_NO_WGMMA=1}
  echo "the same cases with $ab_env:"
  env "$ab_env" timeout 200 "$PY" bench/gpu_attention.py --only "$BENCH_AB" --json "$OUT/bench_ab.json" 2>&1 |
    tee "$OUT/bench_ab.log"
fi
echo "gpu tests rc=$tests_rc C API check rc=$capi_rc sanitizers rc=$san_rc selftest rc=$selftest_rc"
exit $(( tests_rc != 0 || capi_rc != 0 || san_rc != 0 || selftest_rc != 0 ))
