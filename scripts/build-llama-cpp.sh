#!/usr/bin/env bash
# Builds native llama.cpp (llama-bench, llama-quantize, llama-server, llama-cli) for the side-by-side
# benchmarks, from the vendor/llama.cpp tree of the llama-cpp-python source distribution on PyPI
# (pinned, sha256-checked). Cached: a second run with the binaries present prints the bin dir only.
#
# Usage: scripts/build-llama-cpp.sh [DEPS_DIR]        (default .deps, git-ignored)
#   env LLAMA_CPP_PY_VERSION / LLAMA_CPP_PY_SHA256  another sdist (both, or the version alone: unchecked)
#   env JOBS (default 2), NICE (default 19)           the machine is shared: builds run niced, -j 2
#   env LLAMA_CPP_BIN=/path/to/bin                    reuse an existing build (must hold llama-bench)
# Prints the bin dir (DEPS_DIR/llama.cpp-VER/build/bin) on its last line of stdout.
#
# CPU flags: on a host whose /proc/cpuinfo lists amx, ggml's AMX path crashes (SIGILL / wrong tiles
# under this hypervisor, bench/RESULTS.md sessions 14 and 17), so it is configured with
# GGML_NATIVE=OFF, AVX-512 / VNNI / BF16 on and every AMX option off; elsewhere GGML_NATIVE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${LLAMA_CPP_PY_VERSION:-0.3.36}
if [ "$VERSION" = 0.3.36 ]; then
  SHA256=${LLAMA_CPP_PY_SHA256:-832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e}
else
  SHA256=${LLAMA_CPP_PY_SHA256:-}
fi
DEPS=${1:-.deps}
JOBS=${JOBS:-2}
NICE=${NICE:-19}
ROOT="$DEPS/llama.cpp-$VERSION"
SRC="$ROOT/src"
BUILD="$ROOT/build"
BIN="$BUILD/bin"
TARGETS=(llama-bench llama-quantize llama-server llama-cli)

if [ -n "${LLAMA_CPP_BIN:-}" ]; then
  [ -x "$LLAMA_CPP_BIN/llama-bench" ] || { echo "llama.cpp: no llama-bench in $LLAMA_CPP_BIN" >&2; exit 1; }
  echo "$LLAMA_CPP_BIN"
  exit 0
fi

have_all() { for t in "${TARGETS[@]}"; do [ -x "$BIN/$t" ] || return 1; done; }
if have_all && [ -f "$ROOT/.built" ]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$ROOT"

TARBALL="$ROOT/llama_cpp_python-$VERSION.tar.gz"
check() { [ -z "$SHA256" ] || echo "$SHA256  $TARBALL" | sha256sum -c --status; }
if [ ! -f "$TARBALL" ] || ! check; then
  rm -f "$TARBALL"
  echo "llama.cpp: fetching the llama-cpp-python $VERSION source distribution from PyPI" >&2
  # The JSON API names the sdist's URL (relative on mirrors); `pip download --no-binary :all:`
  # would first build the package's metadata, which needs scikit-build-core and a compiler pass.
  url=$(python3 scripts/pypi-sdist-url.py llama-cpp-python "$VERSION")
  [ -n "$url" ] || { echo "llama.cpp: PyPI lists no llama-cpp-python sdist for $VERSION" >&2; exit 1; }
  curl -sSfL --retry 3 -o "$TARBALL.part" "$url"
  mv "$TARBALL.part" "$TARBALL"
  check || { echo "llama.cpp: sha256 mismatch for $TARBALL (expected $SHA256)" >&2; rm -f "$TARBALL"; exit 1; }
fi

if [ ! -f "$SRC/CMakeLists.txt" ]; then
  rm -rf "$SRC" "$ROOT/unpack"
  mkdir -p "$ROOT/unpack"
  tar -xzf "$TARBALL" -C "$ROOT/unpack" --strip-components=1
  mv "$ROOT/unpack/vendor/llama.cpp" "$SRC"
  rm -rf "$ROOT/unpack"
fi

CPU_FLAGS=(-DGGML_NATIVE=ON)
if grep -qw 'amx[a-z_0-9]*' /proc/cpuinfo 2>/dev/null; then
  CPU_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
             -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON
             -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
echo "llama.cpp: configuring $SRC (${CPU_FLAGS[*]})" >&2
nice -n "$NICE" cmake -S "$SRC" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DGGML_OPENMP=ON "${CPU_FLAGS[@]}" \
  >"$ROOT/configure.log" 2>&1 || { tail -40 "$ROOT/configure.log" >&2; exit 1; }
echo "llama.cpp: building ${TARGETS[*]} (nice -n $NICE, -j $JOBS; log $ROOT/build.log)" >&2
nice -n "$NICE" cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$JOBS" >"$ROOT/build.log" 2>&1 ||
  { tail -50 "$ROOT/build.log" >&2; exit 1; }
have_all || { echo "llama.cpp: the build left no ${TARGETS[*]} in $BIN" >&2; exit 1; }
{ echo "version $VERSION"; echo "flags ${CPU_FLAGS[*]}"; } >"$ROOT/.built"
echo "llama.cpp: built into $BIN" >&2
echo "$BIN"
