#!/usr/bin/env bash
# The expensive packaging checks, for CI and for release builders (the cheap ones are in
# tests/packaging/). Run after `make -C packaging linux`:
#
#   packaging/check_linux.sh DIST_DIR VARIANT VERSION [--install]
#
# 1. The frozen app, copied to a read-only folder with an empty HOME: `--version`, then
#    `--self-test` (offscreen); it must load the bundled model, generate, exit 0, and write
#    nothing outside the platformdirs folders. Its documents part must index and search with the
#    bundled embedding model (all-MiniLM-L6-v2, converted into ~/.cache/prefill) and sqlite-vec.
# 2. Window shown: with PREFILL_EXIT_AFTER_SHOWN=1 the app prints "shown <ms>" and quits once
#    its main window is up; recorded when the app supports it.
# 3. The .deb: control fields, desktop entry, icons, /usr/bin/prefill -> /opt/prefill/prefill,
#    unpacked and started.
# 4. The .tar.gz: unpacked and started.
# 5. --install (root, a throwaway machine such as CI): apt installs the .deb, runs the self-test
#    as installed, removes and purges it, and checks that the user's data is still there.
# Figures go to DIST_DIR/check-report.json.
set -euo pipefail

dist=${1:?usage: check_linux.sh DIST_DIR VARIANT VERSION [--install]}
variant=${2:?}
version=${3:?}
install=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)
package=prefill; [ "$variant" = cuda ] && package=prefill-cuda
deb="$dist/${package}_${version}_${arch}.deb"
suffix=""; [ "$variant" = cuda ] && suffix="-cuda"
tarball="$dist/prefill-$version-linux-$(uname -m)$suffix.tar.gz"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
report="$dist/check-report.json"
declare -A fig

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# A clean user: empty HOME, no XDG overrides, no display.
run_as_new_user() {
  env -i PATH=/usr/bin:/bin HOME="$tmp/home" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen \
    ${PREFILL_EXIT_AFTER_SHOWN:+PREFILL_EXIT_AFTER_SHOWN=$PREFILL_EXIT_AFTER_SHOWN} "$@"
}

# --- 1. frozen app, read-only, clean HOME -------------------------------------------------
cp -a "$dist/prefill" "$tmp/app"
chmod -R a-w "$tmp/app"
mkdir -p "$tmp/home"
(cd "$tmp/app" && find . | sort) > "$tmp/before.txt"

out=$(run_as_new_user "$tmp/app/prefill" --version) || fail "--version exited $?"
[ "$out" = "prefill $version" ] || fail "--version printed '$out', not 'prefill $version'"
ok "--version: $out"

start=$(date +%s%N)
run_as_new_user "$tmp/app/prefill" --self-test > "$tmp/self-test.json" 2> "$tmp/self-test.err" \
  || { cat "$tmp/self-test.err" >&2; fail "--self-test exited non-zero"; }
fig[self_test_wall_ms]=$(ms_since "$start")
python3 - "$tmp/self-test.json" <<'PY' || { cat "$tmp/self-test.err" >&2; fail "self-test report"; }
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r.get("ok") is True, r
assert r.get("backend"), r
assert r.get("completion_tokens", 0) > 0, r
d = r.get("documents") or {}
assert d.get("ok") is True, f"documents: {d}"
if d.get("vectors") != "sqlite-vec":
    # A Python built without loadable SQLite extensions (pyenv's default) cannot load it at all: vectors are
    # then searched with numpy (the app's default anyway). Anything else is a broken bundle.
    why = d.get("why_numpy", "")
    assert "without loadable extensions" in why, f"documents: sqlite-vec did not load in the frozen app: {why}"
    print("note: this build's Python has no loadable SQLite extensions: sqlite-vec ships but cannot load "
          "(build with a Python configured --enable-loadable-sqlite-extensions to use it)")
print("ok: --self-test:", json.dumps({k: r[k] for k in r if k not in ("text", "documents")}))
print("ok: --self-test documents:", json.dumps(d))
PY
fig[self_test_report]=$(tail -1 "$tmp/self-test.json")
ls "$tmp"/app/_internal/sqlite_vec/vec0.* > /dev/null 2>&1 || fail "sqlite-vec's extension (vec0) is not in the bundle"
ls "$tmp"/app/_internal/all_minilm_l6_v2/model.zip > /dev/null 2>&1 || fail "the embedding model is not in the bundle"
ok "bundled: sqlite-vec's extension and the embedding model (all-MiniLM-L6-v2)"

# --- 2. time to window shown --------------------------------------------------------------
start=$(date +%s%N)
shown=$(PREFILL_EXIT_AFTER_SHOWN=1 run_as_new_user timeout 120 "$tmp/app/prefill" 2>&1 \
  | grep -m1 -oE '^shown [0-9.]+' || true)
