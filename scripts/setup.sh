#!/usr/bin/env bash
# Installs the Debian packages the build needs (idempotent) and builds into build/.
# Usage: scripts/setup.sh [--no-build] [extra cmake -D flags...]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang clang-16 libclang-rt-16-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcpp-httplib-dev libssl-dev nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libcli11-dev
  libpcre2-dev libicu-dev libxxhash-dev libgtest-dev libgmock-dev libbenchmark-dev prometheus-cpp-dev
  libzmq3-dev libmsgpack-cxx-dev libucx-dev libjpeg62-turbo-dev libpng-dev libwebp-dev
  python3 python3-venv curl unzip prometheus openssl
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${1:-}" = "--no-build" ] && exit 0

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
