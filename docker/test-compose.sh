#!/usr/bin/env bash
# The compose stack for real: docker/compose.yaml's llmserve (CPU) and prometheus services, with
# docker/compose.local.yaml over it (images built here from the local Debian 12 base; Prometheus
# from Debian's package). Sends a few requests, then asks Prometheus' HTTP API until its own
# scrapes of llmserve:8000 hold llmserve_requests_running and the time-to-first-token histogram
# with every request counted; stops llmserve with a drain (exit 0) and tears the stack down.
# Grafana stays out (no Debian package, no registry): its files are checked statically.
# Uses `docker compose` where a docker daemon answers, else podman-compose (CONTAINER_CLI
# overrides). Not run by .ci/run (docker/README.md). Usage: docker/test-compose.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

REQUESTS=4
project=llmserve-compose-test
work=$(mktemp -d)

pick_cli
cd "$ROOT"
models_dir=$(readlink -f models)
[ -f "$models_dir/$MODEL_NAME" ] || scripts/fetch-model.sh

compose_files=(-f docker/compose.yaml -f docker/compose.local.yaml)
if [ "$CLI" = docker ]; then
  compose() { docker compose -p "$project" "${compose_files[@]}" "$@"; }
else
  command -v podman-compose > /dev/null || install_podman
  compose() {
    podman-compose -p "$project" --podman-run-args "${RUN_FLAGS[*]}" "${compose_files[@]}" "$@"
  }
fi

LLMSERVE_PUBLISH_HTTP=$(free_port)
LLMSERVE_PUBLISH_GRPC=$(free_port)
PROMETHEUS_PUBLISH=$(free_port)
export LLMSERVE_PUBLISH_HTTP LLMSERVE_PUBLISH_GRPC PROMETHEUS_PUBLISH LLMSERVE_BASE_IMAGE=$BASE_IMAGE
api=http://127.0.0.1:$LLMSERVE_PUBLISH_HTTP
prom=http://127.0.0.1:$PROMETHEUS_PUBLISH

