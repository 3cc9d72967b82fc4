#!/usr/bin/env bash
# Side-by-side decode throughput of two bench_engine binaries (A, B) on this noisy host: ROUNDS
# rounds, the two binaries alternating (A first in even rounds, B first in odd ones), each run
# measuring 1 and 16 streams. One line per run and level: "round A|B c<streams> <decode tok/s>";
# summarise with ab_summary.py (per-round B / A ratios and 16 / 1 ratios, medians).
#   ROUNDS=10 PROMPT=32 REPEATS=3 bench/engine/ab_engine.sh OLD_BIN NEW_BIN > ab.txt
#   python3 bench/engine/ab_summary.py ab.txt
set -euo pipefail
A=$1
B=$2
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
for r in $(seq 1 "${ROUNDS:-6}"); do
  order="A B"
  [ $((r % 2)) = 1 ] && order="B A"
  for side in $order; do
    bin=$A
    [ "$side" = B ] && bin=$B
    "$bin" --model "$MODEL" --concurrency 1,16 --threads 2 --prompt-tokens "${PROMPT:-32}" \
      --gen-tokens "${GEN:-128}" --repeats "${REPEATS:-3}" --kv-mib 1024 \
      --cpu-matmul-precision "${PRECISION:-q8x2}" 2>/dev/null |
      awk -v s="$side" -v r="$r" '$1 ~ /^[0-9]+$/ {print r, s, "c" $1, $4}'
  done
done
