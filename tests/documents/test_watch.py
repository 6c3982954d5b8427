"""Watched collections: a collection keeps the files and folders it was made from, sees what changed under
them by size and time, and `refresh` indexes the changed and new files, skips the touched ones by their hash
and deletes the passages of the files gone (a hashed bag-of-words embedder stands in for the model)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prefill.documents.library import DocumentLibrary
from tests.documents.embedders import HashEmbedder, count_words


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path.resolve()


def _later(path: Path, seconds: int = 10) -> None:
    """Move the file's modification time on (a write within the clock's grain may keep it)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))


def _folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    a = _write(docs / "pumps.md", "# Pumps\n\nThe pump house is painted blue every spring.\n")
    b = _write(docs / "gates.md", "# Gates\n\nThe north gate opens at nine in the morning.\n")
    return docs.resolve(), a, b


def _texts(lib: DocumentLibrary, query: str, e: HashEmbedder) -> list[str]:
    return [p.text for p in lib.search("notes", query, e, k=10, mode="words")]


def test_changed_added_and_removed_files_are_seen_and_indexed_again(tmp_path: Path) -> None:
    docs, pumps, gates = _folder(tmp_path)
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs], e, count_words)
    assert lib.roots("notes") == [docs]
    assert not lib.changes("notes")  # just indexed: nothing to do

    _write(pumps, "# Pumps\n\nThe pump house is painted crimson every spring.\n")
    _later(pumps)
    gates.unlink()
    bells = _write(docs / "bells.md", "# Bells\n\nThe chapel bell rings at noon.\n")
    seen = lib.changes("notes")
    assert (seen.changed, seen.added, seen.removed) == ((str(pumps),), (str(bells),), (str(gates),))

    report = lib.refresh("notes", e, count_words)
    assert {o.path: o.state for o in report.outcomes} == {str(pumps): "indexed", str(bells): "indexed",
                                                          str(gates): "removed"}
    assert not lib.changes("notes")
    assert [Path(f.path).name for f in lib.files("notes")] == ["bells.md", "pumps.md"]
    pump = _texts(lib, "pump house painted", e)
    assert any("crimson" in t for t in pump) and not any("blue" in t for t in pump)
    assert not any("gate" in t for t in _texts(lib, "north gate morning", e))  # its passages are gone
    assert any("noon" in t for t in _texts(lib, "chapel bell", e))


def test_a_touched_file_is_skipped_by_its_hash_and_then_no_longer_seen(tmp_path: Path) -> None:
    docs, pumps, _ = _folder(tmp_path)
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs], e, count_words)
    _later(pumps)  # the same bytes, a new time
    assert lib.changes("notes").changed == (str(pumps),)
    calls = e.calls
    report = lib.refresh("notes", e, count_words)
    assert {o.path: o.state for o in report.outcomes}[str(pumps)] == "skipped"
    assert e.calls == calls  # nothing embedded again
    assert not lib.changes("notes")  # its new time is kept: the next use does not hash it again


def test_a_root_gone_takes_its_files_and_a_file_root_is_watched_too(tmp_path: Path) -> None:
    docs, _, _ = _folder(tmp_path)
    single = _write(tmp_path / "bells.md", "# Bells\n\nThe chapel bell rings at noon.\n")
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs], e, count_words)
    lib.add("notes", [single, docs], e, count_words)  # a root given again is kept once
    assert lib.roots("notes") == sorted([docs, single])
    _write(single, "# Bells\n\nThe chapel bell rings at half past noon.\n")
    _later(single)
    shutil.rmtree(docs)
    seen = lib.changes("notes")
    assert seen.changed == (str(single),) and len(seen.removed) == 2
    lib.refresh("notes", e, count_words)
    assert [f.path for f in lib.files("notes")] == [str(single)]
    assert any("half past" in t for t in _texts(lib, "chapel bell", e))


def test_a_removed_collection_forgets_its_roots(tmp_path: Path) -> None:
    docs, _, _ = _folder(tmp_path)
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs], e, count_words)
    lib.remove("notes")
    lib.add("notes", [tmp_path / "docs" / "pumps.md"], e, count_words)
    assert lib.roots("notes") == [(docs / "pumps.md").resolve()]


def test_what_to_watch_is_each_root_folder_its_folders_and_files(tmp_path: Path) -> None:
    docs, pumps, gates = _folder(tmp_path)
    (docs / "deeper").mkdir()
    deep = _write(docs / "deeper" / "wells.txt", "The well is forty metres deep.\n")
    (docs / ".hidden").mkdir()
    _write(docs / ".hidden" / "secret.md", "Not watched.\n")
    (docs / "photo.png").write_bytes(b"\x89PNG")  # no reader knows it: not a document, not watched
    single = _write(tmp_path / "bells.md", "# Bells\n\nThe chapel bell rings at noon.\n")
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs, single], e, count_words)
    paths = lib.watch_paths("notes")
    # the roots in order (bells.md before docs/): a file's folder, a folder and the folders under it
    assert paths == [str(tmp_path.resolve()), str(docs), str(docs / "deeper"),
                     *sorted(str(p) for p in (gates, pumps, deep, single))]
    assert lib.watch_paths("notes", limit=2) == [str(tmp_path.resolve()), str(docs)]


def test_re_indexing_with_another_model_reads_every_file_again_from_the_roots(tmp_path: Path) -> None:
    docs, pumps, _ = _folder(tmp_path)
    lib = DocumentLibrary(tmp_path / "documents.sqlite3")
    first, second = HashEmbedder(), HashEmbedder(64, "test-hash-64")
    lib.add("notes", [docs], first, count_words)
    chunks = {f.path: f.chunks for f in lib.files("notes")}
    report = lib.reindex("notes", second, count_words)
    assert report.count("indexed") == 2 and second.calls > 0
    (c,) = [c for c in lib.collections() if c.name == "notes"]
    assert (c.model_id, c.n_embd) == ("test-hash-64", 64)
    assert {f.path: f.chunks for f in lib.files("notes")} == chunks
    assert [p.file for p in lib.search("notes", "pump house painted", second, k=1)] == [str(pumps)]
    # a collection made before roots were kept: its files as indexed are its roots from now on
    lib._conn.execute("DELETE FROM roots")
    lib.reindex("notes", first, count_words)
    assert sorted(lib.roots("notes")) == sorted(Path(p) for p in chunks)
    assert {f.path: f.chunks for f in lib.files("notes")} == chunks


def test_a_file_or_folder_forgotten_leaves_the_roots_and_is_not_indexed_again(tmp_path: Path) -> None:
    docs, pumps, _ = _folder(tmp_path)
    single = _write(tmp_path / "bells.md", "# Bells\n\nThe chapel bell rings at noon.\n")
    lib, e = DocumentLibrary(tmp_path / "documents.sqlite3"), HashEmbedder()
    lib.add("notes", [docs, single], e, count_words)
    assert lib.forget("notes", [single]) == 1  # a chat's chip's ×
    assert lib.roots("notes") == [docs] and not lib.changes("notes")
    lib.refresh("notes", e, count_words)
    assert str(single) not in {f.path for f in lib.files("notes")}
    assert lib.forget("notes", [docs]) == 2 and lib.roots("notes") == []
    assert pumps.exists()  # the files stay on disk
