"""Before the window: can Qt's platform plugin start here? Said in one sentence with a fix if not.

On Linux, Qt's xcb plugin loads X libraries that a minimal system lacks; without them Qt aborts
with a message that blames `libxcb-cursor0` whatever is missing. This module runs before the
QApplication exists: it dlopens the plugin (what Qt does next anyway, so the check costs little
when all is well) and, only when that fails, asks `ldd` for every missing library and names the
Debian packages that hold them. The offscreen and other non-X platforms are not checked.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

# The libraries Qt's xcb plugin loads from the system (PySide6 wheels do not carry them), by
# the Debian/Ubuntu package that ships each. packaging/linux/build_deb.sh depends on all of them.
XCB_PACKAGES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
}
XCB_PLUGIN = "libqxcb.so"
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


def debian_package(soname: str) -> str:
    """The Debian package that ships `soname`: from the table, else by Debian's naming rule
    (`libfoo.so.1` is in `libfoo1`, `libfoo-2.so.0` in `libfoo-2-0`)."""
    if soname in XCB_PACKAGES:
        return XCB_PACKAGES[soname]
    stem, _, version = soname.partition(".so.")
    stem = stem.lower()
    return f"{stem}-{version}" if stem[-1:].isdigit() else f"{stem}{version}"


def asked_platform(env: Mapping[str, str]) -> str:
    """The platform QT_QPA_PLATFORM asks for first ("xcb" from "xcb:opts;wayland"), "" if unset."""
    return env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0]


def wants_xcb(env: Mapping[str, str]) -> bool:
    """Whether Qt will start its xcb plugin: asked for, or the default in an X11 session
    (a Wayland session tries the wayland plugin first)."""
    if asked_platform(env):
        return asked_platform(env) == "xcb"
    return bool(env.get("DISPLAY")) and not env.get("WAYLAND_DISPLAY")


def plugin_dirs(env: Mapping[str, str], default: Path | None) -> list[Path]:
    """Where Qt looks for platform plugins, in its order (the environment first)."""
    dirs = [Path(d) for d in env.get("QT_QPA_PLATFORM_PLUGIN_PATH", "").split(os.pathsep) if d]
    dirs += [Path(d) / "platforms" for d in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if d]
    if default is not None:
        dirs.append(default / "platforms")
    return dirs


def find_plugin(dirs: list[Path], name: str = XCB_PLUGIN) -> Path | None:
    return next((d / name for d in dirs if (d / name).is_file()), None)


def missing_libraries(plugin: Path) -> list[str]:
    """Every library the plugin needs that the dynamic loader cannot find (`ldd` follows the
    whole tree); [] when none is missing or `ldd` cannot run."""
    try:
        out = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(set(_NOT_FOUND.findall(out)))


def plugin_load_error(plugin: Path) -> str:
    """dlopen the plugin as Qt will: "" when it loads, else the loader's reason."""
    try:
        ctypes.CDLL(str(plugin), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as e:
        return str(e)
    return ""


def missing_libraries_text(missing: list[str]) -> str:
    packages = sorted({debian_package(m) for m in missing})
    return (
        "Prefill cannot open its window: Qt's X11 (xcb) platform plugin needs libraries this system "
        f"does not have: {', '.join(missing)}.\n"
        f"Install them with:\n\n    sudo apt-get install {' '.join(packages)}\n\n"
        "Meanwhile `prefill chat` chats in the terminal."
    )


NO_DISPLAY_TEXT = (
    "Prefill cannot open its window: there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
    "Start it from a desktop session, or over SSH with `ssh -X`. Without a display, chat in the "
    "terminal:\n\n    prefill chat --model bundled\n\n(`prefill chat --help` lists its options)."
)


def startup_problem(env: Mapping[str, str], qt_plugins: Path | None, platform: str = sys.platform) -> str:
    """A message saying why the window cannot open here, or "" to go ahead.

    Args:
        env: The environment Qt will read.
        qt_plugins: Qt's own plugins folder (QLibraryInfo's PluginsPath).
        platform: sys.platform; only Linux is checked.
    """
    if not platform.startswith("linux"):
        return ""
    if asked_platform(env) in ("", "xcb", "wayland") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return NO_DISPLAY_TEXT
    if not wants_xcb(env):
        return ""
    plugin = find_plugin(plugin_dirs(env, qt_plugins))
    if plugin is None:  # Qt may know a place this does not: let it try and say
        return ""
    error = plugin_load_error(plugin)
    if not error:
        return ""
    missing = missing_libraries(plugin)
    if missing:
        return missing_libraries_text(missing)
    return f"Prefill cannot open its window: Qt's X11 (xcb) platform plugin does not load: {error}"
