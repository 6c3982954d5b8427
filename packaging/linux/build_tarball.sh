#!/usr/bin/env bash
# Packs the frozen app into a portable .tar.gz: unpack anywhere, run ./prefill-VERSION/prefill.
#
#   packaging/linux/build_tarball.sh DIST_DIR VARIANT VERSION
#
# The archive also carries the desktop entry and icon, and install-desktop-entry.sh, which
# adds Prefill to the current user's application menu (no root needed).
set -euo pipefail

dist=${1:?usage: build_tarball.sh DIST_DIR VARIANT VERSION}
variant=${2:?}
version=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -x "$dist/prefill/prefill" ] || { echo "no frozen app in $dist/prefill" >&2; exit 1; }

suffix=""; [ "$variant" = cuda ] && suffix="-cuda"
name="prefill-$version"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -a "$dist/prefill" "$stage/$name"
install -m 644 "$here/prefill.desktop" "$stage/$name/prefill.desktop"
install -m 644 "$root/resources/icons/prefill-256.png" "$stage/$name/prefill.png"
install -m 755 "$here/install-desktop-entry.sh" "$stage/$name/install-desktop-entry.sh"
out="$dist/prefill-$version-linux-$(uname -m)$suffix.tar.gz"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -cf - "$name" | gzip -6 > "$out"
echo "$out"
