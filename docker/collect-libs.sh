#!/usr/bin/env bash
# Copies a binary and the shared libraries it links (found with ldd) into a self-contained tree
# for a runtime image:
#   DEST/libexec/NAME   the binary, without its debug sections (strip --strip-debug: a
#                       RelWithDebInfo build's DWARF is most of its size; symbols stay)
#   DEST/lib/           its libraries, except glibc's (the runtime base image brings those) and
#                       the NVIDIA driver's (the container toolkit mounts them)
#   DEST/bin/NAME       a wrapper that runs libexec/NAME with DEST/lib first on the library path
# Usage: docker/collect-libs.sh BINARY DEST
set -euo pipefail

bin=${1:?usage: collect-libs.sh BINARY DEST}
dest=${2:?usage: collect-libs.sh BINARY DEST}
name=$(basename "$bin")
mkdir -p "$dest/bin" "$dest/lib" "$dest/libexec"

# glibc's own libraries must come from the image that runs the binary, never from the build.
skip='^(linux-vdso|linux-gate|ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libnsl|libanl|libBrokenLocale|libcuda|libnvidia-[^/]*)\.so'

ldd "$bin" | while read -r soname rest; do
  line="$soname $rest"
  if printf '%s\n' "$(basename "$soname")" | grep -Eq "$skip"; then continue; fi
  case "$line" in
    *"not found"*) echo "collect-libs: $name: $line" >&2; exit 1 ;;
  esac
  path=$(printf '%s\n' "$line" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p')
  [ -n "$path" ] || continue
  base=$(basename "$path")
  case "$path" in /usr/local/cuda*|/usr/local/nvidia*) continue ;; esac
  cp -L "$path" "$dest/lib/$base"
done

cp -L "$bin" "$dest/libexec/$name"
if command -v strip > /dev/null; then strip --strip-debug "$dest/libexec/$name"; fi
cat > "$dest/bin/$name" <<WRAPPER
#!/bin/sh
# Runs $name with the libraries it was built against (collected by docker/collect-libs.sh).
here=\$(dirname "\$(readlink -f "\$0")")
LD_LIBRARY_PATH="\$here/../lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/../libexec/$name" "\$@"
WRAPPER
chmod 0755 "$dest/bin/$name" "$dest/libexec/$name"
echo "collect-libs: $name + $(find "$dest/lib" -type f | wc -l) libraries in $dest"
