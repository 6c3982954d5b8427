"""Alternatives and branches in the real window: an answer's versions paged in place (a middle answer's
with the turns that followed each), edit in place (the words before and the turns after them kept as a
version of the question), Branch from here (its prefix reused), delete with Undo."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit

from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.request import ChatRequest
from prefill.store import HistoryStore
from prefill.store.history_export import write_export
from prefill.store.history_import import read_import_file
from prefill.ui.main_window import MainWindow
from tests.ui.conftest import ANSWER_TIMEOUT, load, send, small_settings


def _spy_requests(w: MainWindow) -> list[ChatRequest]:
    """The requests the window hands the engine, in order (the worker still gets each)."""
    seen: list[ChatRequest] = []
    worker = w.engine.worker
    real = worker.generate

    def generate(request_id: int, request: ChatRequest) -> None:
        seen.append(request)
        real(request_id, request)

    worker.generate = generate  # type: ignore[method-assign]
    return seen


def _regenerate(qtbot, w: MainWindow, row: int, max_tokens: int) -> str:
    w.settings = small_settings(max_tokens=max_tokens)  # greedy: a longer limit makes a different answer
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as done:
        w.message_actions.run("regenerate", row)
    return done.args[0].text


def _page(qtbot, w: MainWindow, row: int, name: str, expect: str) -> None:
    w.message_actions.run(name, row)
    qtbot.waitUntil(lambda: w.transcript.row(row).content == expect, timeout=10_000)


def _stored(app, cid: int):
    with HistoryStore(app.data / "history.sqlite3") as history:
        return history.messages(cid)


def test_regenerate_keeps_every_answer_paged_in_place_and_kept_over_a_restart(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=3))
    load(qtbot, w, smollm2)
    c = w.controller
    first = send(qtbot, w, "Tell me about the sea.").text
    second = _regenerate(qtbot, w, 1, 6)
    third = _regenerate(qtbot, w, 1, 9)
    assert len({first, second, third}) == 3
    assert [r.role for r in w.transcript.rows()] == ["user", "assistant"]
    answer = w.transcript.row(1)
    assert (answer.content, answer.version, answer.versions) == (third, 2, 3)
    widget = w.chat_view.live_widget(1)
    assert widget.version_label.text() == "3 / 3" and widget.version_label.isVisible()
    assert widget.buttons["older"].isEnabled() and not widget.buttons["newer"].isEnabled()

    _page(qtbot, w, 1, "older", second)
    _page(qtbot, w, 1, "older", first)
    assert w.chat_view.live_widget(1).version_label.text() == "1 / 3"
    assert not w.chat_view.live_widget(1).buttons["older"].isEnabled()
    _page(qtbot, w, 1, "newer", second)
    assert w.chat_view.live_widget(1).text() == second  # the widget shows the version paged to
    requests = _spy_requests(w)
    w.settings = small_settings(max_tokens=3)
    send(qtbot, w, "And the sky?")
    assert [(m.role, m.content) for m in requests[-1].messages] == [
        ("user", "Tell me about the sea."), ("assistant", second), ("user", "And the sky?")]
    cid = c.conversation_id
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    stored = _stored(app, cid)[1]
    assert (stored.content, stored.version, [v.content for v in stored.all_versions()]) == (
        second, 1, [first, second, third])
    app.close(w)

    w2 = app.open()  # a restart: a new window, a new HistoryStore on the same file
    load(qtbot, w2, smollm2)
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(cid)
    again = w2.transcript.row(1)
    assert (again.content, again.version, again.versions) == (second, 1, 3)
    qtbot.waitUntil(lambda: w2.chat_view.live_widget(1) is not None, timeout=10_000)
    assert w2.chat_view.live_widget(1).version_label.text() == "2 / 3"
    _page(qtbot, w2, 1, "newer", third)
    assert [m.content for m in w2.controller.messages()][:2] == ["Tell me about the sea.", third]


def test_regenerate_of_an_earlier_answer_keeps_the_later_turns_on_the_old_version(
        app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    send(qtbot, w, "Name a fruit.")
    send(qtbot, w, "Name another.")
    before = [(r.role, r.content) for r in w.transcript.rows()]
    new = _regenerate(qtbot, w, 1, 8)
    assert [(r.role, r.content) for r in w.transcript.rows()] == [("user", "Name a fruit."), ("assistant", new)]
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):  # ‹: the old answer and its turns
        w.message_actions.run("older", 1)
    assert [(r.role, r.content) for r in w.transcript.rows()] == before


def test_edit_in_place_with_the_keyboard_only(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    send(qtbot, w, "Say hi.")
    edit = w.chat_view.live_widget(0).buttons["edit"]
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_Space)  # the Edit button, pressed from the keyboard
    editor = w.chat_view.live_widget(0).editor
    assert editor is not None and editor.text.hasFocus() and editor.text.toPlainText() == "Say hi."
    assert editor.text.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    assert w.chat_view.live_widget(0).editor is editor and not w.chat_view.live_widget(0).browser.isVisible()
    qtbot.keyClicks(editor.text, " Loudly.")
    qtbot.keyClick(editor.text, Qt.Key.Key_Escape)  # cancelled: the message is as it was
    assert w.chat_view.live_widget(0).editor is None and w.transcript.row(0).content == "Say hi."
    assert w.chat_view.live_widget(0).browser.isVisible()

    edit = w.chat_view.live_widget(0).buttons["edit"]
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_Space)
    text = w.chat_view.live_widget(0).editor.text
    qtbot.keyClick(text, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(text, "Say bye.")
    qtbot.keyClick(text, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # a new line, not Save
    qtbot.keyClicks(text, "Please.")
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        qtbot.keyClick(text, Qt.Key.Key_Return)
    rows = w.transcript.rows()
    assert [(r.role, r.content) for r in rows[:1]] == [("user", "Say bye.\nPlease.")] and len(rows) == 2
    assert w.chat_view.live_widget(0).editor is None
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert [m.content for m in _stored(app, w.controller.conversation_id)][0] == "Say bye.\nPlease."


def test_branch_from_here_opens_a_new_chat_that_reuses_the_prefix(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=6), KvDiskCache(app.data / "kv", min_free=0))
    load(qtbot, w, smollm2)
    c = w.controller
    send(qtbot, w, "What is a comet?")
    send(qtbot, w, "How big are they?")
    source = c.conversation_id
    kept = [(r.role, r.content) for r in w.transcript.rows()[:2]]
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000) as opened:
        w.message_actions.run("branch", 1)
    branch = opened.args[0]
    assert branch != source and c.conversation_id == branch
    assert [(r.role, r.content) for r in w.transcript.rows()] == kept
    with HistoryStore(app.data / "history.sqlite3") as history:
        title = history.conversation(source).title
        assert history.conversation(branch).title == f"Branch of {title}"
        assert len(history.messages(source)) == 4  # the source keeps its later turns
    qtbot.waitUntil(lambda: any(w.conversations.list.item(i).text().startswith("Branch of")
                                for i in range(w.conversations.list.count())), timeout=10_000)
    f = send(qtbot, w, "Where do they come from?")
    assert f.metrics.cached_tokens > 0 and f.metrics.evaluated_tokens < f.metrics.prompt_tokens


def test_delete_hides_at_once_and_undo_puts_it_back(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    c = w.controller
    send(qtbot, w, "One")
    send(qtbot, w, "Two")
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    before = [(r.role, r.content, r.message_id) for r in w.transcript.rows()]
    toast = w.chat_view.toast
    w.message_actions.run("delete", 1)
    assert [r[:2] for r in before[:1] + before[2:]] == [(r.role, r.content) for r in w.transcript.rows()]
    assert toast.isVisible() and toast.label.text() == "Message deleted." and c.pending.timer.isActive()
    assert c.pending.timer.interval() == 8000
    toast.undo.click()
    assert [(r.role, r.content, r.message_id) for r in w.transcript.rows()] == before and not toast.isVisible()
    assert not c.pending.timer.isActive()

    w.message_actions.run("delete", 3)
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert len(_stored(app, c.conversation_id)) == 4  # kept while Undo is offered: a crash loses nothing
    c.pending.timer.timeout.emit()  # the toast runs out
    assert not toast.isVisible()
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert [(m.role, m.content) for m in _stored(app, c.conversation_id)] == [r[:2] for r in before[:3]]

    w.message_actions.run("delete", 0)  # another action supersedes the offer: the delete happens then
    send(qtbot, w, "Three")
    assert not toast.isVisible()
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert [m.content for m in _stored(app, c.conversation_id)][:2] == [before[1][1], before[2][1]]


def test_a_regeneration_that_fails_brings_back_the_answer_before_it(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    c = w.controller
    kept = send(qtbot, w, "Name a colour.").text
    w.engine.worker.generate = lambda _id, _request: None  # type: ignore[method-assign]  # it never answers
    w.message_actions.run("regenerate", 1)
    assert w.transcript.row(1).streaming and w.transcript.row(1).versions == 2
    assert c.answering is not None
    w.engine.worker.failed.emit(c.answering.id, "The model stopped.")
    qtbot.waitUntil(lambda: w.transcript.row(1).content == kept and not w.transcript.row(1).streaming)
    assert (w.transcript.row(1).version, w.transcript.row(1).versions) == (0, 1) and not c.busy
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    stored = _stored(app, c.conversation_id)[1]
    assert (stored.content, stored.versions, stored.complete) == (kept, (), True)


def test_undo_is_withdrawn_when_the_chat_is_deleted(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    send(qtbot, w, "One")
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    w.message_actions.run("delete", 1)
    assert w.chat_view.toast.isVisible()
    w.history.delete(w.controller.conversation_id)
    assert not w.chat_view.toast.isVisible() and w.transcript.rowCount() == 0
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert not w.problem.isVisible()  # the message went with its chat: nothing to report


def test_edit_keeps_the_later_turns_on_the_old_version_over_a_restart_and_in_an_export(
        app, qtbot, smollm2: Path, tmp_path: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, smollm2)
    c = w.controller
    first = send(qtbot, w, "Name a fruit.").text
    send(qtbot, w, "Name another.")
    before = [(r.role, r.content) for r in w.transcript.rows()]
    assert [role for role, _ in before] == ["user", "assistant", "user", "assistant"]
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        w.message_actions._on_view_edit_saved(0, "Name a colour.")  # the middle question, edited and saved
    rows = w.transcript.rows()
    assert [(r.role, r.content) for r in rows][:1] == [("user", "Name a colour.")] and len(rows) == 2
    assert (rows[0].version, rows[0].versions) == (1, 2)
    qtbot.waitUntil(lambda: w.chat_view.live_widget(0) is not None, timeout=10_000)
    assert w.chat_view.live_widget(0).version_label.text() == "2 / 2"
    edited = [(r.role, r.content) for r in rows]

    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):  # ‹: the old words, their turns after them
        w.message_actions.run("older", 0)
    assert [(r.role, r.content) for r in w.transcript.rows()] == before
    assert w.transcript.row(1).content == first and w.transcript.row(0).versions == 2
    qtbot.waitUntil(lambda: w.chat_view.live_widget(0) is not None, timeout=10_000)
    assert w.chat_view.live_widget(0).version_label.text() == "1 / 2"
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):  # ›: the new words and their answer
        w.message_actions.run("newer", 0)
    assert [(r.role, r.content) for r in w.transcript.rows()] == edited
    cid = c.conversation_id
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    app.close(w)

    w2 = app.open()  # a restart: the same file read by a new window
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(cid)
    assert [(r.role, r.content) for r in w2.transcript.rows()] == edited
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.message_actions.run("older", 0)
    assert [(r.role, r.content) for r in w2.transcript.rows()] == before
    qtbot.waitUntil(lambda: w2.store.pending() == 0)
    app.close(w2)

    with HistoryStore(app.data / "history.sqlite3") as history:  # an export holds both versions, and back
        out = tmp_path / "chats.json"
        write_export(out, history.export_conversations([cid]), "json")
        question = json.loads(out.read_text("utf-8"))["conversations"][0]["messages"][0]
        assert question["content"] == "Name a fruit." and question["version"] == 0
        kept = question["versions"][0]
        assert kept["content"] == "Name a colour." and [t["role"] for t in kept["later"]] == ["assistant"]
        history.delete_conversation(cid)
        history.import_conversations(read_import_file(out).conversations)
        (conv,) = history.list_conversations()
        assert [(m.role, m.content) for m in history.messages(conv.id)] == before
        question_id = history.messages(conv.id)[0].id
        history.show_version(question_id, 1)
        assert [(m.role, m.content) for m in history.messages(conv.id)] == edited
