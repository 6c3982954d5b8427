"""First start on a plain Linux machine: a missing X library or no display is said, with the fix,
and the app exits cleanly instead of Qt aborting.

The missing library is real to the dynamic loader: a copy of PySide6's own xcb plugin whose
NEEDED entries name versions no system ships (libxcb-icccm.so.9, libxkbcommon-x11.so.9), so
nothing system-wide is uninstalled. Without the check, Qt aborts (SIGABRT) blaming xcb-cursor0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QLibraryInfo

from prefill.ui import platform_check
from prefill.ui.platform_check import XCB_PACKAGES, debian_package, startup_problem

ROOT = Path(__file__).resolve().parents[2]
QT_PLUGINS = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))
REAL_XCB = QT_PLUGINS / "platforms" / "libqxcb.so"
RENAMED = {b"libxcb-icccm.so.4": b"libxcb-icccm.so.9", b"libxkbcommon-x11.so.0": b"libxkbcommon-x11.so.9"}

def _x_libraries_missing() -> bool:
    """Whether this machine lacks X libraries Qt's real xcb plugin needs (the apt line in docs/install.md adds
    them; .ci/run installs them, so CI always runs these tests)."""
    if os.environ.get("CI"):
        return False
    done = subprocess.run(["ldd", str(REAL_XCB)], capture_output=True, text=True, check=False)
    return "not found" in done.stdout


linux_xcb = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not REAL_XCB.is_file() or shutil.which("ldd") is None,
    reason="Qt's xcb plugin and ldd are Linux things",
)
with_x_libraries = pytest.mark.skipif(
    linux_xcb.args[0] or _x_libraries_missing(),
    reason="the X libraries docs/install.md lists for Linux are not installed here (Qt's real xcb plugin cannot load)",
)


@pytest.fixture
def broken_plugin_dir(tmp_path: Path) -> Path:
    """plugins/platforms/libqxcb.so: Qt's plugin with two libraries the loader cannot find. Its
    RUNPATH ($ORIGIN/../../lib) reaches Qt's own libraries through a link."""
    (tmp_path / "lib").symlink_to(QT_PLUGINS.parent / "lib")
    platforms = tmp_path / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    data = REAL_XCB.read_bytes()
    for old, new in RENAMED.items():
        assert data.count(old + b"\0") == 1
        data = data.replace(old + b"\0", new + b"\0")
    (platforms / "libqxcb.so").write_bytes(data)
    return platforms


def start_window(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m prefill` (the window) with a clean user and the given display variables."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "QT_QPA_PLATFORM_PLUGIN_PATH")}
    base.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
                PYTHONPATH=str(ROOT / "app"), PREFILL_EXIT_AFTER_SHOWN="1", **env)
    return subprocess.run([sys.executable, "-m", "prefill"], capture_output=True, text=True, env=base,
                          timeout=120, check=False)


@with_x_libraries
def test_missing_x_libraries_are_named_with_one_apt_line(tmp_path: Path, broken_plugin_dir: Path) -> None:
    out = start_window(tmp_path, DISPLAY=":99", QT_QPA_PLATFORM_PLUGIN_PATH=str(broken_plugin_dir))
    assert out.returncode == 1, out.stderr  # not Qt's abort (-6)
    assert "libxcb-icccm.so.9, libxkbcommon-x11.so.9" in out.stderr
    lines = [line.strip() for line in out.stderr.splitlines() if "apt-get install" in line]
    assert lines == ["sudo apt-get install libxcb-icccm9 libxkbcommon-x11-9"]
    assert "cursor" not in out.stderr  # Qt's own message blames xcb-cursor0 whatever is missing
    assert "prefill chat" in out.stderr and "Traceback" not in out.stderr


def test_no_display_says_so_and_points_to_the_terminal_chat(tmp_path: Path) -> None:
    out = start_window(tmp_path)
    assert out.returncode == 1, out.stderr
    assert "no display" in out.stderr and "DISPLAY" in out.stderr and "WAYLAND_DISPLAY" in out.stderr
    assert "prefill chat --model bundled" in out.stderr and "Traceback" not in out.stderr


@linux_xcb
def test_offscreen_and_other_platforms_are_not_checked(broken_plugin_dir: Path) -> None:
    for platform in ("offscreen", "minimal", "vnc", "wayland"):
        env = {"QT_QPA_PLATFORM": platform, "QT_QPA_PLATFORM_PLUGIN_PATH": str(broken_plugin_dir),
               "WAYLAND_DISPLAY": "wayland-0"}
        assert startup_problem(env, QT_PLUGINS) == "", platform
    assert startup_problem({"QT_QPA_PLATFORM": "offscreen"}, QT_PLUGINS) == ""  # no display needed
    for platform in ("", "xcb", "wayland;xcb", "xcb:dpi=96"):
        assert "no display" in startup_problem({"QT_QPA_PLATFORM": platform}, QT_PLUGINS), platform
    # A Wayland session tries the wayland plugin first: the xcb one is not in the way.
    assert startup_problem({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0",
                            "QT_QPA_PLATFORM_PLUGIN_PATH": str(broken_plugin_dir)}, QT_PLUGINS) == ""
    assert startup_problem({"DISPLAY": ":0"}, QT_PLUGINS, platform="win32") == ""
    broken = startup_problem({"DISPLAY": ":0", "QT_QPA_PLATFORM_PLUGIN_PATH": str(broken_plugin_dir)}, QT_PLUGINS)
    assert "libxcb-icccm.so.9" in broken
    asked = startup_problem({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb",
                             "QT_QPA_PLATFORM_PLUGIN_PATH": str(broken_plugin_dir)}, QT_PLUGINS)
    assert "libxcb-icccm.so.9" in asked


@with_x_libraries
def test_the_installed_plugin_passes_without_asking_ldd(monkeypatch: pytest.MonkeyPatch) -> None:
    """The xcb libraries are installed here: the check dlopens the plugin and stops there."""
    def no_ldd(plugin: Path) -> list[str]:
        raise AssertionError("ldd runs only when the plugin does not load")

    monkeypatch.setattr(platform_check, "missing_libraries", no_ldd)
    assert startup_problem({"DISPLAY": ":0"}, QT_PLUGINS) == ""


def test_sonames_map_to_debian_packages() -> None:
    assert debian_package("libxcb-cursor.so.0") == "libxcb-cursor0"
    assert debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
    assert debian_package("libglib-2.0.so.0") == "libglib2.0-0"
    # Not in the table: Debian's naming rule (a digit before the version gets a hyphen).
    assert debian_package("libxcb-xinput.so.0") == "libxcb-xinput0"
    assert debian_package("libXi.so.6") == "libxi6"
    assert debian_package("libfoo-2.so.1") == "libfoo-2-1"
    for soname, package in XCB_PACKAGES.items():
        if soname.startswith(("libxcb", "libxkb")):
            assert debian_package(soname) == package  # the rule agrees with the table there


def test_the_deb_and_the_install_page_name_every_xcb_library() -> None:
    script = (ROOT / "packaging" / "linux" / "build_deb.sh").read_text()
    readme = (ROOT / "docs" / "install.md").read_text()
    depends = {p.strip().split()[0] for line in script.splitlines() if line.startswith("depends")
               for p in line.split('"')[1].split(",") if p.strip()}
    for package in set(XCB_PACKAGES.values()):
        assert package in depends, package
        assert package in readme, package
