"""StoreProxy's typed methods: a read of a chat's messages gives the rows the store thread built."""

from __future__ import annotations

from pathlib import Path

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.shared.store_worker import StoreProxy, Stores


def test_read_messages_gives_the_rows_the_store_thread_built(qtbot, tmp_path: Path) -> None:
    from prefill.ui.chat.stored_rows import rows_of, stored_rows
    from tests.store.test_message_images import png

    with HistoryStore(tmp_path / "history.sqlite3") as history:
        conv = history.create_conversation("pictures")
        history.add_message(conv.id, "user", "what is this?", images=[png()])
        history.add_message(conv.id, "assistant", "a red square", finish_reason="stop",
                            figures={"tool_calls": [{"tool": "look", "result": "red", "arguments": "{}"}]})
        history.add_message(conv.id, "user", "and now?")
        whole = stored_rows(type("S", (), {"history": history})(), conv.id)
        tail = stored_rows(type("S", (), {"history": history})(), conv.id, last=2)
    proxy = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    try:
        got: list = []
        proxy.read_messages(conv.id, then=lambda read: got.append(rows_of(read)))
        proxy.read_messages(conv.id, last=2, then=lambda read: got.append(rows_of(read)))
        qtbot.waitUntil(lambda: len(got) == 2, timeout=10_000)
    finally:
        proxy.stop()
    assert got == [whole, tail]
    assert got[0][1][0].images and [r.role for r in got[0][1]] == ["user", "tool", "assistant", "user"]