if [ -n "$shown" ]; then
  fig[window_shown_ms]=${shown#shown }
  fig[window_shown_wall_ms]=$(ms_since "$start")
  ok "window shown after ${fig[window_shown_ms]} ms (process wall ${fig[window_shown_wall_ms]} ms)"
else
  echo "skip: the app does not report 'shown <ms>' yet (PREFILL_EXIT_AFTER_SHOWN)"
fi

(cd "$tmp/app" && find . | sort) > "$tmp/after.txt"
diff -u "$tmp/before.txt" "$tmp/after.txt" || fail "the app wrote into its own folder"
strays=$(cd "$tmp/home" && find . -mindepth 1 -maxdepth 2 | grep -vE '^\./\.(local|config|cache)(/|$)|^\./\.local/share$|^\./\.local/state$' || true)
[ -z "$strays" ] || fail "the app wrote outside the platformdirs folders: $strays"
ok "after the self-test and the window: nothing written into the install folder; HOME holds only: $(cd "$tmp/home" && find . -mindepth 1 -maxdepth 3 -type d | tr '\n' ' ')"

# --- 3. the .deb ---------------------------------------------------------------------------
[ -f "$deb" ] || fail "no $deb"
dpkg-deb --field "$deb" Package Version Architecture Maintainer Depends Installed-Size Description > "$tmp/fields"
for f in Package Version Architecture Maintainer Depends Installed-Size Description; do
  grep -q "^$f: ." "$tmp/fields" || fail ".deb control lacks $f"
done
grep -qx "Version: $version" "$tmp/fields" || fail ".deb version is not $version"
dpkg-deb -x "$deb" "$tmp/deb"
for p in opt/prefill/prefill usr/share/applications/prefill.desktop \
         usr/share/icons/hicolor/256x256/apps/prefill.png usr/share/icons/hicolor/scalable/apps/prefill.svg \
         usr/share/doc/$package/copyright; do
  [ -e "$tmp/deb/$p" ] || fail ".deb lacks /$p"
done
[ -x "$tmp/deb/opt/prefill/prefill" ] || fail "/opt/prefill/prefill is not executable"
[ "$(readlink "$tmp/deb/usr/bin/prefill")" = ../../opt/prefill/prefill ] || fail "/usr/bin/prefill is not a link to /opt/prefill/prefill"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$tmp/deb/usr/share/applications/prefill.desktop" || fail "desktop entry"
fi
if dpkg-deb -c "$deb" | awk '{print $2}' | grep -qv '^root/root$'; then fail ".deb has files not owned by root"; fi
out=$(run_as_new_user "$tmp/deb/usr/bin/prefill" --version) || fail "unpacked .deb: --version"
ok ".deb: fields, desktop entry, icons, /usr/bin/prefill in place; unpacked it runs ($out)"

# --- 4. the .tar.gz ------------------------------------------------------------------------
[ -f "$tarball" ] || fail "no $tarball"
mkdir "$tmp/tar" && tar -C "$tmp/tar" -xzf "$tarball"
out=$(run_as_new_user "$tmp/tar/prefill-$version/prefill" --version) || fail "unpacked .tar.gz: --version"
[ -f "$tmp/tar/prefill-$version/prefill.desktop" ] || fail ".tar.gz lacks prefill.desktop"
ok ".tar.gz: unpacked it runs ($out)"

# --- 5. install, remove, purge (opt-in) ---------------------------------------------------
if [ "$install" = --install ]; then
  [ "$(id -u)" = 0 ] || fail "--install needs root"
  data=$HOME/.local/share/prefill
  created=""; [ -d "$data" ] || created=yes
  mkdir -p "$data" && echo keep > "$data/.check-linux-marker"
  apt-get install -y -qq "$(readlink -f "$deb")" > "$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; fail "apt install"; }
  [ "$(command -v prefill)" = /usr/bin/prefill ] || fail "prefill is not on the PATH after install"
  QT_QPA_PLATFORM=offscreen prefill --self-test > /dev/null || fail "installed self-test"
  apt-get remove -y -qq "$package" > /dev/null
  [ ! -e /opt/prefill ] && [ ! -e /usr/bin/prefill ] || fail "remove left /opt/prefill or /usr/bin/prefill"
  dpkg --purge "$package" > /dev/null  # apt cannot find a package with nothing left to purge
  [ -f "$data/.check-linux-marker" ] || fail "removing the package deleted the user's data"
  rm "$data/.check-linux-marker"
  [ -z "$created" ] || rmdir "$data" 2>/dev/null || true
  ok ".deb installs (prefill on the PATH, self-test passes), removes cleanly, keeps user data"
fi

# --- figures --------------------------------------------------------------------------------
python3 "$here/tools/sizes.py" "$dist" > "$tmp/sizes.json"
{
  echo "{"
  echo "  \"variant\": \"$variant\","
  for k in self_test_wall_ms window_shown_ms window_shown_wall_ms; do
    [ -n "${fig[$k]:-}" ] && echo "  \"$k\": ${fig[$k]},"
  done
  echo "  \"self_test\": ${fig[self_test_report]},"
  echo "  \"sizes\": $(cat "$tmp/sizes.json")"
  echo "}"
} > "$report"
cat "$report"
echo "all packaging checks passed"
