#!/usr/bin/env bash
# Packs the frozen app into an AppImage with appimagetool.
#
#   packaging/linux/build_appimage.sh DIST_DIR VARIANT VERSION
#
# appimagetool (and the AppImage runtime it embeds) is published only as a GitHub release,
# not in PyPI or Debian; set APPIMAGETOOL to its path or put it on the PATH. The release
# workflow downloads it. Without it this script still assembles the AppDir (DIST_DIR/Prefill.AppDir),
# whose AppRun can be started directly to check it.
set -euo pipefail

dist=${1:?usage: build_appimage.sh DIST_DIR VARIANT VERSION}
variant=${2:?}
version=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -x "$dist/prefill/prefill" ] || { echo "no frozen app in $dist/prefill" >&2; exit 1; }

appdir="$dist/Prefill.AppDir"
rm -rf "$appdir"
install -d "$appdir/usr/lib" "$appdir/usr/share/icons/hicolor/256x256/apps"
cp -a "$dist/prefill" "$appdir/usr/lib/prefill"
install -m 644 "$here/prefill.desktop" "$appdir/prefill.desktop"
install -m 644 "$root/resources/icons/prefill-256.png" "$appdir/prefill.png"
install -m 644 "$root/resources/icons/prefill-256.png" "$appdir/usr/share/icons/hicolor/256x256/apps/prefill.png"
ln -s prefill.png "$appdir/.DirIcon"
cat > "$appdir/AppRun" <<'APPRUN'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
exec "$here/usr/lib/prefill/prefill" "$@"
APPRUN
chmod 755 "$appdir/AppRun"

tool=${APPIMAGETOOL:-$(command -v appimagetool || true)}
if [ -z "$tool" ]; then
  echo "AppDir ready in $appdir; appimagetool not found (set APPIMAGETOOL), no AppImage made" >&2
  exit 3
fi
suffix=""; [ "$variant" = cuda ] && suffix="-cuda"
out="$dist/Prefill-$version-$(uname -m)$suffix.AppImage"
# --appimage-extract-and-run: appimagetool is itself an AppImage, and CI runners have no FUSE.
ARCH=$(uname -m) "$tool" --appimage-extract-and-run --no-appstream "$appdir" "$out"
echo "$out"
