"""The documents room in the window's design: the collections as cards (name, size in words people read, the
folder each watches, its embedding model) with icon actions (add a folder, re-index, remove, asked first),
the chosen one's files as rows with the reader's reasons, an empty state that says what to do, a new
collection named in a sheet; the indexing panel as a card as wide as the composer, a thin bar in the
theme's colours by state, a compact list of the files in hand with their states, and the files not read as
rows under a warning mark. Nothing in the room writes a colour, a pixel size or a stock icon of its own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem, QToolButton

from prefill.documents.index import CollectionSummary, FileRecord
from prefill.documents.indexer import IndexProgress
from prefill.engine.units import short_count
from prefill.ui.documents import collections_dialog
from prefill.ui.documents.collection_cards import PARTS_ROLE
from prefill.ui.documents.collection_words import free_name, model_words, size_line
from prefill.ui.documents.collections_dialog import EMPTY_TITLE, CollectionsDialog
from prefill.ui.documents.index_panel import ROWS, IndexPanel
from prefill.ui.documents.marks import IconMark
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.plain_text import Button
from prefill.ui.widgets.theme import apply_theme
from prefill.ui.workers.documents_worker import CollectionEntry, CollectionView, IndexDone
from tests.ui.look import restored_look
from tests.ui.test_design_system import COLOUR, SHEET_WITH_PX, STOCK
from tests.ui.test_documents_window import INDEX_TIMEOUT, Windows, WordEmbedder, _notes
from tests.ui.test_plain_text import text_problems

ROOM = Path(__file__).resolve().parents[2] / "app" / "prefill" / "ui" / "documents"
GUIDE = CollectionSummary("Varnholm guide", "all-MiniLM-L6-v2.4f759ac.c1.f16.gguf", 384, 14, 1, 1234, 3_400_000)
ROOTS = ("/home/ada/Varnholm guide",)
MARGINS = re.compile(r"setContentsMargins\(([^)]*)\)")


class FakeWorker(QObject):
    """The documents worker as the dialog sees it: its two signals, and what it was asked."""

    collections = Signal(object)
    collection = Signal(str, object)

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []
        self.removed: list[str] = []

    def list_collections(self) -> None:
        pass

    def read_collection(self, name: str) -> None:
        self.read.append(name)

    def remove_collection(self, name: str) -> None:
        self.removed.append(name)


@pytest.fixture
def themed(qapp: QApplication) -> Iterator[QApplication]:
    with restored_look(qapp):
        apply_theme(qapp, "light")
        yield qapp


@pytest.fixture
def dialog(qtbot, themed) -> tuple[CollectionsDialog, FakeWorker]:
    worker = FakeWorker()
    d = CollectionsDialog(worker)  # type: ignore[arg-type]
    qtbot.addWidget(d)
    d.show()
    return d, worker


def _record(name: str, state: str = "indexed", problem: str = "", chunks: int = 4) -> FileRecord:
    return FileRecord(f"{ROOTS[0]}/{name}", "", 10, 0.0, state, problem, "text", 0, chunks)


def test_the_room_writes_no_colour_pixel_size_or_stock_icon_or_input_dialog_of_its_own() -> None:
    for module in sorted(ROOM.glob("*.py")):
        source = module.read_text()
        assert not COLOUR.findall(source), f"{module.name}: a colour belongs in colours.py as a role"
        assert not SHEET_WITH_PX.findall(source), f"{module.name}: a size belongs in tokens.py and a style piece"
        assert not STOCK.findall(source), f"{module.name}: icons from icons.py; a name is asked for in a TextSheet"
        for args in MARGINS.findall(source):
            literal = [a.strip() for a in args.split(",") if a.strip().isdigit() and a.strip() != "0"]
            assert not literal, f"{module.name}: margins {args} take the spacing tokens"


def test_counts_read_as_people_read_them_and_the_bundled_model_by_its_name() -> None:
    assert size_line(GUIDE) == "14 files (1 not readable) · 1.2K passages · 3.2 MiB"
    assert [short_count(n) for n in (1, 999, 1234, 48_210)] == ["1", "999", "1.2K", "48.2K"]
    assert model_words(GUIDE.model_id) == "all-MiniLM-L6-v2 (bundled)"
    assert model_words("bge-small.gguf") == "bge-small.gguf" and model_words("") == "none yet"
    assert free_name("guide", {"guide", "guide 2"}) == "guide 3" and free_name("chat-x", set()) == "x"


def test_no_collections_yet_says_add_a_folder_with_its_button(dialog) -> None:
    d, worker = dialog
    worker.collections.emit([])
    assert d.stack.currentWidget() is d.empty and d.empty.isVisible()
    words = [lab.text() for lab in d.empty.findChildren(type(d.title))]
    assert EMPTY_TITLE == "No collections yet — add a folder" and EMPTY_TITLE in words
    assert d.empty_add.isVisible() and d.empty_add.text() == "Add a folder…" and d.empty_add.property("primary")
    assert not d.new.isVisible()  # one button says it


def test_each_collection_is_a_card_with_its_folder_model_size_and_icon_actions(dialog) -> None:
    d, worker = dialog
    other = CollectionSummary("Notes", "bge-small.gguf", 64, 2, 0, 8, 2048)
    worker.collections.emit([CollectionEntry(GUIDE, ROOTS), CollectionEntry(other, ())])
    assert d.stack.currentWidget() is not d.empty and d.list.count() == 2 and d.new.isVisible()
    card = d.card("Varnholm guide")
    assert card is not None and d.list.itemWidget(d.list.item(0)) is card
    assert card.title.full == "Varnholm guide"
    assert card.facts.full == "14 files · 1.2K passages · 3.2 MiB" and card.unread.full == "1 file not readable"
    assert card.folder.full == "Varnholm guide" and card.model.full == "all-MiniLM-L6-v2 (bundled)"
    actions = [card.add, card.reindex, card.remove]
    assert [b.icon().name() for b in actions] == ["folder-plus", "regenerate", "delete"]
    assert all(isinstance(b, QToolButton) and not b.text() and b.toolTip() for b in actions)
    assert card.property("chosen") is True and worker.read == ["Varnholm guide"]  # the first is chosen, read
    notes = d.card("Notes")
    assert notes is not None and notes.property("chosen") is False
    assert notes.folder.full == "Not watched" and not notes.reindex.isEnabled()  # no folder to look at
    d.list.setCurrentRow(1)
    assert notes.property("chosen") is True and card.property("chosen") is False and worker.read[-1] == "Notes"


def test_the_chosen_collections_files_are_rows_with_the_readers_reason(dialog) -> None:
    d, worker = dialog
    worker.collections.emit([CollectionEntry(GUIDE, ROOTS)])
    bad = _record("scan.txt", "failed", "scan.txt: holds NUL bytes: it is binary data, not text", 0)
    hostile = _record("<b>x<img src=zero>.md")
    worker.collection.emit("Varnholm guide", CollectionView(GUIDE, (_record("01 harbour.md"), bad, hostile), ROOTS))
    assert d.title.text() == "Varnholm guide" and d.model.text().startswith("Embedding model: all-MiniLM-L6-v2")
    rows = [d.files.item(i) for i in range(d.files.count())]
    assert [r.data(PARTS_ROLE) for r in rows[:2]] == [
        ("01 harbour.md", "4 passages", False),
        ("scan.txt", "not read: holds NUL bytes: it is binary data, not text", True)]
    assert rows[1].text() == "scan.txt — not read: holds NUL bytes: it is binary data, not text"
    delegate = d.files.itemDelegate()
    option = QStyleOptionViewItem()
    option.font = d.files.font()
    heights = [delegate.sizeHint(option, d.files.indexFromItem(r)).height() for r in rows[:2]]
    assert heights[1] > heights[0]  # the reason under the name, in full
    assert text_problems(d) == []


def test_remove_asks_first_and_no_keeps_the_collection(dialog, qtbot, monkeypatch) -> None:
    d, worker = dialog
    worker.collections.emit([CollectionEntry(GUIDE, ROOTS)])
    asked: list[str] = []
    answer = [Button.No]
    monkeypatch.setattr(collections_dialog, "ask", lambda _p, _t, text, **_k: asked.append(text) or answer[0])
    card = d.card("Varnholm guide")
    assert card is not None
    qtbot.mouseClick(card.remove, Qt.MouseButton.LeftButton)
    assert worker.removed == [] and "1.2K passages go; its files stay where they are" in asked[0]
    answer[0] = Button.Yes
    qtbot.mouseClick(card.remove, Qt.MouseButton.LeftButton)
    assert worker.removed == ["Varnholm guide"]


def test_a_new_collection_is_named_in_a_sheet_offering_its_folders_name(dialog, qtbot) -> None:
    d, worker = dialog
    worker.collections.emit([CollectionEntry(GUIDE, ROOTS)])
    sheet = d.ask_name("/home/ada/Varnholm guide")
    assert sheet.isVisible() and sheet.text() == "Varnholm guide 2"  # the folder's name, free
    with qtbot.waitSignal(d.index_requested) as asked:
        sheet.save_button.click()
    assert asked.args == ["Varnholm guide 2", "/home/ada/Varnholm guide"]


def test_the_dialog_fits_a_900x600_screen(dialog) -> None:
    d, _worker = dialog
    assert d.minimumSize().width() <= 900 and d.minimumSize().height() <= 600
    assert d.width() <= 900 and d.height() <= 600


def _progress(done: int, chunks: int, current: str, failed: int = 0, skipped: int = 0) -> IndexProgress:
    return IndexProgress(done, 4, 0, chunks, skipped, failed, 1.0, 3.0, f"/docs/{current}")


def _bar_colour(panel: IndexPanel) -> str:
    image = panel.bar.grab().toImage()
    return QColor(image.pixel(image.width() // 4, image.height() // 2)).name()


def test_the_indexing_panel_lists_the_files_in_hand_with_their_states(qtbot, themed) -> None:
    panel = IndexPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 200)
    panel.begin(1, "docs")
    panel.on_progress(1, _progress(0, 0, "a.md"))
    shown = [(r.name.full, r.state.text(), r.mark.name) for r in panel.file_rows if r.isVisible()]
    assert shown == [("a.md", "reading…", "document")]
    panel.on_progress(1, _progress(0, 2, "a.md"))
    panel.on_progress(1, _progress(1, 4, "a.md"))
    panel.on_progress(1, _progress(2, 4, "junk.txt", failed=1))  # its start went unsaid: its end is enough
    panel.on_progress(1, _progress(3, 4, "b.md", failed=1, skipped=1))
    shown = [(r.name.full, r.state.text(), r.mark.name) for r in panel.file_rows if r.isVisible()]
    assert shown == [("a.md", "4 passages", "check"), ("junk.txt", "not read", "warning"),
                     ("b.md", "unchanged", "check")]
    panel.on_progress(1, _progress(3, 5, "c.md", failed=1, skipped=1))
    assert len([r for r in panel.file_rows if r.isVisible()]) == ROWS and panel.file_rows[-1].name.full == "c.md"
    assert panel.line.text().startswith("Indexing 3 of 4 files · 5 passages · 1 not readable")
    assert panel.stop.icon().name() == "stop" and panel.close_button.icon().name() == "close"
    assert not panel.close_button.text()  # a line icon, not a "×"


def test_the_bar_takes_the_themes_colour_for_running_done_and_stopped(qtbot, themed) -> None:
    c = colours_for("light")
    panel = IndexPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 200)
    panel.show()
    panel.begin(1, "docs")
    panel.on_progress(1, _progress(3, 4, "a.md"))
    assert panel.bar.property("state") == "running" and _bar_colour(panel) == c.highlight
    panel.on_done(1, IndexDone(1, "c", False, 4, 0, 0, 0, 9, (), 1.0))
    assert panel.bar.property("state") == "done" and _bar_colour(panel) == c.kv_green
    panel.begin(2, "more")
    panel.on_progress(2, _progress(3, 4, "a.md"))
    panel.on_done(2, IndexDone(2, "c", True, 3, 0, 0, 0, 9, (), 1.0))
    assert panel.bar.property("state") == "stopped" and _bar_colour(panel) == c.kv_amber
    assert panel.mark.name == "pause"


def test_files_not_read_are_rows_under_a_warning_mark_that_scroll_past_four(qtbot, themed) -> None:
    panel = IndexPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    panel.begin(1, "docs")
    problems = tuple(f"bad{i}.txt: holds NUL bytes: it is binary data, not text" for i in range(7))
    panel.on_done(1, IndexDone(1, "c", False, 2, 0, 0, 0, 9, problems, 1.0))
    assert panel.problem_texts() == list(problems) and panel.problems.isVisible()
    body = panel.problems.widget()
    assert [m.name for m in body.findChildren(IconMark)] == ["warning"] * 7
    assert panel.problems.height() < body.sizeHint().height()  # seven rows scroll in the room of four
    assert not panel.files.isVisible() and panel.mark.name == "warning" and panel.close_button.isVisible()


def test_the_panel_stands_in_the_composers_column_at_900x600(qtbot, tmp_path: Path, themed) -> None:
    ws = Windows(qtbot, tmp_path / "data", WordEmbedder)
    try:
        w = ws.open()
        w.resize(900, 600)
        qtbot.waitUntil(lambda: w.size() == QSize(900, 600))
        w.index_panel.begin(1, "docs")
        w.index_panel.on_progress(1, _progress(1, 4, "a.md"))
        card, column = w.index_panel.card, w.input.column
        qtbot.waitUntil(lambda: card.width() == column.width())
        left = card.mapTo(w, card.rect().topLeft()).x()
        assert left == column.mapTo(w, column.rect().topLeft()).x()
        assert card.height() < w.height() // 4  # compact: the chat keeps the room
    finally:
        ws.close_all()


def test_re_index_on_a_card_shows_the_bar_and_says_when_nothing_changed(qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "notes", 2)
    ws = Windows(qtbot, tmp_path / "data", WordEmbedder)
    try:
        w = ws.open()
        d = w.documents.open_collections()
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
            assert d.make("notes", str(folder))
        qtbot.waitUntil(lambda: (card := d.card("notes")) is not None and card.reindex.isEnabled(),
                        timeout=INDEX_TIMEOUT)
        card = d.card("notes")
        assert card is not None and card.folder.full == "notes"
        panel = w.index_panel
        with qtbot.waitSignal(w.documents.unchanged, timeout=INDEX_TIMEOUT):
            qtbot.mouseClick(card.reindex, Qt.MouseButton.LeftButton)
            assert panel.isVisible() and panel.line.text() == "Indexing changes in notes…"
        assert panel.line.text() == "Nothing changed in notes since it was indexed."
        assert panel.close_button.isVisible() and not panel.stop.isVisible()
        qtbot.waitUntil(lambda: "notes" in w.documents.watch.collections, timeout=INDEX_TIMEOUT)
        w.documents.watch.stop()  # the click, not the watch, finds the new file
        (folder / "note9.md").write_text("# Note 9\n\nThe keeper of note 9 is Ada9.\n")
        card = d.card("notes")
        assert card is not None
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as done:
            qtbot.mouseClick(card.reindex, Qt.MouseButton.LeftButton)
        assert done.args[0].indexed == 1 and panel.line.text().startswith("Notes changed: Indexed 1 files")
    finally:
        ws.close_all()
