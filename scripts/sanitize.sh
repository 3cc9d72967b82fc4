#!/usr/bin/env bash
# Builds the unit tests with sanitizers in their own tree and runs them.
# Usage: scripts/sanitize.sh address,undefined | thread
#   address,undefined -> build-asan/, every `ctest -L unit` test (UBSan aborts on the first report)
#   thread            -> build-tsan/, the concurrency tests only (LLMSERVE_TSAN_TESTS, a ctest regex)
# Only the test executables that run are built. Env: SANITIZE_JOBS (ninja -j, default nproc),
# LLMSERVE_TEST_MODEL (model tests skip without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
LIST=${1:?usage: scripts/sanitize.sh address,undefined|thread}
case "$LIST" in
  *thread*) BUILD=${SANITIZE_BUILD_DIR:-$ROOT/build-tsan}
            REGEX=${LLMSERVE_TSAN_TESTS:-'^unit_(engine|engine_api|scheduler|kv_cache|kv_events|server)$'} ;;
  *)        BUILD=${SANITIZE_BUILD_DIR:-$ROOT/build-asan}
            REGEX=${LLMSERVE_ASAN_TESTS:-'^unit_'} ;;
esac
JOBS=${SANITIZE_JOBS:-$(nproc)}

start=$(date +%s)
if [ ! -f "$BUILD/build.ninja" ]; then
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLLMSERVE_SANITIZE="$LIST" -DLLMSERVE_CUDA=OFF -DLLMSERVE_BUILD_BENCH=OFF \
    -DCMAKE_C_FLAGS="-fno-sanitize-recover=all" -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all" \
    > "$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; exit 2; }
fi
# The regex picks test binaries (unit_<name>); each runs every GoogleTest case it registered.
mapfile -t tests < <(ninja -C "$BUILD" -t targets all | sed -nE 's/^(unit_[A-Za-z0-9_]+): phony$/\1/p' |
                     grep -E "$REGEX" | sort -u)
if [ ${#tests[@]} -eq 0 ]; then
  echo "sanitize.sh: no unit test binaries match $REGEX" >&2
  exit 2
fi
echo "sanitize.sh: building ${#tests[@]} test binaries in $BUILD (-fsanitize=$LIST)"
ninja -C "$BUILD" -j "$JOBS" "${tests[@]}"
CASES="^($(IFS='|'; echo "${tests[*]}"))[.]"
built=$(date +%s)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/scripts/tsan.supp}
rc=0
ctest --test-dir "$BUILD" -L unit -R "$CASES" --output-on-failure -j 2 --timeout 900 || rc=$?
end=$(date +%s)
echo "sanitize.sh ($LIST): build $((built - start)) s, tests $((end - built)) s, rc $rc"
exit $rc
