"""The arrows' SVG files for the style sheet: in the user's own folder, never another's file taken."""

from __future__ import annotations

from pathlib import Path

from prefill.ui.widgets.icons import icon_file


def test_an_icon_file_is_written_once_and_a_changed_one_is_written_again(tmp_path: Path) -> None:
    folder = tmp_path / "icons"
    path = Path(icon_file("chevron-down", "#112233", folder))
    assert path.parent == folder and b'stroke="#112233"' in path.read_bytes()
    written = path.stat().st_mtime_ns
    assert icon_file("chevron-down", "#112233", folder) == path.as_posix()
    assert path.stat().st_mtime_ns == written  # the same bytes: not written again
    path.write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"><image href="file:///etc/passwd"/></svg>')
    assert icon_file("chevron-down", "#112233", folder) == path.as_posix()
    assert b"passwd" not in path.read_bytes() and b'stroke="#112233"' in path.read_bytes()
    assert not list(folder.glob("*.part"))


def test_an_icon_file_that_cannot_be_written_gives_no_path(tmp_path: Path) -> None:
    blocked = tmp_path / "icons"
    blocked.write_text("a file where the folder should be")
    assert icon_file("chevron-up", "#445566", blocked) == ""
