#!/usr/bin/env bash
# Packs Prefill.app (made by PyInstaller's BUNDLE step in prefill.spec) into a drag-to-install .dmg.
#
#   packaging/macos/build_dmg.sh DIST_DIR VARIANT VERSION
#
# The app is signed ad hoc only (PyInstaller does that on Apple silicon): Gatekeeper asks the user
# to confirm the first start. Signing with a Developer ID and notarizing need Apple credentials
# in the release workflow's secrets (MACOS_SIGN_IDENTITY); with them set, this script signs.
set -euo pipefail

dist=${1:?usage: build_dmg.sh DIST_DIR VARIANT VERSION}
variant=${2:?}
version=${3:?}
app="$dist/Prefill.app"
[ -d "$app" ] || { echo "no $app (run: make -C packaging frozen on macOS)" >&2; exit 1; }

if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  codesign --force --deep --options runtime --timestamp -s "$MACOS_SIGN_IDENTITY" "$app"
fi
"$app/Contents/MacOS/prefill" --version

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -R "$app" "$stage/"
ln -s /Applications "$stage/Applications"
out="$dist/Prefill-$version-macos-$(uname -m).dmg"
rm -f "$out"
hdiutil create -volname "Prefill $version" -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$out"
echo "$out"
