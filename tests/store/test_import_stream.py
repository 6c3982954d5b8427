"""A large import streams: chat by chat into one transaction, its memory bounded by the file, not by
its messages as objects (issue 33: 1,000,000 messages took 737 MB); a fault in a late chat still
leaves nothing imported."""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prefill.commands.history_io import run_import
from prefill.store import HistoryStore, ImportRejected
from prefill.store.archive import FORMAT_NAME
from prefill.store.history_import import read_import_file

if TYPE_CHECKING:
    from prefill.store.history_import import ImportStream

CHATS, MESSAGES = 400, 100  # 40,000 small messages


def _write_export(path: Path, chats: int = CHATS, messages: int = MESSAGES, bad_chat: int = -1) -> None:
    """A Prefill export written chat by chat (the test holds no more of it than the door should)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f'{{"format": "{FORMAT_NAME}", "version": 1, "exported_at": 0, "conversations": [')
        for c in range(chats):
            chat = {
                "id": f"chat-{c}", "title": f"Chat {c}", "created_at": 1_700_000_000 + c,
                "updated_at": 1_700_000_000 + c, "system_prompt": "", "model": "", "settings": {},
                "messages": [
                    {"role": "user" if m % 2 == 0 else "assistant", "content": f"message {m} of {c}",
                     "reasoning": "", "created_at": 1_700_000_000 + c, "finish_reason": None, "figures": {},
                     "complete": True}
                    for m in range(messages)
                ],
            }
            if c == bad_chat:
                chat["messages"][-1]["role"] = "narrator"  # type: ignore[index]
            f.write(("," if c else "") + json.dumps(chat))
        f.write("]}")


def _open(path: Path) -> ImportStream:
    # Imported when called: the memory test runs (and fails) on the code from before streaming too.
    from prefill.store.history_import import open_import_file

    return open_import_file(path)


def test_a_large_import_holds_one_chat_at_a_time_not_every_message(tmp_path: Path) -> None:
    """Before, the whole file became objects at once: ~12x the file here (and 737 MB for a million
    messages); now the file's text and one chat. Checked through ``prefill import`` as a person runs it."""
    path = tmp_path / "big.json"
    _write_export(path)
    size = path.stat().st_size
    db = tmp_path / "history.sqlite3"
    HistoryStore(db).close()  # the schema, made outside the measure
    gc.collect()
    tracemalloc.start()
    try:
        assert run_import(argparse.Namespace(path=path, history=db)) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * size + 8 * 2**20, f"the import peaked at {peak / 2**20:.0f} MB for a {size / 2**20:.1f} MB file"
    with HistoryStore(db) as store:
        chats = store.list_conversations()
        assert len(chats) == CHATS
        last = max(chats, key=lambda c: c.created_at)
        assert [m.content for m in store.messages(last.id)][-1] == f"message {MESSAGES - 1} of {CHATS - 1}"


def test_a_fault_in_a_late_chat_leaves_nothing_imported(store: HistoryStore, tmp_path: Path) -> None:
    path = tmp_path / "late.json"
    _write_export(path, chats=50, messages=4, bad_chat=49)
    checked = _open(path)  # the header is fine: the file opens
    with pytest.raises(ImportRejected, match=r"conversations\[49\]\.messages\[3\]\.role"):
        store.import_conversations(checked)  # 49 chats were written before the fault: rolled back
    assert store.list_conversations() == []


def test_a_file_read_whole_or_chat_by_chat_gives_the_same_chats(store: HistoryStore, tmp_path: Path) -> None:
    path = tmp_path / "same.json"
    _write_export(path, chats=20, messages=6)
    whole = read_import_file(path)
    assert tuple(_open(path)) == whole.conversations
    result = store.import_conversations(_open(path))
    assert (result.imported, result.messages) == (20, 120)
    assert store.export_conversations() == list(whole.conversations)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"format": "prefill-history", "version": 1, "conversations": [{}] ', "Expecting ',' delimiter"),
        ('{"format": "prefill-history", "version": 1, "conversations": []} x', "Extra data at line 1"),
        ('{"format": "prefill-history", "version": 1, "conversations": [] "a": 1}', "Expecting ',' delimiter"),
        ('{"format": "prefill-history", "version": 1, "conversations": [], 3: 1}', "Expecting property name"),
        ('{"format": "prefill-history", "version": 1, "conversations": {}}', "conversations: expected a list"),
        ('{"conversations": [], "version": 1, "format": "other"}', "format: expected 'prefill-history'"),
        ('[ , ]', "Expecting value at line 1, column 3"),
    ],
)
def test_a_broken_file_is_refused_when_opened(tmp_path: Path, text: str, reason: str) -> None:
    """What json.loads refused is refused as it was, before the store is asked to write anything
    (a web UI list's chats are read as they are written: its last fault shows while importing)."""
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportRejected, match=reason):
        tuple(_open(path))
