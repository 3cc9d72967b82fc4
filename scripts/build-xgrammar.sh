#!/usr/bin/env bash
# Fetches xgrammar's PyPI source distribution (pinned, sha256-checked) and builds its C++ core
# as a static library with xgrammar's own CMakeLists, the Python bindings off (our config.cmake
# in its build dir). Cached: a second run with the library present does nothing.
# Usage: scripts/build-xgrammar.sh [DEPS_DIR]   (default .deps; CMake calls it at configure time)
# Prints nothing on success when cached; the library is DEPS_DIR/xgrammar-VER/build/libxgrammar.a.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.2.9
SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
DEPS=${1:-.deps}
ROOT="$DEPS/xgrammar-$VERSION"
SRC="$ROOT/src"
BUILD="$ROOT/build"
LIB="$BUILD/libxgrammar.a"

[ -f "$LIB" ] && [ -f "$ROOT/.built" ] && exit 0
mkdir -p "$ROOT"

TARBALL="$ROOT/xgrammar-$VERSION.tar.gz"
if [ ! -f "$TARBALL" ] || ! echo "$SHA256  $TARBALL" | sha256sum -c --status; then
  rm -f "$TARBALL"
  echo "xgrammar: fetching the $VERSION source distribution from PyPI"
  # The JSON API names the sdist's URL (relative on mirrors); pip download would first build
  # the package's metadata, which needs its whole Python build toolchain.
  url=$(python3 scripts/pypi-sdist-url.py xgrammar "$VERSION")
  [ -n "$url" ] || { echo "xgrammar: PyPI lists no sdist for $VERSION" >&2; exit 1; }
  curl -sSfL --retry 3 -o "$TARBALL.part" "$url"
  mv "$TARBALL.part" "$TARBALL"
  echo "$SHA256  $TARBALL" | sha256sum -c --status ||
    { echo "xgrammar: sha256 mismatch for $TARBALL (expected $SHA256)" >&2; rm -f "$TARBALL"; exit 1; }
fi

rm -rf "$SRC" "$BUILD"
mkdir -p "$SRC" "$BUILD"
tar -xzf "$TARBALL" -C "$SRC" --strip-components=1
# xgrammar reads config.cmake from its build dir first; its shipped one turns the bindings on.
cat >"$BUILD/config.cmake" <<'EOF'
set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)
set(XGRAMMAR_BUILD_CXX_TESTS OFF)
set(XGRAMMAR_ENABLE_CPPTRACE OFF)
set(XGRAMMAR_ENABLE_COVERAGE OFF)
set(XGRAMMAR_ENABLE_INTERNAL_CHECK OFF)
EOF
echo "xgrammar: building the C++ core ($SRC -> $LIB)"
# Our flags come after xgrammar's: no LTO (the archive must link into gcc and clang builds
# alike) and its -Werror off (newer compilers than it was tested with).
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
CXX=${XGRAMMAR_CXX:-g++} cmake -S "$SRC" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_CXX_FLAGS="-fno-lto -Wno-error -g0" >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" --target xgrammar -j "$(nproc)" >"$BUILD/build.log" 2>&1 ||
  { tail -50 "$BUILD/build.log" >&2; exit 1; }
[ -f "$LIB" ] || { echo "xgrammar: build produced no $LIB" >&2; exit 1; }
touch "$ROOT/.built"
echo "xgrammar: built $LIB"
