"""Citations in the window, with a scripted model (no llama.cpp): an answer whose words cite the sources
its chat was given shows its marks that point at one as links and lists those sources under it; a
click on a mark opens the passage (file, page, the sentence relied on); a mark that points at no source
stays text. The sources are kept with the message: they come back after a restart and through a JSON
export and import; an export made before sources imports as it did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from prefill.documents.sources import NumberedSource, cited
from prefill.session.documents import DocumentSource
from prefill.ui.main_window import MainWindow
from tests.scripted_backend import ScriptedBackend
from tests.ui.cited_text import PASSAGE, click_link, links
from tests.ui.conftest import ANSWER_TIMEOUT
from tests.ui.scripted_windows import Windows, answering, reopen

ANSWER = "Paris has about 2.1 million people [1]. The tower is 330 m tall [2]. Lyon is far away [7]."


def offered(folder: Path) -> list[NumberedSource]:
    """The sources a chat's question was given (as documents/sources.py numbers passages)."""
    report, notes = folder / "report.pdf", folder / "notes.md"
    report.write_bytes(b"%PDF-1.4")
    notes.write_text(PASSAGE)
    return [NumberedSource(1, "report.pdf", f"{report}, page 3", PASSAGE, str(report), 3, 0, len(PASSAGE), 0.9),
            NumberedSource(2, "notes.md", str(notes), PASSAGE, str(notes), None, 0, len(PASSAGE), 0.8),
            NumberedSource(3, "other.txt", "/x/other.txt", "Unrelated.", "/x/other.txt", None, 0, 10, 0.1)]


@pytest.fixture
def windows(qtbot) -> Iterator[Windows]:
    ws = Windows(qtbot)
    yield ws
    ws.close_all()


def answer_row(w: MainWindow) -> int:
    return max(i for i, r in enumerate(w.transcript.rows()) if r.role == "assistant")


def shown(qtbot, w: MainWindow, row: int):
    qtbot.waitUntil(lambda: w.chat_view.live_widget(row) is not None and w.chat_view.live_widget(row).isVisible()
                    and not w.chat_view.live_widget(row).body.rendering, timeout=10_000)
    return w.chat_view.live_widget(row)


def sources_of(w: MainWindow) -> list[tuple[int, str, int | None, str]]:
    return [(s.n, s.file, s.page, s.quote) for s in w.transcript.row(answer_row(w)).sources]


def test_a_cited_answer_links_its_marks_opens_passages_and_keeps_its_sources(
        qtbot, windows: Windows, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    given = offered(tmp_path)
    w = windows.open(data)
    answering(qtbot, w, ScriptedBackend([ANSWER]))
    # As ChatDocuments.cite does: the sources the answer's marks point at, among those it was given.
    w.controller.relay.cite = lambda text: tuple(DocumentSource.of(s) for s in cited(text, given))
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.send("How many people live in Paris, and how tall is the tower?")
    expected = [(1, given[0].file, 3, PASSAGE), (2, given[1].file, None, PASSAGE)]
    assert sources_of(w) == expected  # [7] points at no source given; source 3 is not cited

    widget = shown(qtbot, w, answer_row(w))
    assert links(widget) == [("[1]", "cite:1"), ("[2]", "cite:2")]
    assert "Lyon is far away [7]." in widget.body.segments[0].toPlainText()
    assert widget.source_list.texts() == ["[1] report.pdf, page 3", "[2] notes.md"]
    click_link(qtbot, widget, "[1]")
    qtbot.waitUntil(lambda: widget.passage is not None and widget.passage.isVisible())
    view = widget.passage
    assert view.file_name.text() == "[1] report.pdf" and view.page.text() == "Page 3"
    assert view.highlighted == ["The city of Paris has about 2.1 million people."]
    assert not view.open_button.isHidden()  # the file is on this computer
    view.close()

    cid = w.controller.conversation_id
    assert cid is not None
    qtbot.waitUntil(lambda: w.store.pending() == 0, timeout=10_000)
    windows.close(w)

    w2 = windows.open(data)  # a restart
    reopen(qtbot, w2, cid)
    assert sources_of(w2) == expected
    widget2 = shown(qtbot, w2, answer_row(w2))
    assert links(widget2) == [("[1]", "cite:1"), ("[2]", "cite:2")]
    click_link(qtbot, widget2, "[2]")
    qtbot.waitUntil(lambda: widget2.passage is not None)
    assert widget2.passage.file_name.text() == "[2] notes.md"
    widget2.passage.close()
    # By the keyboard, in the window's Tab order: the text's marks one by one, then on to its sources.
    w2.activateWindow()  # back from the passage's window
    qtbot.waitUntil(w2.isActiveWindow, timeout=5_000)
    seg = widget2.body.segments[0]
    w2.input.setFocus()
    seg.setFocus(Qt.FocusReason.TabFocusReason)  # Tab arrives at the text (from wherever): on its first mark
    assert seg.textCursor().selectedText() == "[1]"
    qtbot.keyClick(seg, Qt.Key.Key_Tab)
    assert seg.textCursor().selectedText() == "[2]"
    qtbot.keyClick(seg, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is widget2.source_list.buttons[0]
    # The conversation the next turn is asked from holds them too (the service's Said.sources).
    said = w2.controller.conversation().items[-1]
    assert [s.n for s in said.sources] == [1, 2]

    export = tmp_path / "chats.json"
    with qtbot.waitSignal(w2.history_menu.news, timeout=10_000):  # "Exported…"
        w2.history_menu.export_to(export, "json", [cid])
    doc = json.loads(export.read_text(encoding="utf-8"))
    kept = doc["conversations"][0]["messages"][-1]["figures"]["sources"]
    assert [(s["n"], s["file"], s["page"]) for s in kept] == [(1, given[0].file, 3), (2, given[1].file, None)]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    w3 = windows.open(elsewhere)
    with qtbot.waitSignal(w3.history_menu.imported, timeout=10_000):
        w3.history_menu.import_from(export)
    got: list = []
    w3.store.list_conversations(then=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    reopen(qtbot, w3, got[0][0].id)
    assert sources_of(w3) == expected
    assert links(shown(qtbot, w3, answer_row(w3))) == [("[1]", "cite:1"), ("[2]", "cite:2")]


def test_an_export_from_before_sources_imports_with_its_marks_as_text(
        qtbot, windows: Windows, tmp_path: Path) -> None:
    older = {"format": "prefill-history", "version": 1, "exported_at": 1.7e9, "conversations": [{
        "id": "c1", "title": "Paris", "created_at": 1.7e9, "updated_at": 1.7e9, "system_prompt": "", "model": "",
        "settings": {}, "messages": [
            {"role": "user", "content": "How many people?", "reasoning": "", "created_at": 1.7e9,
             "finish_reason": None, "figures": {}, "complete": True},
            {"role": "assistant", "content": ANSWER, "reasoning": "", "created_at": 1.7e9,
             "finish_reason": "stop", "figures": {"ttft_ms": 12.0}, "complete": True}]}]}
    path = tmp_path / "older.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    w = windows.open(data)
    with qtbot.waitSignal(w.history_menu.imported, timeout=10_000):
        w.history_menu.import_from(path)
    got: list = []
    w.store.list_conversations(then=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    reopen(qtbot, w, got[0][0].id)
    assert sources_of(w) == []
    widget = shown(qtbot, w, answer_row(w))
    assert links(widget) == [] and widget.source_list is None
    assert widget.body.segments[0].toPlainText() == ANSWER
