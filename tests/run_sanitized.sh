#!/usr/bin/env bash
# The C++ test suite built with AddressSanitizer and UndefinedBehaviorSanitizer (clang), then
# each libFuzzer target run for a bounded time over its committed seed corpus. Prints one line
# per fuzzer: inputs tried and crashes. Part of the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
# debian-packages.txt installs clang-22; an older clang with its sanitizer runtimes also works.
CXX_COMPILER=${CXX_COMPILER:-$(command -v clang++-22 || command -v clang++-19 || echo clang++)}
C_COMPILER=${C_COMPILER:-$(command -v clang-22 || command -v clang-19 || echo clang)}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
# -O1 with line tables: what the sanitizers' documentation advises (their checks are the same at
# any level), and a third quicker to build than -O2 with full debug information.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER="$CXX_COMPILER" -DCMAKE_C_COMPILER="$C_COMPILER" -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DAITER_COMPAT_SANITIZE=ON -DAITER_COMPAT_FUZZ=ON -DAITER_COMPAT_BUILD_PYTHON_MODULE=OFF \
  -DAITER_COMPAT_BUILD_BENCH=OFF -DAITER_COMPAT_GPU_ARCHS="" > build-asan.log 2>&1 || { tail -30 build-asan.log; exit 1; }
cmake --build build-asan >> build-asan.log 2>&1 || { grep -E "error" -A3 build-asan.log | head -40; exit 1; }
# Python is never finalised (by design), so its allocations are not leaks; a module that
# crashes on purpose in the native-probe tests must keep its SIGSEGV.
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "== unit tests under ASan + UBSan"
ctest --test-dir build-asan --output-on-failure --parallel "$(nproc)" | grep -E "tests passed|tests failed|Skipped|Failed|SKIPPED"
echo "== bounded fuzzing, ${FUZZ_SECONDS}s per target, $(nproc) at a time"
work=$(mktemp -d)
mkdir -p "$work/elf-seeds"
cp build-asan/tests/libfixture_module_*.so "$work/elf-seeds/"
# One fuzzer: its own corpus folder, log and artifacts; its exit status in $work/$target.rc.
fuzz() {
  local target=$1
  mkdir -p "$work/$target"
  local seeds=(tests/fuzz/corpus/$target)
  [ "$target" = fuzz_elf ] && seeds+=("$work/elf-seeds")
  local rc=0  # (under set -e a failing fuzzer would end this job before its status is written)
  build-asan/tests/fuzz/$target -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=4096 -timeout=20 \
    -print_final_stats=1 -artifact_prefix="$work/$target-" "$work/$target" "${seeds[@]}" > "$work/$target.log" 2>&1 || rc=$?
  echo "$rc" > "$work/$target.rc"
}
# Each fuzzer is single-threaded: as many run at once as there are cores, each for its full time.
targets=(fuzz_matrix fuzz_elf fuzz_capi_varlen fuzz_capi_batch_prefill fuzz_static_probe)
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz "$target" &
done
wait || true  # each job's status is in its .rc file
for target in "${targets[@]}"; do
  if [ "$(cat "$work/$target.rc")" != 0 ]; then
    tail -40 "$work/$target.log"
    echo "fuzz $target: CRASH (input saved under $work)"
    exit 1
  fi
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/$target.log" | grep -Eo '[0-9]+$' || echo "?")
  echo "fuzz $target: $runs inputs tried, 0 crashes"
done
rm -rf "$work"
