#!/usr/bin/env bash
# Serves the default model with the default config: scripts/serve.sh [extra llmserve serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch-model.sh
exec build/llmserve serve --config config/default.yaml \
  --model models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"
