"""Regenerating a middle answer in the window, with a scripted model (no llama.cpp): the new answer is a
version of it (‹ 2 / 2 ›) and the turns after the old one are kept on the old one's branch, so paging
back puts them back, after a restart too and through a JSON export and import (the Markdown export says
which version it shows); and no action on a message deletes a turn without an Undo."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.store import HistoryStore
from prefill.store.records import AnswerVersion, KeptTurn, MessageRecord
from prefill.ui.main_window import MainWindow
from tests.scripted_backend import ScriptedBackend
from tests.ui.conftest import ANSWER_TIMEOUT
from tests.ui.scripted_windows import Windows, answering, reopen


@pytest.fixture
def windows(qtbot) -> Iterator[Windows]:
    ws = Windows(qtbot)
    yield ws
    ws.close_all()


def ask(qtbot, w: MainWindow, text: str) -> None:
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.send(text)


def rows(w: MainWindow) -> list[tuple[str, str]]:
    return [(r.role, r.content) for r in w.transcript.rows()]


def page(qtbot, w: MainWindow, row: int, name: str) -> None:
    """‹ or › on the message at `row`: the chat is read again with the version's turns after it."""
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.message_actions.run(name, row)
    qtbot.waitUntil(lambda: w.controller.complete, timeout=10_000)


def label(qtbot, w: MainWindow, row: int) -> str:
    qtbot.waitUntil(lambda: w.chat_view.live_widget(row) is not None, timeout=10_000)
    return w.chat_view.live_widget(row).version_label.text()


def settled(qtbot, w: MainWindow) -> None:
    qtbot.waitUntil(lambda: w.store.pending() == 0, timeout=10_000)


BEFORE = [("user", "Name a fruit."), ("assistant", "An apple."), ("user", "Name another."),
          ("assistant", "A pear.")]
REGENERATED = [("user", "Name a fruit."), ("assistant", "A plum.")]


def test_regenerate_keeps_the_later_turns_on_the_old_version_over_a_restart_and_in_an_export(
        qtbot, windows: Windows, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    w = windows.open(data)
    answering(qtbot, w, ScriptedBackend(["An apple.", "A pear.", "A plum.", "A fig."]))
    c = w.controller
    ask(qtbot, w, "Name a fruit.")
    ask(qtbot, w, "Name another.")
    assert rows(w) == BEFORE
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        w.message_actions.run("regenerate", 1)  # the middle answer
    assert rows(w) == REGENERATED
    assert (w.transcript.row(1).version, w.transcript.row(1).versions) == (1, 2)
    assert label(qtbot, w, 1) == "2 / 2"

    page(qtbot, w, 1, "older")  # ‹: the answer before, with the turns that followed it
    assert rows(w) == BEFORE
    assert (w.transcript.row(1).version, w.transcript.row(1).versions) == (0, 2) and label(qtbot, w, 1) == "1 / 2"
    page(qtbot, w, 1, "newer")  # ›: the new answer, nothing after it
    assert rows(w) == REGENERATED and label(qtbot, w, 1) == "2 / 2"
    ask(qtbot, w, "And a third?")  # the new branch goes on; the old one keeps its own turns
    regenerated = [*REGENERATED, ("user", "And a third?"), ("assistant", "A fig.")]
    assert rows(w) == regenerated
    page(qtbot, w, 1, "older")
    assert rows(w) == BEFORE
    cid = c.conversation_id
    assert cid is not None
    settled(qtbot, w)
    windows.close(w)

    w2 = windows.open(data)  # a restart: the same file read by a new window
    reopen(qtbot, w2, cid)
    assert rows(w2) == BEFORE and label(qtbot, w2, 1) == "1 / 2"
    page(qtbot, w2, 1, "newer")
    assert rows(w2) == regenerated
    read = [m.content for m in w2.controller.messages() if m.role != "system"]  # what the model reads next
    assert read == [text for _, text in regenerated]
    json_out, md_out = tmp_path / "chats.json", tmp_path / "chats.md"
    for path, fmt in ((json_out, "json"), (md_out, "md")):
        with qtbot.waitSignal(w2.history_menu.news, timeout=10_000):
            w2.history_menu.export_to(path, fmt, [cid])
    answer = json.loads(json_out.read_text(encoding="utf-8"))["conversations"][0]["messages"][1]
    assert (answer["content"], answer["version"]) == ("A plum.", 1)
    assert [(t["role"], t["content"]) for t in answer["versions"][0]["later"]] == BEFORE[2:]
    md = md_out.read_text(encoding="utf-8")
    assert "*answer 2 of 2 (the others, with the turns that followed them, are in the JSON export)" in md
    assert "A pear." not in md  # the branch shown, and only it
    windows.close(w2)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    w3 = windows.open(elsewhere)  # the export imported into another history
    with qtbot.waitSignal(w3.history_menu.imported, timeout=10_000):
        w3.history_menu.import_from(json_out)
    got: list = []
    w3.store.list_conversations(then=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    reopen(qtbot, w3, got[0][0].id)
    assert rows(w3) == regenerated
    page(qtbot, w3, 1, "older")
    assert rows(w3) == BEFORE


def every_turn(history: HistoryStore, cid: int) -> list[tuple[str, str]]:
    """Every turn the history holds for a chat: its messages and their versions, and the turns each
    version keeps, at any depth."""
    out: list[tuple[str, str]] = []

    def versions(role: str, vs: list[AnswerVersion]) -> None:
        for v in vs:
            out.append((role, v.content))
            for t in v.later:
                turn(t)

    def turn(t: MessageRecord | KeptTurn) -> None:
        versions(t.role, [*t.versions[: t.version], AnswerVersion(t.content), *t.versions[t.version :]])

    for m in history.messages(cid):
        turn(m)
    return out


def test_no_action_on_a_message_deletes_a_turn_without_an_undo(qtbot, windows: Windows, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    w = windows.open(data)
    answering(qtbot, w, ScriptedBackend(["a1", "a2", "a1 again", "a-edit"]))
    c = w.controller
    ask(qtbot, w, "q1")
    ask(qtbot, w, "q2")
    cid = c.conversation_id
    assert cid is not None

    def held() -> set[tuple[str, str]]:
        settled(qtbot, w)
        with HistoryStore(data / "history.sqlite3") as history:
            return set(every_turn(history, cid))

    kept = held()
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        w.message_actions.run("regenerate", 1)
    assert kept < held() and ("assistant", "a1 again") in held()
    kept = held()
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        w.message_actions._on_view_edit_saved(0, "q1 edited")  # the first question, edited and saved
    assert kept < held() and {("user", "q1 edited"), ("assistant", "a-edit")} < held()
    kept = held()
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):
        w.message_actions.run("branch", 1)  # a new chat from here: the source keeps everything
    assert held() == kept and c.conversation_id != cid

    reopen(qtbot, w, cid)
    before = rows(w)
    w.message_actions.run("delete", 1)  # hidden at once, kept in the history while Undo is offered
    assert w.chat_view.toast.isVisible() and rows(w) == before[:1] + before[2:]
    assert held() == kept
    w.chat_view.toast.undo.click()
    assert rows(w) == before and held() == kept
