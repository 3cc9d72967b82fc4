#!/usr/bin/env bash
# Makes a local Debian 12 base image for hosts that reach the Debian mirror but no image registry:
# debootstrap's minbase, trimmed the way Docker Hub's debian:bookworm-slim is (no documentation,
# man pages or translations, now or in later installs; no apt lists or caches in the layer), and
# imported as a single-layer image. Does nothing when the image already exists.
# Usage: docker/make-base.sh [IMAGE]   (default localhost/debian:bookworm-slim)
# Env: CONTAINER_CLI (podman or docker; default: docker when its daemon answers, else podman),
#      DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

image=${1:-localhost/debian:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -z "${CONTAINER_CLI:-}" ]; then
  if command -v docker > /dev/null && docker info > /dev/null 2>&1; then CONTAINER_CLI=docker; else CONTAINER_CLI=podman; fi
fi
cli=$CONTAINER_CLI

if "$cli" image inspect "$image" > /dev/null 2>&1; then
  echo "make-base: $image is already there"
  exit 0
fi
command -v debootstrap > /dev/null || { echo "make-base: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "make-base: debootstrap needs root" >&2; exit 1; }

root=$(mktemp -d /var/tmp/llmserve-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "make-base: debootstrap --variant=minbase bookworm from $mirror"
debootstrap --variant=minbase --components=main bookworm "$root" "$mirror" > "$root.log" 2>&1 || {
  tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1
}
rm -f "$root.log"

# Later installs (the image builds) skip documentation too.
cat > "$root/etc/dpkg/dpkg.cfg.d/llmserve-slim" <<'EOF'
# No documentation in this image: docs, man and info pages, translations (copyright files stay).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
cat > "$root/etc/apt/apt.conf.d/90llmserve-slim" <<'EOF'
// Keep image layers small: no translated package descriptions, no downloaded .deb files kept.
Acquire::Languages "none";
APT::Keep-Downloaded-Packages "false";
Binary::apt::APT::Keep-Downloaded-Packages "false";
EOF
# The same suites as Debian's official image: the release, its updates and its security fixes.
rm -f "$root/etc/apt/sources.list"
cat > "$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2> /dev/null || true
rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/lib/apt/lists/* \
  "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
# The host's name and resolver are the container engine's to provide.
: > "$root/etc/hostname"
: > "$root/etc/resolv.conf"

tar -C "$root" --numeric-owner -c . | "$cli" import --change 'CMD ["bash"]' - "$image" > /dev/null
echo "make-base: $image imported ($("$cli" image inspect --format '{{.Size}}' "$image") bytes)"
