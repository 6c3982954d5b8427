"""Documents in the window: a folder attached (the button's path, a drop, a paste) is indexed off the GUI
thread with its progress in view to the end; a file that cannot be read is listed in the reader's words
while the others index; Stop keeps what was done and attaching again goes on without a passage twice;
the chat's documents are kept with it and come back when it is reopened; a collection's view shows its
size, files and embedding model. With SmolLM2 and the bundled embedding model, a question goes through
the documents as the terminal's does (passages retrieved, or the documents whole) and the sidebar shows
what retrieval did.

The fast tests index with a hashed bag-of-words embedder (no model); the last one loads the real ones."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from prefill.documents.library import DocumentLibrary
from prefill.session.document_chats import ChatDocs, EmbedderLike
from prefill.store import HistoryStore, SettingsFile
from prefill.store.app_settings import Settings
from prefill.ui.chat.composer.document_sources import offered
from prefill.ui.documents import collections_dialog
from prefill.ui.main_window import MainWindow
from prefill.ui.widgets.plain_text import Button
from prefill.ui.workers.documents_worker import DocumentsThread, IndexDone
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.documents.embedders import HashEmbedder, count_words
from tests.ui.conftest import OpenWindows, load, send, small_settings
from tests.ui.test_plain_text import text_problems

INDEX_TIMEOUT = 60_000


class WordEmbedder(HashEmbedder):
    """The hashed embedder with the token counter the indexer sizes passages by."""

    def count_tokens(self, text: str) -> int:
        return count_words(text)


class Windows(OpenWindows):
    """Windows on one data folder, as restarting the app would make them, with the embedder given."""

    def __init__(self, qtbot, data: Path, load_embedder: Callable[[], EmbedderLike]):
        super().__init__(qtbot)
        self.data, self.load_embedder = data, load_embedder

    def open(self, settings: Settings | None = None) -> MainWindow:
        history = self.data / "history.sqlite3"
        store = StoreProxy(Stores(HistoryStore(history), SettingsFile(self.data / "settings.json")))
        engine = EngineThread()
        return self.keep(MainWindow(settings or small_settings(), store, engine, None,
                                    documents=DocumentsThread(history, self.load_embedder)), engine, store)


@pytest.fixture
def windows(qtbot, tmp_path: Path) -> Iterator[Callable[[Callable[[], EmbedderLike]], Windows]]:
    made: list[Windows] = []

    def make(load_embedder: Callable[[], EmbedderLike] = WordEmbedder) -> Windows:
        made.append(Windows(qtbot, tmp_path / "data", load_embedder))
        return made[-1]

    yield make
    for ws in made:
        ws.close_all()


def _notes(folder: Path, n: int, words: int = 8) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = " ".join(f"topic{i} fact{i}x{j}" for j in range(words))
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nThe keeper of note {i} is Ada{i}. {body}\n")
    return folder


HOSTILE = "<b>bold<img src=zero>.md"  # a file name of markup: shown as written, never as rich text


def _bad_files(folder: Path) -> None:
    (folder / "junk.txt").write_bytes(b"\x00\x01\x02\xff" * 200)  # binary junk under a text file's name
    (folder / "cut.pdf").write_bytes(b"%PDF-1.4\n garbage")  # a PDF cut short after its header
    (folder / HOSTILE).write_bytes(b"\x00<img src=zero2>" * 100)  # binary too: its name goes in the problem


def _attach(qtbot, w: MainWindow, paths: list[Path]) -> IndexDone:
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as done:
        w.documents.attach([str(p) for p in paths])
    return done.args[0]


def _index(w: MainWindow) -> Path:
    return w.documents.documents.index_path


def test_a_folder_indexes_with_its_progress_to_the_end_and_bad_files_are_said(windows, qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "docs", 3)
    _bad_files(folder)
    w = windows().open()
    seen = []
    w.documents.documents.signals.progress.connect(lambda _job, p: seen.append(p))
    done = _attach(qtbot, w, [folder])
    assert not done.cancelled and done.indexed == 3 and done.chunks >= 3 and len(done.problems) == 3
    assert seen and seen[-1].files_done == seen[-1].files_total == 6 and seen[-1].failed == 3
    panel = w.index_panel
    assert panel.isVisible() and panel.line.text().startswith("Indexed 3 files")
    assert "3 not readable" in panel.line.text()
    assert not panel.stop.isVisible() and panel.close_button.isVisible()
    lib = DocumentLibrary(_index(w))
    stored = {Path(f.path).name: f.problem for f in lib.files(done.collection) if f.state == "failed"}
    lib.close()
    assert set(stored) == {"junk.txt", "cut.pdf", HOSTILE} and "binary" in stored["junk.txt"]
    # each file not read is listed in the reader's own sentence, a row each
    assert sorted(panel.problem_texts()) == sorted(stored.values())
    assert panel.problems.isVisible()
    assert w.documents.chips.names() == ["docs"] and w.documents.chips.isVisible()
    assert w.controller.choices.documents == ChatDocs(done.collection, (str(folder),))
    assert any(HOSTILE in t for t in panel.problem_texts()) and text_problems(w) == []


def test_stop_mid_way_then_attach_again_goes_on_without_duplicates(windows, qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "docs", 6)

    class Gate(WordEmbedder):
        """Holds its third call (the third file's passages) until the test lets it go."""

        def __init__(self) -> None:
            super().__init__()
            self.reached, self.go = threading.Event(), threading.Event()

        def embed(self, texts: list[str]) -> list[list[float]]:
            if self.calls == 2:
                self.reached.set()
                self.go.wait(30)
            return super().embed(texts)

    gate = Gate()
    w = windows(lambda: gate).open()
    panel = w.index_panel
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as stopped:
        w.documents.attach([str(folder)])
        qtbot.waitUntil(gate.reached.is_set, timeout=INDEX_TIMEOUT)
        assert panel.stop.isVisible()
        qtbot.mouseClick(panel.stop, Qt.MouseButton.LeftButton)
        assert "stopping" in panel.line.text() and not panel.stop.isEnabled()
        gate.go.set()
    first: IndexDone = stopped.args[0]
    assert first.cancelled and first.indexed == 2
    assert panel.line.text().startswith("Stopped: 2 files indexed")

    again = _attach(qtbot, w, [folder])
    assert not again.cancelled and (again.indexed, again.unchanged) == (4, 2)
    conn = sqlite3.connect(_index(w))
    rows = conn.execute("""SELECT f.path, f.chunks, COUNT(c.id) FROM files f LEFT JOIN chunks c ON c.file_id = f.id
                           GROUP BY f.id""").fetchall()
    total = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    conn.close()
    assert len(rows) == 6 and all(kept == counted for _, kept, counted in rows)
    fresh = DocumentLibrary(tmp_path / "fresh.sqlite3")
    assert total == fresh.add("c", [folder], WordEmbedder(), count_words).chunks  # as if never stopped
    fresh.close()
    assert w.documents.chips.names() == ["docs"]  # attached once, however often


def test_the_chats_documents_are_kept_with_it_and_come_back_when_reopened(windows, qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "docs", 2)
    extra = tmp_path / "extra.md"
    extra.write_text("# Extra\n\nOne more page of notes.\n")
    ws = windows()
    w = ws.open()
    with qtbot.waitSignal(w.controller.conversation_opened):
        w.controller.new_conversation()
    cid = w.controller.conversation_id
    _attach(qtbot, w, [folder])
    _attach(qtbot, w, [extra])
    kept = w.controller.choices.documents
    assert kept is not None and kept.paths == (str(folder), str(extra))
    ws.close(w)

    w = ws.open()
    assert w.documents.chips.names() == []
    with qtbot.waitSignal(w.controller.conversation_opened):
        w.controller.open_conversation(cid)
    assert w.controller.choices.documents == kept
    assert w.documents.chips.names() == ["docs", "extra.md"]
    # a chip's × detaches that one (and its passages); the rest stay, kept as they are now
    qtbot.mouseClick(w.documents.chips.chips[1].remove, Qt.MouseButton.LeftButton)
    assert w.documents.chips.names() == ["docs"]
    ws.close(w)

    w = ws.open()
    with qtbot.waitSignal(w.controller.conversation_opened):
        w.controller.open_conversation(cid)
    assert w.controller.choices.documents == ChatDocs(kept.collection, (str(folder),))
    lib = DocumentLibrary(_index(w))
    assert sorted(Path(f.path).name for f in lib.files(kept.collection)) == ["note0.md", "note1.md"]
    lib.close()
    # a new chat starts without them
    with qtbot.waitSignal(w.controller.conversation_opened):
        w.controller.new_conversation()
    assert w.controller.choices.documents is None and not w.documents.chips.isVisible()


def test_files_dropped_on_the_window_or_pasted_are_attached_as_documents(windows, qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "docs", 2)
    note = tmp_path / "plan.md"
    note.write_text("# Plan\n\nRead everything twice.\n")
    pasted_file = tmp_path / "list.txt"
    pasted_file.write_text("milk, eggs, tea\n")
    w = windows().open()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder)), QUrl.fromLocalFile(str(note))])
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(w, enter)
    assert enter.isAccepted()
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        QApplication.sendEvent(w, QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, buttons, keys))
    assert w.documents.chips.names() == ["docs", "plan.md"]
    pasted = QMimeData()
    pasted.setUrls([QUrl.fromLocalFile(str(pasted_file))])
    w.input.editor.setPlainText("keep me")
    assert w.input.editor.canInsertFromMimeData(pasted)
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        w.input.editor.insertFromMimeData(pasted)
    assert w.documents.chips.names() == ["docs", "plan.md", "list.txt"]
    assert w.input.editor.toPlainText() == "keep me" and w.input.images == []


