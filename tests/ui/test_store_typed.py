"""StoreProxy's typed methods: a read of a chat's messages gives its rows, images and tool calls included."""

from __future__ import annotations

from pathlib import Path

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.workers.store_worker import StoreProxy, Stores


def test_read_messages_gives_a_chats_rows_with_images_and_tool_calls(qtbot, tmp_path: Path) -> None:
    from prefill.ui.chat.stored_rows import rows_of
    from tests.store.test_message_images import png

    with HistoryStore(tmp_path / "history.sqlite3") as history:
        conv = history.create_conversation("pictures")
        history.add_message(conv.id, "user", "what is this?", images=[png()])
        history.add_message(conv.id, "assistant", "a red square", finish_reason="stop",
                            figures={"tool_calls": [{"tool": "look", "result": "red", "arguments": "{}"}]})
        history.add_message(conv.id, "user", "and now?")
    proxy = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    try:
        got: list = []
        proxy.read_messages(conv.id, then=lambda read: got.append(rows_of(read)))
        proxy.read_messages(conv.id, last=2, then=lambda read: got.append(rows_of(read)))
        qtbot.waitUntil(lambda: len(got) == 2, timeout=10_000)
    finally:
        proxy.stop()
    (whole_conv, whole), (tail_conv, tail) = got
    assert whole_conv.id == tail_conv.id == conv.id
    assert whole[0].images and [r.role for r in whole] == ["user", "tool", "assistant", "user"]
    assert [(r.role, r.content) for r in whole] == [("user", "what is this?"), ("tool", "red"),
                                                   ("assistant", "a red square"), ("user", "and now?")]
    def seen(rows: list) -> list:
        return [(r.role, r.content, r.figures, r.message_id, r.position, r.versions) for r in rows]

    assert seen(tail) == seen(whole[1:])  # the last two messages: the answer with its call, and the question after
