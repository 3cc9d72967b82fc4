#!/usr/bin/env bash
# Serves the default model with the default config: scripts/serve.sh [extra llmserve serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch-model.sh
# SmolLM2-135M-Instruct's recommended sampling (its model card: temperature 0.2, top_p 0.9) for
# requests that leave those fields out; a GGUF file carries no generation_config.json.
exec build/llmserve serve --config config/default.yaml \
  --model models/SmolLM2-135M-Instruct.Q4_1.gguf \
  --default-sampling temperature=0.2,top_p=0.9 "$@"
