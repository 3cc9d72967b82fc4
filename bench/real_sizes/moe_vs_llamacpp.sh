#!/usr/bin/env bash
# Prefill and decode speed of llmserve and llama.cpp side by side on one MoE GGUF (CPU, same
# thread count), alternating the two engines over --rounds so machine load hits both alike.
# llmserve: `llmserve generate` (one prompt of P tokens, then G greedy tokens, EOS ignored; its
# stats line). llama.cpp: `llama-bench -p P -n G` (pp and tg tok/s). Prints one line per run.
#   bench/real_sizes/moe_vs_llamacpp.sh MODEL.gguf [THREADS] [ROUNDS]
# The model: bench/real_sizes/make_random_moe_gguf.py, then llama-quantize ... Q4_K_M.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1
threads=${2:-2}
rounds=${3:-3}
llmserve=${LLMSERVE:-build/llmserve}
bench=${LLAMA_BENCH:-.deps/llama.cpp-0.3.36/build/bin/llama-bench}
gen=32
# 128 prompt tokens for llmserve: the sentence below is 10 tokens in the SmolLM2 vocabulary.
prompt=$(printf 'The history of computing is a story of layers. %.0s' $(seq 1 12))
prompt+="Each generation"
for r in $(seq 1 "$rounds"); do
  out=$("$llmserve" generate --model "$model" --threads "$threads" --prompt "$prompt" \
    --max-tokens "$gen" --ignore-eos --temperature 0 2>&1 >/dev/null | grep '^stats:')
  echo "round $r llmserve: $out"
  p=$(echo "$out" | sed -E 's/.*prompt ([0-9]+) tok.*/\1/')
  "$bench" -m "$model" -t "$threads" -p "$p" -n "$gen" -r 1 -o csv 2>/dev/null |
    awk -F, -v r="$r" '{gsub(/"/, "")}
      NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next}
      {print "round " r " llama.cpp: n_prompt " $col["n_prompt"] " n_gen " $col["n_gen"] \
         " tok/s " $col["avg_ts"]}'
done
