"""New chat during an answer (Ctrl+N, or the chat list's button) stops the answer, keeps it as stopped
in its chat, and opens the new chat; the next question lands there."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from prefill.store import HistoryStore
from tests.ui.conftest import ANSWER_TIMEOUT, load, send, small_settings

CTRL = Qt.KeyboardModifier.ControlModifier


def _streaming(qtbot, w, text: str) -> int:
    """Ask `text` and return the chat's id once some of the answer has streamed."""
    c, t = w.controller, w.transcript
    c.send(text)
    qtbot.waitUntil(lambda: c.busy and t.rowCount() >= 2 and len(t.row(t.rowCount() - 1).content) > 5,
                    timeout=ANSWER_TIMEOUT)
    assert c.conversation_id is not None
    return c.conversation_id


def _stored(app, cid: int):
    with HistoryStore(app.data / "history.sqlite3") as history:
        return history.messages(cid)


def test_new_chat_while_an_answer_streams_stops_it_and_opens_the_new_chat(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=400))
    load(qtbot, w, smollm2)
    c = w.controller
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)  # window shortcuts answer only in the active window
    first = _streaming(qtbot, w, "Write a long story about a dragon.")
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT) as stopped, \
            qtbot.waitSignal(c.conversation_opened, timeout=ANSWER_TIMEOUT) as opened:
        qtbot.keyClick(w.input.editor, Qt.Key.Key_N, CTRL)
    assert stopped.args[0].reason == "cancelled"
    second = opened.args[0]
    assert second != first and c.conversation_id == second and not c.busy
    assert w.transcript.rowCount() == 0

    w.settings = small_settings(max_tokens=4)
    send(qtbot, w, "Say hi.")  # the next question lands in the new chat
    assert c.conversation_id == second
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert [m.role for m in _stored(app, second)] == ["user", "assistant"]
    kept = _stored(app, first)  # the stopped answer is kept, as stopped, in its own chat
    assert [m.role for m in kept] == ["user", "assistant"] and kept[1].finish_reason == "cancelled"
    assert kept[1].content and kept[1].complete

    w.settings = small_settings(max_tokens=400)
    _streaming(qtbot, w, "Write a long story about a whale.")
    with qtbot.waitSignal(c.conversation_opened, timeout=ANSWER_TIMEOUT) as opened:
        w.conversations.new_button.click()  # the chat list's button does the same
    assert opened.args[0] not in (first, second) and not c.busy and w.transcript.rowCount() == 0
