"""The embedding model as a setting (`documents.embedding_model`, Settings > Documents): it round-trips
through the settings file and the dialog; in the window a change re-indexes, off the GUI thread and with
the bar, every collection indexed with another model, and a question searches it with the new one; a
model that cannot load is said on the bar and nothing indexed is lost; at start the saved model is used as
it is (nothing re-indexed), and a re-index that quitting stopped goes on.

The fast tests stand hashed bag-of-words embedders in for the models (a file's name is its model's id, as a
GGUF's is); the last loads two real embedding GGUFs (MiniLM, and a copy of it under another name)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLineEdit

from prefill.documents.library import DocumentLibrary
from prefill.session.document_chats import EmbedderLike
from prefill.store import HistoryStore, SettingsFile
from prefill.store.app_settings import Settings
from prefill.ui.main_window import MainWindow
from prefill.ui.settings_dialog import LAYOUT, SettingsDialog
from prefill.ui.workers.documents_worker import DocumentsThread
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.documents.embedders import count_words
from tests.ui.conftest import OpenWindows, small_settings
from tests.ui.test_documents_window import INDEX_TIMEOUT, WordEmbedder, _notes

KEY = "documents.embedding_model"


def test_the_setting_round_trips_through_the_file_and_the_dialog(qtbot, tmp_path: Path) -> None:
    assert Settings().documents.embedding_model == ""  # the bundled MiniLM
    s = Settings().replace(KEY, "/models/bge-small-en.gguf")
    assert Settings.from_dict(s.to_dict()) == s
    file = SettingsFile(tmp_path / "settings.json")
    file.save(s)
    assert file.load().documents.embedding_model == "/models/bge-small-en.gguf"
    assert dict(LAYOUT)["Documents"] == (KEY,)
    d = SettingsDialog(s)
    qtbot.addWidget(d)
    editor = d.editors[KEY]
    assert isinstance(editor.input, QLineEdit) and editor.input.text() == "/models/bge-small-en.gguf"
    assert d.result_settings() == s
    editor.input.setText("")
    assert d.result_settings().documents.embedding_model == "" and d.check() == ""


def _by_file(path: str) -> EmbedderLike:
    """A test's "GGUF": the hashed embedder, 64 numbers, named by the file."""
    return WordEmbedder(n_embd=64, model_id=Path(path).name)


class Windows(OpenWindows):
    def __init__(self, qtbot, data: Path, load_file: Callable[[str], EmbedderLike] = _by_file):
        super().__init__(qtbot)
        self.data, self.load_file = data, load_file

    def open(self, settings: Settings | None = None) -> MainWindow:
        history = self.data / "history.sqlite3"
        store = StoreProxy(Stores(HistoryStore(history), SettingsFile(self.data / "settings.json")))
        engine = EngineThread()
        documents = DocumentsThread(history, WordEmbedder, self.load_file)
        return self.keep(MainWindow(settings or small_settings(), store, engine, None, documents=documents),
                         engine, store)


def _collections(w: MainWindow) -> dict[str, tuple[str, int, int]]:
    lib = DocumentLibrary(w.documents.documents.index_path)
    try:
        return {c.name: (c.model_id, c.n_embd, c.chunks) for c in lib.collections()}
    finally:
        lib.close()


def _make(qtbot, w: MainWindow, name: str, folder: Path) -> None:
    dialog = w.documents.open_collections()
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        assert dialog.make(name, str(folder))


def test_a_new_embedding_model_re_indexes_the_collections_made_with_another(qtbot, tmp_path: Path) -> None:
    ws = Windows(qtbot, tmp_path / "data")
    try:
        w = ws.open()
        _make(qtbot, w, "notes", _notes(tmp_path / "notes", 3))
        _make(qtbot, w, "more", _notes(tmp_path / "more", 2))
        before = _collections(w)
        assert before["notes"][:2] == ("test-hash-128", 128) and before["notes"][2] >= 3
        seen = []
        w.documents.documents.signals.progress.connect(lambda _job, p: seen.append(p))

        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as done:
            w.settings = w.settings.replace(KEY, str(tmp_path / "bge-small.gguf"))
        d = done.args[0]
        assert sorted(d.reindexed) == ["more", "notes"] and d.indexed == 5 and not d.cancelled
        after = _collections(w)
        assert after == {n: ("bge-small.gguf", 64, chunks) for n, (_m, _e, chunks) in before.items()}
        assert seen and seen[-1].files_done == seen[-1].files_total  # with its progress, to the end
        line = w.index_panel.line.text()
        assert line.startswith("Re-indexed with bge-small.gguf: ") and "Indexed" in line
        lib = DocumentLibrary(w.documents.documents.index_path)
        try:
            found = lib.search("notes", "Ada1 keeper", _by_file("bge-small.gguf"), k=1)  # by meaning and words
            assert Path(found[0].file).name == "note1.md"
        finally:
            lib.close()
        dialog = w.documents.open_collections()
        qtbot.waitUntil(lambda: dialog.view is not None and "bge-small.gguf" in dialog.model.text(),
                        timeout=INDEX_TIMEOUT)

        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as back:  # the default again
            w.settings = w.settings.replace(KEY, "")
        assert sorted(back.args[0].reindexed) == ["more", "notes"]
        assert {m for m, _e, _c in _collections(w).values()} == {"test-hash-128"}
        assert w.documents.use_embedding_model("") is None  # the model in place: nothing to do
    finally:
        ws.close_all()


