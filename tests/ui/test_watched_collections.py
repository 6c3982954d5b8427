"""Watched collections in the window (LocalDocs' way): a collection made from a folder is watched while the
app runs, so a file written into the folder is indexed without a click, a file changed in place is read
again and a file deleted takes its passages with it; the bar says what changed; the watch comes back after
a restart, which first indexes what changed while the app was closed. `FolderWatch` gathers a burst of
notifications into one look per collection and looks at each collection every few minutes anyway.

A hashed bag-of-words embedder stands in for the embedding model (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

from prefill.documents.library import DocumentLibrary
from prefill.ui.documents.folder_watch import FolderWatch
from prefill.ui.main_window import MainWindow
from tests.ui.test_documents_window import INDEX_TIMEOUT, Windows, WordEmbedder, _notes


def _words(w: MainWindow, collection: str, query: str) -> list[str]:
    """The files whose passages hold `query`'s words, by the index as it is on disk now."""
    lib = DocumentLibrary(w.documents.documents.index_path)
    try:
        return sorted({Path(p.file).name for p in lib.search(collection, query, None, k=20, mode="words")})
    finally:
        lib.close()


def _make(qtbot, w: MainWindow, name: str, folder: Path) -> None:
    dialog = w.documents.open_collections()
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        assert dialog.make(name, str(folder))
    _watching(qtbot, w, name, folder)


def _watching(qtbot, w: MainWindow, name: str, folder: Path) -> None:
    watched = w.documents.watch
    qtbot.waitUntil(lambda: name in watched.collections and str(folder.resolve()) in watched.watcher.directories(),
                    timeout=INDEX_TIMEOUT)


def test_a_file_written_into_a_watched_folder_is_indexed_and_one_deleted_leaves(qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "notes", 2)
    ws = Windows(qtbot, tmp_path / "data", WordEmbedder)
    try:
        w = ws.open()
        _make(qtbot, w, "notes", folder)
        assert _words(w, "notes", "zeppelin") == []

        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as added:
            (folder / "airships.md").write_text("# Airships\n\nThe zeppelin hangar stands by the lake.\n")
        done = added.args[0]
        assert (done.collection, done.indexed, done.removed, done.cancelled) == ("notes", 1, 0, False)
        assert _words(w, "notes", "zeppelin") == ["airships.md"]  # without a click
        assert w.index_panel.line.text().startswith("Notes changed: Indexed 1 files")

        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as changed:  # written in place
            (folder / "note0.md").write_text("# Note 0\n\nThe keeper of note 0 now keeps a walrus.\n")
        assert changed.args[0].indexed == 1
        assert _words(w, "notes", "walrus") == ["note0.md"] and _words(w, "notes", "Ada0") == []

        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as gone:
            (folder / "airships.md").unlink()
        assert (gone.args[0].indexed, gone.args[0].removed) == (0, 1)
        assert _words(w, "notes", "zeppelin") == []
        assert "1 gone from their folder" in w.index_panel.line.text()

        dialog = w.documents.dialog
        assert dialog is not None
        qtbot.waitUntil(lambda: dialog.view is not None and dialog.view.roots == (str(folder.resolve()),),
                        timeout=INDEX_TIMEOUT)
        assert dialog.watched.text().startswith(f"Watched: {folder.resolve()}")
    finally:
        ws.close_all()


def test_the_watch_survives_a_restart_and_catches_up_on_what_changed_meanwhile(qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "notes", 2)
    ws = Windows(qtbot, tmp_path / "data", WordEmbedder)
    try:
        w = ws.open()
        _make(qtbot, w, "notes", folder)
        ws.close(w)
        (folder / "closed.md").write_text("# Meanwhile\n\nA narwhal was seen while the app was closed.\n")
        (folder / "note1.md").unlink()

        w = ws.open()  # the index exists: its collections are watched from the start, and looked at once
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT) as caught_up:
            pass
        assert (caught_up.args[0].indexed, caught_up.args[0].removed) == (1, 1)
        assert _words(w, "notes", "narwhal") == ["closed.md"] and _words(w, "notes", "Ada1") == []
        _watching(qtbot, w, "notes", folder)
        with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
            (folder / "later.md").write_text("# Later\n\nThe pelican came back in spring.\n")
        assert _words(w, "notes", "pelican") == ["later.md"]
    finally:
        ws.close_all()


def test_nothing_changed_reads_nothing_and_stop_holds_until_indexed_again(qtbot, tmp_path: Path) -> None:
    folder = _notes(tmp_path / "notes", 2)
    ws = Windows(qtbot, tmp_path / "data", WordEmbedder)
    try:
        w = ws.open()
        _make(qtbot, w, "notes", folder)
        shown = w.index_panel.line.text()
        with qtbot.waitSignal(w.documents.unchanged, timeout=INDEX_TIMEOUT) as looked:
            assert w.documents.refresh("notes") is not None
        assert looked.args == ["notes"] and w.index_panel.line.text() == shown  # the bar is left alone
        w.documents.stopped.add("notes")  # as a Stop in the middle of its indexing leaves it
        assert w.documents.refresh("notes") is None
        w.documents.index("notes", [str(folder)], "notes")  # indexed again: watched again
        assert "notes" not in w.documents.stopped
    finally:
        ws.close_all()


def test_a_burst_of_notifications_is_one_look_and_each_collection_is_polled(qtbot, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    watch = FolderWatch(debounce_ms=200, poll_ms=60_000)
    seen: list[str] = []
    watch.changed.connect(seen.append)
    watch.follow({"A": (str(a),), "B": (str(b),), "AB": (str(a), str(b))})
    assert watch.collections == ["A", "AB", "B"]
    with qtbot.waitSignal(watch.changed, timeout=10_000):
        for i in range(5):
            (a / f"f{i}.md").write_text("x")
    qtbot.waitUntil(lambda: len(seen) >= 2, timeout=10_000)
    with qtbot.assertNotEmitted(watch.changed, wait=600):  # twice the quiet interval: nothing more comes
        pass
    assert sorted(seen) == ["A", "AB"]  # five files, one look each; B's folder did not change
    seen.clear()
    watch._on_poll_timeout()
    assert seen == ["A", "AB", "B"]
    watch.follow({"B": (str(b),)})
    assert str(a) not in watch.watcher.directories() and watch.collections == ["B"]
    watch.stop()
    assert watch.watcher.directories() == [] and watch.collections == []
