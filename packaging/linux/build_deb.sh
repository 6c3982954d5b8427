#!/usr/bin/env bash
# Packs the frozen app into a .deb: /opt/prefill, `prefill` on the PATH, a desktop entry and icons.
#
#   packaging/linux/build_deb.sh DIST_DIR VARIANT VERSION
#
# DIST_DIR holds the frozen `prefill/` folder; the .deb is written beside it. The CUDA variant is
# the package `prefill-cuda`, which replaces `prefill` (both live in /opt/prefill).
# dpkg never touches home folders, so removing or purging the package leaves each user's models,
# chats and settings (platformdirs: ~/.local/share/prefill, ~/.config/prefill) where they are.
set -euo pipefail

dist=${1:?usage: build_deb.sh DIST_DIR VARIANT VERSION}
variant=${2:?}
version=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
frozen="$dist/prefill"
[ -x "$frozen/prefill" ] || { echo "no frozen app in $frozen (run: make -C packaging frozen)" >&2; exit 1; }

arch=$(dpkg --print-architecture)
case "$variant" in
  cuda) package=prefill-cuda; relations="Provides: prefill\nConflicts: prefill\nReplaces: prefill\n"
        flavour="This build runs models on NVIDIA GPUs (CUDA) and on any x86-64 CPU." ;;
  *)    package=prefill; relations=""
        flavour="This build runs models on the CPU, using the fastest kernels the processor supports." ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg="$stage/$package"
install -d "$pkg/DEBIAN" "$pkg/opt" "$pkg/usr/bin" "$pkg/usr/share/applications" \
  "$pkg/usr/share/icons/hicolor/256x256/apps" "$pkg/usr/share/icons/hicolor/scalable/apps" \
  "$pkg/usr/share/doc/$package"
cp -a "$frozen" "$pkg/opt/prefill"
ln -s ../../opt/prefill/prefill "$pkg/usr/bin/prefill"
install -m 644 "$here/prefill.desktop" "$pkg/usr/share/applications/prefill.desktop"
install -m 644 "$root/resources/icons/prefill-256.png" "$pkg/usr/share/icons/hicolor/256x256/apps/prefill.png"
install -m 644 "$root/resources/icons/prefill.svg" "$pkg/usr/share/icons/hicolor/scalable/apps/prefill.svg"
cat > "$pkg/usr/share/doc/$package/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: prefill
Files: *
License: MIT
Comment: /opt/prefill also holds Python, Qt (LGPL-3), PySide6 (LGPL-3), llama.cpp (MIT) and the
 SmolLM2-135M-Instruct model (Apache-2.0), each under its own licence.
COPYRIGHT
# Files owned by root, no write bit for others, whatever the build machine's umask.
chmod -R u=rwX,go=rX "$pkg/opt/prefill" "$pkg/usr"

# The lowest glibc the bundled binaries ask for: the one dependency the bundle cannot carry.
glibc=$(find "$pkg/opt/prefill" -type f \( -name '*.so*' -o -perm -u+x \) -print0 \
  | xargs -0 objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | cut -d_ -f2)
# What Qt's X11/Wayland platform plugins load from the system (PySide6 wheels do not carry them):
# the xcb ones are app/prefill/ui/platform_check.py's XCB_PACKAGES (a test keeps the two in step).
depends="libc6 (>= ${glibc:-2.31}), libgcc-s1, libstdc++6, libegl1, libgl1, libfontconfig1, libfreetype6"
depends+=", libxkbcommon0, libxkbcommon-x11-0, libxcb-cursor0, libxcb-icccm4, libxcb-image0"
depends+=", libxcb-keysyms1, libxcb-randr0, libxcb-render-util0, libxcb-shape0, libxcb-xkb1"
depends+=", libxcb1, libxcb-render0, libxcb-shm0, libxcb-sync1, libxcb-util1, libxcb-xfixes0"
depends+=", libx11-6, libx11-xcb1, libdbus-1-3, libglib2.0-0"

size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@PACKAGE@/$package/" -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" \
    -e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" -e "s/@RELATIONS@/$relations/" \
    -e "s/@FLAVOUR@/$flavour/" "$here/control.in" > "$pkg/DEBIAN/control"

out="$dist/${package}_${version}_${arch}.deb"
# xz -6: about the size of -9 at a fraction of the time on a small machine.
dpkg-deb --root-owner-group -Zxz -z6 --build "$pkg" "$out"
echo "$out"
