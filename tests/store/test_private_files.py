"""Conversation text and keys are private: the history, its WAL, the settings and the saved
endpoints are 0600 in 0700 folders, whatever the umask; an existing wider file is narrowed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.private_paths import private_file, private_folder, write_private
from prefill.store import HistoryStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)  # the usual umask: files 0644, folders 0755 unless the code says otherwise
    yield
    os.umask(old)


def test_the_history_and_its_folder_are_private(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "data" / "history.sqlite3"
    store = HistoryStore(path)
    try:
        conv = store.create_conversation("secret chat")
        store.add_message(conv.id, "user", "my secret")
    finally:
        store.close()
    assert mode(path.parent) == 0o700
    written = [p for p in path.parent.iterdir() if p.name.startswith("history.sqlite3")]
    assert path in written and all(mode(p) == 0o600 for p in written)


def test_an_existing_wide_history_is_narrowed(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "history.sqlite3"
    first = HistoryStore(path)
    first.create_conversation("a chat")
    first.close()
    os.chmod(path, 0o644)
    os.chmod(tmp_path, 0o755)
    again = HistoryStore(path)
    again.list_conversations()
    again.close()
    assert mode(path) == 0o600 and mode(tmp_path) == 0o700


def test_settings_and_endpoints_files_are_private(tmp_path: Path, open_umask: None) -> None:
    target = tmp_path / "config" / "endpoints.json"
    write_private(target, "{}")
    assert mode(target) == 0o600 and mode(target.parent) == 0o700


def test_narrowing_keeps_the_owners_own_bits(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    os.chmod(f, 0o444)  # read-only for everyone: the owner stays read-only
    private_file(f)
    assert mode(f) == 0o400
    d = private_folder(tmp_path / "a" / "b")
    assert mode(d) == 0o700
