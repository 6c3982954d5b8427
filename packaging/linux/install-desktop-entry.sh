#!/usr/bin/env sh
# Adds this unpacked Prefill to your application menu (per user; run it again after moving the folder).
# Undo: rm ~/.local/share/applications/prefill.desktop ~/.local/share/icons/hicolor/256x256/apps/prefill.png
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
mkdir -p "$data/applications" "$data/icons/hicolor/256x256/apps"
cp "$here/prefill.png" "$data/icons/hicolor/256x256/apps/prefill.png"
sed "s|^Exec=prefill|Exec=\"$here/prefill\"|" "$here/prefill.desktop" > "$data/applications/prefill.desktop"
echo "added Prefill to the application menu ($data/applications/prefill.desktop)"
