#!/usr/bin/env bash
# Runs every test: installs packages, fetches the default model, builds, runs ctest and the
# Python integration tests in a venv made from tests/requirements.txt.
# Usage: scripts/test.sh [--unit-only]
#        scripts/test.sh [--sanitize=address,undefined|--sanitize=thread] [--fuzz SECONDS]
#        scripts/test.sh --routers
#        scripts/test.sh --clients
#   --routers: the integration tests with the field's routers (smg, ...) from PyPI, in their own
#     venv (.venv-routers, tests/requirements-routers.txt); only those, not the default tests.
#   --clients: the third-party client tests (tests/clients: lm-eval, LangChain, the Agents SDK,
#     pydantic-ai, instructor, LiteLLM, AIPerf, inference-perf) in .venv-clients
#     (tests/requirements-clients.txt) and .venv-clients-perf (tests/requirements-clients-perf*.txt);
#     only those, not the default tests.
#   --sanitize: unit tests (thread: the concurrency tests) in build-asan/ or build-tsan/
#   --fuzz: every libFuzzer target of tests/fuzz for SECONDS each (scripts/fuzz.sh all)
#   Either option runs only those checks, not the default build and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

UNIT_ONLY=0
ROUTERS=0
CLIENTS=0
SANITIZE=""
FUZZ_SECONDS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --unit-only) UNIT_ONLY=1 ;;
    --routers) ROUTERS=1 ;;
    --clients) CLIENTS=1 ;;
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

# Makes (or refreshes) venv $1 from requirements file $2; a third file $3, when given, is
# installed after it with --no-deps --ignore-requires-python (its dependencies listed in $2).
make_venv() {
  local venv=$1 req=$2 nodeps=${3:-}
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  local stamp="$venv/.requirements.sha256" want
  want=$(cat "$req" ${nodeps:+"$nodeps"} | sha256sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    if [ -n "$nodeps" ]; then
      "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        --ignore-requires-python -r "$nodeps"
    fi
    echo "$want" > "$stamp"
  fi
}

if [ "$ROUTERS" = 1 ]; then
  RVENV=${LLMSERVE_ROUTERS_VENV:-$ROOT/.venv-routers}
  make_venv "$RVENV" tests/requirements-routers.txt
  mkdir -p build/test-logs
  "$RVENV/bin/python" -m pytest -q -rs tests/routers 2>&1 | tee build/test-logs/routers.log
  exit "${PIPESTATUS[0]}"
fi
if [ "$CLIENTS" = 1 ]; then
  CVENV=${LLMSERVE_CLIENTS_VENV:-$ROOT/.venv-clients}
  export LLMSERVE_CLIENTS_PERF_VENV=${LLMSERVE_CLIENTS_PERF_VENV:-$ROOT/.venv-clients-perf}
  make_venv "$CVENV" tests/requirements-clients.txt
  make_venv "$LLMSERVE_CLIENTS_PERF_VENV" tests/requirements-clients-perf.txt \
    tests/requirements-clients-perf-py312.txt
  mkdir -p build/test-logs
  "$CVENV/bin/python" -m pytest -q -rs tests/clients 2>&1 | tee build/test-logs/clients.log
  exit "${PIPESTATUS[0]}"
fi
# Every GoogleTest case is its own ctest test: a skipped one shows as "Skipped" (the CUDA device
# tests skip without a GPU; scripts/gpu-check.sh runs them on one).
mkdir -p build/test-logs
ctest_log=build/test-logs/ctest.log
ctest_rc=0
if ! ctest --test-dir build --output-on-failure -j 2 2>&1 | tee "$ctest_log"; then ctest_rc=1; fi
# "  12 - unit_cuda.Suite.Case (Skipped)" -> skipped cases per test binary.
ctest_skips() {
  sed -nE 's/^[[:space:]]*[0-9]+ - ([A-Za-z0-9_]+)\..* \(Skipped\)$/\1/p' "$ctest_log" |
    sort | uniq -c | awk '{printf "%s%s: %d", (NR > 1 ? ", " : ""), $2, $1} END {if (NR == 0) printf "none"}'
}
ctest_skip_count=$(grep -cE ' \(Skipped\)$' "$ctest_log" || true)
summary="test.sh: ctest skipped ${ctest_skip_count:-0} tests ($(ctest_skips));"
summary+=" GPU: $(nvidia-smi -L 2>/dev/null | head -1 || echo 'none visible, the CUDA device tests skip')"
echo "$summary"
[ "$ctest_rc" = 0 ] || exit 1

[ "$UNIT_ONLY" = 1 ] && exit 0

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
  pytest_log=build/test-logs/pytest.log
  pytest_rc=0
  if ! "$VENV/bin/python" -m pytest -q -rs "${py_tests[@]}" 2>&1 | tee "$pytest_log"; then
    pytest_rc=1
  fi
  # "SKIPPED [N] file:line: reason" groups N skips with one reason.
  pytest_skips=$(sed -nE 's/^SKIPPED \[([0-9]+)\].*/\1/p' "$pytest_log" | awk '{s += $1} END {print s + 0}')
  echo "$summary"
  echo "test.sh: pytest skipped ${pytest_skips:-0} tests (reasons above, SKIPPED lines)"
  [ "$pytest_rc" = 0 ] || exit 1
fi
