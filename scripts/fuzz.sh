#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) in build-fuzz/.
# Usage: scripts/fuzz.sh TARGET|all SECONDS [extra libFuzzer flags...]
#   TARGET: a target of tests/fuzz/CMakeLists.txt without its fuzz_ prefix (gguf, safetensors,
#           tokenizer, chat_template, completion_request, chat_request, messages_request,
#           request_framing, bounded_json, grpc_request, json_schema, kv_handoff, kv_page,
#           image_decode); all: every one of them.
# New inputs go to build-fuzz/corpus/TARGET (the committed seeds in tests/fuzz/corpus/TARGET are
# only read); crashes, leaks and timeouts are written to build-fuzz/artifacts/TARGET/ and make
# the script exit non-zero. Env: FUZZ_BUILD_DIR, FUZZ_RSS_MB (2048), FUZZ_TIMEOUT_S (10),
# FUZZ_JOBS (ninja -j, 2), FUZZ_SUMMARY (append one line per target to this file), FUZZ_SKIP_BUILD=1
# (run the fuzzers already built, e.g. while the sources change under a long run),
# FUZZ_DEADLINE (epoch seconds: after the build, each target gets at most an equal share of the
# time left before it, less 60 s; under 5 s each, the run stops there and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
TARGET=$1
SECONDS_EACH=$2
shift 2
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
RSS_MB=${FUZZ_RSS_MB:-2048}
TIMEOUT_S=${FUZZ_TIMEOUT_S:-10}
JOBS=${FUZZ_JOBS:-2}

# The newest clang installed (clang 14 cannot capture structured bindings in lambdas, which
# engine/chat uses): FUZZ_CXX overrides; `apt-get install clang-16 libclang-rt-16-dev` adds one.
CXX_BIN=${FUZZ_CXX:-}
if [ -z "$CXX_BIN" ]; then
  for v in 19 18 17 16 15 ""; do
    if command -v "clang++${v:+-$v}" > /dev/null; then CXX_BIN="clang++${v:+-$v}"; break; fi
  done
fi
if [ -z "$CXX_BIN" ]; then
  echo "fuzz.sh: no clang++ found (apt-get install clang-16 libclang-rt-16-dev)" >&2
  exit 2
fi
CC_BIN=${CXX_BIN/clang++/clang}
if [ ! -f "$BUILD/build.ninja" ]; then
  flags="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all"
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMSERVE_FUZZ=ON -DLLMSERVE_SANITIZE=address,undefined \
    -DLLMSERVE_CUDA=OFF -DLLMSERVE_BUILD_BENCH=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" > "$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 2; }
fi
if [ "$TARGET" = all ]; then
  mapfile -t targets < <(ninja -C "$BUILD" -t targets all | sed -nE 's/^fuzz_([a-z0-9_]+): phony$/\1/p' |
    grep -vx all | sort)
else
  targets=("$TARGET")
fi
if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  ninja -C "$BUILD" -j "$JOBS" "${targets[@]/#/fuzz_}" > "$BUILD/fuzz-build.log" 2>&1 ||
    { tail -50 "$BUILD/fuzz-build.log" >&2; exit 2; }
fi

if [ -n "${FUZZ_DEADLINE:-}" ]; then
  share=$(( (FUZZ_DEADLINE - $(date +%s) - 60) / ${#targets[@]} ))
  if [ "$share" -lt 5 ]; then
    echo "fuzz.sh: built; under 5 s each is left for ${#targets[@]} targets before the deadline: not run"
    exit 0
  fi
  [ "$share" -lt "$SECONDS_EACH" ] && SECONDS_EACH=$share &&
    echo "fuzz.sh: ${SECONDS_EACH} s each, the share of the time left before the deadline"
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
printf '%-20s %8s %12s %10s %s\n' target seconds execs execs/s result
for t in "${targets[@]}"; do
  work="$BUILD/corpus/$t"
  art="$BUILD/artifacts/$t"
  seeds="$ROOT/tests/fuzz/corpus/$t"
  mkdir -p "$work" "$art" "$seeds"
  dict=()
  [ -f "$ROOT/tests/fuzz/$t.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$t.dict")
  log="$BUILD/fuzz-$t.log"
  rc=0
  "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb="$RSS_MB" \
    -timeout="$TIMEOUT_S" -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "$@" \
    "$work" "$seeds" > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED rc=$rc ($(grep -m1 -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)[^ ]*: [a-z-]+|runtime error|timeout' "$log" || echo see log)); log $log; artifacts $art"
    failed+=("$t")
  fi
  line=$(printf '%-20s %8s %12s %10s %s' "$t" "$SECONDS_EACH" "${execs:-?}" "${rate:-?}" "$result")
  echo "$line"
  [ -n "${FUZZ_SUMMARY:-}" ] && echo "$line" >> "$FUZZ_SUMMARY"
  if [ "$rc" -ne 0 ]; then grep -A30 -m1 -E '^==[0-9]+==ERROR|runtime error|ALARM' "$log" >&2 || true; fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