def test_a_drop_is_split_into_images_and_documents(qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "docs", 1)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in (tmp_path / "cat.png", folder / "note0.md", folder)])
    images, documents = offered(mime)
    assert images == [str(tmp_path / "cat.png")]
    assert documents == [str(folder / "note0.md"), str(folder)]


def test_a_collections_view_shows_its_size_files_and_model_and_removes_it(windows, qtbot, tmp_path: Path,
                                                                          monkeypatch) -> None:
    folder = _notes(tmp_path / "papers", 3)
    _bad_files(folder)
    extra = tmp_path / "extra.md"
    extra.write_text("# Extra\n\nMore.\n")
    w = windows().open()
    dialog = w.documents.open_collections()
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        assert dialog.make("papers", str(folder))
    qtbot.waitUntil(lambda: dialog.view is not None and dialog.view.summary.name == "papers", timeout=INDEX_TIMEOUT)
    view = dialog.view
    assert view is not None and view.summary.files == 6
    assert dialog.size_label.text().startswith(f"6 files (3 not readable) · {view.summary.chunks} passages · ")
    assert dialog.model.text() == "Embedding model: test-hash-128 · 128 numbers a passage"
    lines = [dialog.files.item(i).text() for i in range(dialog.files.count())]
    assert len(lines) == 6 and "note0.md — 1 passage" in lines
    assert any(line.startswith("junk.txt — not read: ") and "binary" in line for line in lines)
    assert any(line.startswith(f"{HOSTILE} — not read: ") for line in lines) and text_problems(dialog) == []
    # a chat without documents reads the collection it made; its own files wait until it stops
    assert w.controller.choices.documents == ChatDocs.named("papers")
    assert w.documents.chips.names() == ["Collection: papers"]
    w.documents.attach([str(extra)])
    assert "reads the collection papers" in w.notice.text()
    assert w.controller.choices.documents == ChatDocs.named("papers")
    assert not dialog.make("chat-mine", str(folder)) and "kept for a chat's own" in w.notice.text()
    assert not dialog.make("papers", str(folder)) and "already" in w.notice.text()
    card = dialog.card("papers")
    assert card is not None
    monkeypatch.setattr(collections_dialog, "ask", lambda *_a, **_k: Button.Yes)  # Remove asks first
    with qtbot.waitSignal(w.documents.removed, timeout=INDEX_TIMEOUT):
        qtbot.mouseClick(card.remove, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.count() == 0, timeout=INDEX_TIMEOUT)
    assert dialog.view is None and w.controller.choices.documents is None
    assert dialog.stack.currentWidget() is dialog.empty  # and says what to do now: add a folder
    lib = DocumentLibrary(_index(w))
    assert "papers" not in {c.name for c in lib.collections()}
    lib.close()


