#!/bin/sh
# Container entry point: `llmserve serve` configured by LLMSERVE_* variables.
#   LLMSERVE_MODEL_FETCH=1  download the default model into /models first (scripts/fetch-model.sh;
#                           a no-op when the verified file is already there).
#   Every other LLMSERVE_<SECTION>_<KEY> is read by the daemon itself (config/default.yaml).
# Arguments are passed to `llmserve serve`; `llmserve SUBCOMMAND ...` runs another subcommand.
set -eu

here=$(dirname "$(readlink -f "$0")")
root=$(dirname "$here")

# Not a configuration key: the daemon refuses unknown LLMSERVE_MODEL_* variables, so drop it.
fetch=${LLMSERVE_MODEL_FETCH:-0}
unset LLMSERVE_MODEL_FETCH

if [ "${1:-}" = llmserve ]; then
  shift
  exec "$here/llmserve" "$@"
fi

case "$fetch" in
  1 | true | yes) "$root/scripts/fetch-model.sh" ;;
  0 | false | no | "") ;;
  *) echo "entrypoint: LLMSERVE_MODEL_FETCH must be 1 or 0, got '$fetch'" >&2; exit 2 ;;
esac

model=${LLMSERVE_MODEL_PATH:-}
if [ -n "$model" ] && [ ! -e "$model" ]; then
  echo "entrypoint: no model at $model: mount one at /models or set LLMSERVE_MODEL_FETCH=1" >&2
fi

exec "$here/llmserve" serve "$@"
