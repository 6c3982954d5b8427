"""The Linux packaging files are complete and consistent.

Cheap checks; packaging/check_linux.sh builds the packages and runs them.
"""

from __future__ import annotations

import configparser
import re
import shutil
import struct
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "resources" / "icons"
DESKTOP = PACKAGING / "linux" / "prefill.desktop"
SCRIPTS = sorted(PACKAGING.rglob("*.sh"))


def desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def test_desktop_entry_starts_prefill_with_its_icon() -> None:
    entry = desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Prefill"
    assert entry["Exec"].split()[0] == "prefill"  # /usr/bin/prefill in the .deb
    assert entry["Icon"] == "prefill"  # hicolor/*/apps/prefill.{png,svg}
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";") and entry["Keywords"].endswith(";")


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed"
)
def test_desktop_entry_passes_desktop_file_validate() -> None:
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_deb_control_template_has_the_required_fields() -> None:
    control = (PACKAGING / "linux" / "control.in").read_text()
    for field in (
        "Package",
        "Version",
        "Architecture",
        "Maintainer",
        "Installed-Size",
        "Depends",
        "Description",
    ):
        assert re.search(rf"^{field}: \S", control, re.M), field
    assert "@RELATIONS@Section:" in control  # an empty substitution must leave no blank line


def test_build_deb_fills_every_placeholder_of_the_control_template() -> None:
    placeholders = set(re.findall(r"@([A-Z_]+)@", (PACKAGING / "linux" / "control.in").read_text()))
    script = (PACKAGING / "linux" / "build_deb.sh").read_text()
    filled = set(re.findall(r'-e "s/@([A-Z_]+)@/', script))
    assert placeholders == filled


def test_deb_layout_puts_prefill_on_the_path_and_keeps_user_data() -> None:
    script = (PACKAGING / "linux" / "build_deb.sh").read_text()
    assert 'ln -s ../../opt/prefill/prefill "$pkg/usr/bin/prefill"' in script
    assert "usr/share/applications/prefill.desktop" in script
    assert (
        "hicolor/256x256/apps/prefill.png" in script
        and "hicolor/scalable/apps/prefill.svg" in script
    )
    assert "--root-owner-group" in script
    # No maintainer scripts: nothing may touch home folders on remove or purge.
    for hook in ("preinst", "postinst", "prerm", "postrm"):
        assert not (PACKAGING / "linux" / hook).exists() and f"DEBIAN/{hook}" not in script, hook


def test_icons_are_a_256px_png_an_svg_and_a_multi_size_ico() -> None:
    png = (ICONS / "prefill-256.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (256, 256)
    assert ElementTree.parse(ICONS / "prefill.svg").getroot().tag.endswith("svg")
    ico = (ICONS / "prefill.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind) == (0, 1)
    sides = {ico[6 + 16 * i] or 256 for i in range(count)}
    assert {16, 32, 48, 256} <= sides


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(PACKAGING)))
def test_shell_scripts_parse_and_are_executable(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert script.stat().st_mode & 0o111, f"{script.name} is not executable"
