#!/usr/bin/env bash
# Runs every test: installs packages, fetches the default model, builds, runs ctest and the
# Python integration tests in a venv made from tests/requirements.txt.
# Usage: scripts/test.sh [--unit-only]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

UNIT_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --unit-only) UNIT_ONLY=1 ;;
    *) echo "test.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
scripts/fetch-model.sh

export LLMSERVE_TEST_MODEL="$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
ctest --test-dir build --output-on-failure -j 2

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
if compgen -G "tests/integration/test_*.py" > /dev/null; then
  "$VENV/bin/python" -m pytest -q tests/integration
fi
