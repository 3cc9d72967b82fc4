# shellcheck shell=bash
# Helpers for docker/test-image.sh and docker/test-compose.sh (sourced, not run).
# Sets CLI (docker where its daemon answers, else podman), RUN_FLAGS (what `CLI run` needs on
# this host), BUILD_FLAGS, and functions to build the images, pick free ports and wait for URLs.
# Env: CONTAINER_CLI (force podman or docker), LLMSERVE_BASE_IMAGE (the Debian 12 base for every
# stage; default localhost/debian:bookworm-slim, made by docker/make-base.sh when missing; give
# debian:bookworm-slim where Docker Hub is reachable), LLMSERVE_CA_BUNDLE (CA certificates for
# HTTPS inside builds and containers; default the host's /etc/ssl/certs/ca-certificates.crt).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER_DIR=$ROOT/docker
BASE_IMAGE=${LLMSERVE_BASE_IMAGE:-localhost/debian:bookworm-slim}
CA_BUNDLE=${LLMSERVE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
export MODEL_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[%s] FAIL: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# Debian 12's container tools, for a root shell on a host that has neither engine.
install_podman() {
  local pkgs=(podman runc buildah podman-compose debootstrap uidmap slirp4netns
              golang-github-containernetworking-plugin-dnsname)
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get > /dev/null; then
    die "neither a docker daemon nor podman here; install podman (Debian: ${pkgs[*]})"
  fi
  log "installing ${pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" > /dev/null
}

pick_cli() {
  if [ -n "${CONTAINER_CLI:-}" ]; then
    CLI=$CONTAINER_CLI
  elif command -v docker > /dev/null && docker info > /dev/null 2>&1; then
    CLI=docker
  else
    command -v podman > /dev/null || install_podman
    CLI=podman
  fi
  export CONTAINER_CLI=$CLI
  RUN_FLAGS=()
  BUILD_FLAGS=()
  if [ "$CLI" = podman ]; then
    # crun (podman's default where installed) refuses some hosts' cgroup mode; podman's default
    # rlimits can be above the host's hard limits, which runc then refuses.
    command -v runc > /dev/null && RUN_FLAGS+=(--runtime runc)
    local nofile
    nofile=$(ulimit -Hn)
    if [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ]; then nofile=65536; fi
    RUN_FLAGS+=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
    # chroot isolation builds where nested namespaces are not allowed; the docker image format
    # keeps HEALTHCHECK (the OCI format has no field for it).
    BUILD_FLAGS+=(--isolation chroot --format docker)
  fi
  if [ -f "$CA_BUNDLE" ]; then
    BUILD_FLAGS+=(--secret "id=ca-certificates,src=$CA_BUNDLE")
  fi
}

# build_image TAG DOCKERFILE [BUILD_ARG=VALUE...]
build_image() {
  local tag=$1 file=$2
  shift 2
  local args=() a
  for a in "$@"; do args+=(--build-arg "$a"); done
  local ignore=()  # BuildKit finds FILE.dockerignore itself; podman only when named
  if [ "$CLI" = podman ] && [ -f "$file.dockerignore" ]; then ignore=(--ignorefile "$file.dockerignore"); fi
  "$CLI" build "${BUILD_FLAGS[@]}" "${ignore[@]}" "${args[@]}" -f "$file" -t "$tag" "$ROOT"
}

ensure_base() {
  case "$BASE_IMAGE" in
    localhost/*) "$DOCKER_DIR/make-base.sh" "$BASE_IMAGE" ;;
    *) "$CLI" image inspect "$BASE_IMAGE" > /dev/null 2>&1 || "$CLI" pull "$BASE_IMAGE" ;;
  esac
}

image_size() { "$CLI" image inspect --format '{{.Size}}' "$1"; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS [CURL_ARGS...]: until URL answers 2xx; fails after SECONDS.
wait_http() {
  local url=$1 limit=$2
  shift 2
  local end=$((SECONDS + limit))
  until curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2> /dev/null; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}

# The Python that has the test clients (openai, grpcio, grpcio-tools, grpcio-health-checking):
# LLMSERVE_TEST_VENV, else the repository's .venv-test, made from tests/requirements.txt.
test_python() {
  local venv=${LLMSERVE_TEST_VENV:-$ROOT/.venv-test}
  if [ ! -x "$venv/bin/python" ]; then
    log "making $venv from tests/requirements.txt" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/tests/requirements.txt" >&2
  fi
  echo "$venv/bin/python"
}
