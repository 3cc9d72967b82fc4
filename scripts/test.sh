#!/usr/bin/env bash
# Runs every test: installs packages, fetches the default model, builds, runs ctest and the
# Python integration tests in a venv made from tests/requirements.txt.
# Usage: scripts/test.sh [--unit-only] [--fault]
#        scripts/test.sh [--sanitize=address,undefined|--sanitize=thread] [--fuzz SECONDS]
#   --fault: also build build-fault/llmserve (-DLLMSERVE_FAULT_INJECTION=ON, a second full build
#     of the daemon, ~10 min on 2 cores) so the watchdog soak test runs instead of skipping
#   --sanitize: unit tests (thread: the concurrency tests) in build-asan/ or build-tsan/
#   --fuzz: every libFuzzer target of tests/fuzz for SECONDS each (scripts/fuzz.sh all)
#   Either option runs only those checks, not the default build and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

UNIT_ONLY=0
FAULT=0
SANITIZE=""
FUZZ_SECONDS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --unit-only) UNIT_ONLY=1 ;;
    --fault) FAULT=1 ;;
    --sanitize=*) SANITIZE=${1#--sanitize=} ;;
    --fuzz=*) FUZZ_SECONDS=${1#--fuzz=} ;;
    --fuzz) FUZZ_SECONDS=${2:?--fuzz needs SECONDS}; shift ;;
    *) echo "test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$SANITIZE" ] || [ -n "$FUZZ_SECONDS" ]; then
  scripts/setup.sh --no-build
  scripts/fetch-model.sh
  export LLMSERVE_TEST_MODEL="$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
  [ -n "$SANITIZE" ] && scripts/sanitize.sh "$SANITIZE"
  [ -n "$FUZZ_SECONDS" ] && scripts/fuzz.sh all "$FUZZ_SECONDS"
  exit 0
fi

scripts/setup.sh
scripts/fetch-model.sh

export LLMSERVE_TEST_MODEL="$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
ctest --test-dir build --output-on-failure -j 2
# ctest runs each GoogleTest binary as one test: say how many CUDA tests skipped (no GPU here).
if [ -x build/tests/unit/cuda/unit_cuda ]; then
  cuda_log=$(build/tests/unit/cuda/unit_cuda --gtest_brief=1 2>&1 || true)
  cuda_passed=$(grep -oE '^\[  PASSED  \] [0-9]+' <<<"$cuda_log" | grep -oE '[0-9]+$' || echo 0)
  cuda_skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+' <<<"$cuda_log" | grep -oE '[0-9]+$' || echo 0)
  echo "test.sh: unit_cuda: ${cuda_passed:-0} passed, ${cuda_skipped:-0} skipped" \
    "($(nvidia-smi -L 2>/dev/null | head -1 || echo 'no GPU visible'); skipped tests run in scripts/gpu-check.sh)"
else
  echo "test.sh: unit_cuda not built (no CUDA toolkit): every CUDA test skipped"
fi

[ "$UNIT_ONLY" = 1 ] && exit 0

if [ "$FAULT" = 1 ]; then
  # The watchdog soak test's daemon (tests/soak/test_soak_watchdog.py): test-only wedge switch.
  FAULT_DIR=${LLMSERVE_FAULT_BUILD_DIR:-build-fault}
  if [ ! -f "$FAULT_DIR/build.ninja" ]; then
    cmake -S . -B "$FAULT_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DLLMSERVE_FAULT_INJECTION=ON -DLLMSERVE_CUDA=OFF -DLLMSERVE_BUILD_BENCH=OFF
  fi
  cmake --build "$FAULT_DIR" -j "$(nproc)" --target llmserve
  export LLMSERVE_FAULT_BIN="$ROOT/$FAULT_DIR/llmserve"
fi

VENV=${LLMSERVE_TEST_VENV:-$ROOT/.venv-test}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha256"
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
  echo "$want" > "$stamp"
fi
py_tests=()
compgen -G "tests/integration/test_*.py" > /dev/null && py_tests+=(tests/integration)
compgen -G "tests/soak/test_*.py" > /dev/null && py_tests+=(tests/soak)
if [ ${#py_tests[@]} -gt 0 ]; then
  "$VENV/bin/python" -m pytest -q "${py_tests[@]}"
fi
