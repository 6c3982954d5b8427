#!/usr/bin/env bash
# Starts the frozen app on a virtual X display (Xvfb) and saves a screenshot of the screen.
#
#   packaging/linux/screenshot.sh path/to/prefill OUT.png
#
# Needs: xvfb, x11-utils (xwininfo), imagemagick (import; or scrot) and Qt's xcb libraries
# (apt-get install xvfb x11-utils imagemagick libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4
#  libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-randr0).
# Prints how long the window took to be mapped, as seen from outside the app.
set -euo pipefail

app=${1:?usage: screenshot.sh path/to/prefill OUT.png}
out=${2:?}
home=$(mktemp -d)
mkdir -p "$(dirname "$out")"

# -displayfd: Xvfb picks a free display number and writes it to fd 3 (never share someone's display).
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3> "$home/display" > /dev/null 2>&1 &
xvfb=$!
app_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
  kill "$xvfb" 2>/dev/null || true
  rm -rf "$home"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$home/display" ] && break; sleep 0.1; done
[ -s "$home/display" ] || { echo "Xvfb did not start" >&2; exit 1; }
display=:$(head -1 "$home/display")
for _ in $(seq 50); do xwininfo -display "$display" -root > /dev/null 2>&1 && break; sleep 0.1; done

start=$(date +%s%N)
env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 DISPLAY="$display" QT_QPA_PLATFORM=xcb \
  "$app" > "$home/app.log" 2>&1 &
app_pid=$!
# Wait for a window whose title names Prefill (Qt's helper windows have none), up to 60 s.
shown=""
for _ in $(seq 600); do
  if xwininfo -display "$display" -root -tree 2>/dev/null | grep -qiE '^ *0x[0-9a-f]+ "[^"]*prefill[^"]*": '; then
    shown=$(( ($(date +%s%N) - start) / 1000000 )); break
  fi
  kill -0 "$app_pid" 2>/dev/null || { cat "$home/app.log" >&2; echo "the app exited before showing a window" >&2; exit 1; }
  sleep 0.1
done
[ -n "$shown" ] || { cat "$home/app.log" >&2; echo "no window within 60 s" >&2; exit 1; }
sleep "${SCREENSHOT_SETTLE_S:-2}"  # let the first paint finish
if command -v import > /dev/null; then
  import -display "$display" -window root "$out"
else  # no ImageMagick: scrot grabs the same root window
  scrot --display "$display" --overwrite "$out"
fi
echo "window mapped after $shown ms; screenshot: $out"