# --- with the real models -------------------------------------------------------------------------------

FACTS = [
    "The lighthouse keeper of Varnholm is Ingrid Sol, who has kept the lamp for thirty years.",
    "The ferry to Osterby leaves at seven in the morning and returns at noon.",
    "The bakery on Harbour Street sells rye bread on Tuesdays only.",
    "The island's school has eleven pupils and one teacher named Per Lund.",
    "The winter storms close the northern road from December to February.",
    "The museum keeps a whale skeleton found on the beach in 1911.",
]
FILLER = ("The island has rocky shores, small fishing boats, wooden houses painted red and yellow, sheep on the "
          "hills and a narrow road that winds between the villages. ")


def _island(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for i, fact in enumerate(FACTS):
        text = f"# Chapter {i}\n\n{FILLER * 12}\n\n## Facts\n\n{fact}\n\n{FILLER * 12}\n"
        (folder / f"chapter{i}.md").write_text(text)
    return folder


def test_a_question_goes_through_the_documents_and_the_sidebar_says_what_retrieval_did(
        windows, qtbot, tmp_path: Path, smollm2: Path, minilm_gguf: Path) -> None:
    from prefill.documents.embedding import ModelEmbedder
    from prefill.engine.embed.model import EmbeddingModel

    folder = _island(tmp_path / "island")
    ws = windows(lambda: ModelEmbedder(EmbeddingModel.load(minilm_gguf)))
    w = ws.open(small_settings(n_ctx=2048, max_tokens=8))
    load(qtbot, w, smollm2)
    seen = []
    w.documents.documents.signals.progress.connect(lambda _job, p: seen.append(p))
    done = _attach(qtbot, w, [folder])
    assert (done.indexed, done.problems, done.cancelled) == (6, (), False) and done.chunks > 6
    assert seen[-1].files_done == seen[-1].files_total == 6 and seen[-1].chunks == done.chunks
    retrieved = []
    w.engine.worker.retrieved.connect(lambda _request, r: retrieved.append(r))

    send(qtbot, w, "Who is the lighthouse keeper of Varnholm?")
    r = retrieved[-1]
    assert r.retrieval is not None and r.retrieval.mode == "retrieved" and r.retrieval.passages > 0
    # the passages put in, with their labels and the citing rule, within the budget
    assert 0 < r.retrieval.tokens <= r.retrieval.budget and r.retrieval.embed_ms > 0
    asked = r.request.messages[-1].content  # what the model read: the passages, then the question
    assert "Ingrid Sol" in asked and asked.endswith("Who is the lighthouse keeper of Varnholm?")
    rows = w.transcript.rows()
    asked_row = next(i for i, row in enumerate(rows) if row.role == "user")
    assert rows[asked_row].content == "Who is the lighthouse keeper of Varnholm?"  # kept as asked
    s = w.sidebar
    assert s.documents_box.isVisible()
    n = r.retrieval.passages
    assert s.text("docs-how") == f"searched: {n} passage{'s' if n != 1 else ''} found for this question"
    assert s.text("docs-tokens") == f"{r.retrieval.tokens:,} of {r.retrieval.budget:,} tokens"
    assert s.text("docs-embed").endswith(" ms") and s.text("docs-search").endswith(" ms")
    prompt = int(s.text("prompt").split()[0])
    assert prompt > r.retrieval.tokens  # the prefill read them: the request sent was this one
    assert rows[asked_row + 1].role == "assistant"
    assert w.transcript.row(asked_row + 1).figures["retrieval"]["mode"] == "retrieved"  # kept with the answer

    # A small document fits: it goes in whole, under the system prompt, and nothing is searched.
    small = tmp_path / "ferry.md"
    small.write_text("# Ferry\n\nThe ferry to Osterby leaves at seven.\n")
    with qtbot.waitSignal(w.controller.conversation_opened):
        w.controller.new_conversation()
    _attach(qtbot, w, [small])
    send(qtbot, w, "When does the ferry leave?")
    r = retrieved[-1]
    assert r.retrieval is not None and r.retrieval.mode == "whole" and r.retrieval.documents == 1
    assert "The ferry to Osterby leaves at seven." in r.request.messages[0].content
    assert r.request.messages[-1].content == "When does the ferry leave?"
    assert s.text("docs-how") == "whole: 1 document, kept for the next question"