def test_a_model_that_cannot_load_is_said_and_nothing_is_lost(qtbot, tmp_path: Path) -> None:
    def refuse(path: str) -> EmbedderLike:
        from prefill.session.document_chats import DocumentsUnavailable

        raise DocumentsUnavailable(f"The embedding model {Path(path).name} could not be loaded: not a GGUF.")

    ws = Windows(qtbot, tmp_path / "data", refuse)
    try:
        w = ws.open()
        _make(qtbot, w, "notes", _notes(tmp_path / "notes", 3))
        before = _collections(w)
        with qtbot.waitSignal(w.documents.index_failed, timeout=INDEX_TIMEOUT) as failed:
            w.settings = w.settings.replace(KEY, str(tmp_path / "broken.gguf"))
        assert "broken.gguf could not be loaded" in failed.args[0]
        assert w.index_panel.isVisible() and "broken.gguf could not be loaded" in w.index_panel.line.text()
        assert _collections(w) == before  # still searchable with the model it was indexed with
    finally:
        ws.close_all()


def test_a_re_index_stopped_by_quitting_goes_on_at_the_next_start(qtbot, tmp_path: Path) -> None:
    ws = Windows(qtbot, tmp_path / "data")
    try:
        w = ws.open()
        _make(qtbot, w, "notes", _notes(tmp_path / "notes", 2))
        ws.close(w)
        # as a re-index with e5.gguf leaves the collection when the app quits before it read a file
        lib = DocumentLibrary(tmp_path / "data" / "documents.sqlite3")
        quit_now = threading.Event()
        quit_now.set()
        assert lib.reindex("notes", _by_file("e5.gguf"), count_words, cancel=quit_now).cancelled
        assert lib.collections()[0].chunks == 0
        lib.close()
        w = ws.open(small_settings().replace(KEY, str(tmp_path / "e5.gguf")))
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as done:
            pass
        assert (done.args[0].indexed, done.args[0].title) == (2, "notes changed")
        assert _collections(w)["notes"][:2] == ("e5.gguf", 64) and _collections(w)["notes"][2] >= 2
    finally:
        ws.close_all()


def test_at_start_the_saved_model_is_used_and_nothing_is_re_indexed(qtbot, tmp_path: Path) -> None:
    ws = Windows(qtbot, tmp_path / "data")
    try:
        w = ws.open()
        _make(qtbot, w, "notes", _notes(tmp_path / "notes", 2))  # as `prefill docs add` with another model
        ws.close(w)
        w = ws.open(small_settings().replace(KEY, str(tmp_path / "e5.gguf")))
        assert w.documents.documents.embedder.expected_id == "e5.gguf"  # (known by its name: nothing loaded)
        with qtbot.waitSignal(w.documents.unchanged, timeout=INDEX_TIMEOUT):  # the first look: nothing changed
            pass
        assert _collections(w)["notes"][:2] == ("test-hash-128", 128)
    finally:
        ws.close_all()


# --- with real embedding GGUFs --------------------------------------------------------------------------

@pytest.mark.model
def test_a_collection_indexed_by_one_gguf_is_re_indexed_by_another(qtbot, tmp_path: Path, minilm_zip: Path,
                                                                   minilm_gguf: Path) -> None:
    from prefill.documents.embedding import ModelEmbedder
    from prefill.engine.embed.bert_gguf import convert_bert
    from prefill.engine.embed.model import EmbeddingModel

    other = convert_bert(minilm_zip, tmp_path / "minilm-again.gguf", "minilm-again")  # the same weights, renamed
    ws = Windows(qtbot, tmp_path / "data")
    try:
        history = ws.data / "history.sqlite3"
        store = StoreProxy(Stores(HistoryStore(history), SettingsFile(ws.data / "settings.json")))
        engine = EngineThread()
        documents = DocumentsThread(history, lambda: ModelEmbedder(EmbeddingModel.load(minilm_gguf)))
        w = ws.keep(MainWindow(small_settings(), store, engine, None, documents=documents), engine, store)
        _make(qtbot, w, "notes", _notes(tmp_path / "notes", 3))
        assert _collections(w)["notes"][:2] == (minilm_gguf.name, 384)
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as done:
            w.settings = w.settings.replace(KEY, str(other))
        assert done.args[0].reindexed == ("notes",) and done.args[0].indexed == 3
        assert _collections(w)["notes"][:2] == ("minilm-again.gguf", 384)
        model = EmbeddingModel.load(other)
        try:
            lib = DocumentLibrary(documents.index_path)
            found = lib.search("notes", "Who is the keeper of note 2?", ModelEmbedder(model), k=1)
            lib.close()
        finally:
            model.close()
        assert Path(found[0].file).name == "note2.md"
    finally:
        ws.close_all()