cleanup() {
  compose down -v -t 5 > "$work/down.log" 2>&1 || cat "$work/down.log" >&2
  "$CLI" volume rm -f "${project}_models" > /dev/null 2>&1 || true
  # podman-compose 1.0.3 leaves the project network behind.
  "$CLI" network rm "${project}_default" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- images (cached after docker/test-image.sh) ------------------------------------------
ensure_base
t=$SECONDS
log "building localhost/llmserve:cpu and localhost/llmserve-prometheus:debian from $BASE_IMAGE"
build_image localhost/llmserve:cpu docker/Dockerfile.cpu "BUILD_IMAGE=$BASE_IMAGE" "RUNTIME_IMAGE=$BASE_IMAGE" \
  > "$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; die "llmserve image build failed"; }
build_image localhost/llmserve-prometheus:debian docker/Dockerfile.prometheus "BASE_IMAGE=$BASE_IMAGE" \
  > "$work/build-prom.log" 2>&1 || { tail -n 40 "$work/build-prom.log" >&2; die "prometheus image build failed"; }
"$CLI" run --rm "${RUN_FLAGS[@]}" localhost/llmserve-prometheus:debian --version > "$work/prom-version" 2>&1
log "  images ready in $((SECONDS - t)) s; prometheus image $(( ($(image_size localhost/llmserve-prometheus:debian) + 500000) / 1000000 )) MB," \
  "$(grep -m 1 '^prometheus' "$work/prom-version")"

# --- the models volume: seeded from models/ so the entry point's fetch (LLMSERVE_MODEL_FETCH=1
# in compose.yaml) only verifies the file instead of downloading it.
compose down -v -t 5 > /dev/null 2>&1 || true
"$CLI" volume rm -f "${project}_models" > /dev/null 2>&1 || true
"$CLI" volume create --label "com.docker.compose.project=$project" --label com.docker.compose.volume=models \
  --label "io.podman.compose.project=$project" "${project}_models" > /dev/null
"$CLI" run --rm "${RUN_FLAGS[@]}" -v "${project}_models:/models" -v "$models_dir:/seed:ro" \
  --entrypoint cp localhost/llmserve:cpu "/seed/$MODEL_NAME" "/models/$MODEL_NAME" 2> "$work/seed.err" ||
  { cat "$work/seed.err" >&2; die "seeding the models volume failed"; }
log "seeded volume ${project}_models with $MODEL_NAME"

# --- up ------------------------------------------------------------------------------------
t0=$SECONDS
log "compose up llmserve prometheus (http $LLMSERVE_PUBLISH_HTTP, grpc $LLMSERVE_PUBLISH_GRPC, prometheus $PROMETHEUS_PUBLISH)"
compose up -d --no-build llmserve prometheus > "$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "compose up failed"; }
llmserve_c=$("$CLI" ps --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=llmserve" --format '{{.Names}}' | head -n 1)
[ -n "$llmserve_c" ] || { "$CLI" ps -a >&2; die "no llmserve container"; }
wait_http "$api/ready" 300 || { "$CLI" logs "$llmserve_c" > "$work/llmserve.log" 2>&1; tail -n 30 "$work/llmserve.log" >&2; die "llmserve not ready"; }
log "  ok: llmserve ($llmserve_c) ready $((SECONDS - t0)) s after up"
"$CLI" logs "$llmserve_c" > "$work/llmserve.log" 2>&1
grep -q '^{"time"' "$work/llmserve.log" || die "LLMSERVE_LOGGING_FORMAT=json (compose.yaml) not applied"
wait_http "$prom/-/ready" 120 || die "prometheus not ready"
log "  ok: prometheus ready"

# --- traffic -------------------------------------------------------------------------------
for i in $(seq "$REQUESTS"); do
  if [ $((i % 2)) = 0 ]; then stream=true; else stream=false; fi
  curl -fsS --max-time 120 -o /dev/null "$api/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"Request $i: the weather today is\", \"max_tokens\": 16, \"stream\": $stream}"
done
log "  ok: $REQUESTS completions (half streamed) through the published port"

# query EXPR: Prometheus' instant-query result as "labels value" lines ("" while it is empty).
query() {
  curl -fsS --max-time 10 "$prom/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in r["data"]["result"]:
    labels = ",".join("%s=%s" % kv for kv in sorted(s["metric"].items()))
    print("{%s} %s" % (labels, s["value"][1]))'
}
# until EXPR CHECK_PY: polls query(EXPR) until the Python condition CHECK_PY holds for its value v.
until_query() {
  local expr=$1 cond=$2 end=$((SECONDS + 90)) out=""
  while :; do
    out=$(query "$expr" || true)
    if [ -n "$out" ] && python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" \
        "$(printf '%s\n' "$out" | head -n 1 | awk '{print $NF}')"; then
      printf '%s\n' "$out"
      return 0
    fi
    [ "$SECONDS" -lt "$end" ] || { echo "last result: '$out'" >&2; return 1; }
    sleep 2
  done
}

t1=$SECONDS
log "Prometheus HTTP API, from its own scrapes of llmserve:8000:"
r=$(until_query 'up{job="llmserve",backend="cpu"}' 'v == 1') || die "llmserve target not up"
log "  up{job=\"llmserve\",backend=\"cpu\"}: $r"
r=$(until_query 'llmserve_requests_running{job="llmserve"}' 'v >= 0') || die "no llmserve_requests_running series"
log "  llmserve_requests_running: $r"
r=$(until_query "llmserve_time_to_first_token_seconds_count{job=\"llmserve\"}" "v >= $REQUESTS") ||
  die "the TTFT histogram does not count the $REQUESTS requests"
log "  llmserve_time_to_first_token_seconds_count: $r"
r=$(until_query 'count(llmserve_time_to_first_token_seconds_bucket{job="llmserve"})' 'v > 1') ||
  die "no TTFT buckets"
log "  TTFT buckets scraped: $(printf '%s' "$r" | awk '{print $NF}') series"
r=$(until_query 'histogram_quantile(0.9, sum by (le) (llmserve_time_to_first_token_seconds_bucket{job="llmserve"}))' 'v > 0') ||
  die "histogram_quantile over the TTFT buckets is empty"
log "  p90 TTFT (all requests so far): $(printf '%s' "$r" | awk '{print $NF}') s"
targets=$(curl -fsS "$prom/api/v1/targets" | python3 -c '
import json, sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    print("%s %s=%s" % (t["labels"]["job"], t["scrapeUrl"], t["health"]))' | sort | tr '\n' ';')
log "  targets: $targets"
log "  series appeared $((SECONDS - t1)) s after the requests"

# --- drain and down -------------------------------------------------------------------------
"$CLI" stop -t 40 "$llmserve_c" > /dev/null 2> "$work/stop.err" || { cat "$work/stop.err" >&2; die "stop llmserve"; }
code=$("$CLI" inspect --format '{{.State.ExitCode}}' "$llmserve_c")
[ "$code" = 0 ] || die "llmserve exited $code on stop"
log "  ok: llmserve stopped, exit 0"
log "SUMMARY compose stack (llmserve + Debian prometheus) up, scraped and queried; test-compose.sh took $SECONDS s"
