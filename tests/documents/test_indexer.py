"""The indexing job: stored file by file, unchanged files skipped, bad files said and passed, stopped and
resumed (even after kill -9) without a passage twice, a new embedding model indexing again."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from prefill.documents.errors import EmbedderMismatch
from prefill.documents.index import get_collection, list_collections, list_files, open_index, remove_collection
from prefill.documents.indexer import IndexProgress, index_files
from tests.documents.embedders import HashEmbedder, count_words
from tests.documents.pdf_writer import write_pdf

ROOT = Path(__file__).resolve().parents[2]


def _folder(tmp_path: Path, n: int = 6) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    for i in range(n):
        (d / f"note{i}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(
            f"Paragraph {j} of note {i} talks about topic{i} and item{j}." for j in range(40)))
    return d


def _counts(conn: sqlite3.Connection) -> tuple[int, int, int, int]:
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    vectors = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    fts = conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'paragraph'").fetchone()[0]
    files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    return files, chunks, vectors, fts


def test_index_then_skip_unchanged_then_read_a_changed_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    conn = open_index(tmp_path / "i.sqlite3")
    first = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    assert first.count("indexed") == 6 and first.chunks > 6
    files, chunks, vectors, fts = _counts(conn)
    assert (files, vectors, fts) == (6, chunks, chunks)
    again = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    assert again.count("skipped") == 6 and _counts(conn) == (files, chunks, vectors, fts)
    (folder / "note0.md").write_text("# Note 0\n\nNow one paragraph.")
    (folder / "note5.md").unlink()
    third = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    assert [Path(o.path).name for o in third.outcomes if o.state == "indexed"] == ["note0.md"]
    assert [Path(o.path).name for o in third.outcomes if o.state == "removed"] == ["note5.md"]
    assert _counts(conn)[0] == 5
    assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'topic5'").fetchone()[0] == 0


def test_each_bad_file_is_said_and_loses_nothing_indexed_before_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 2)
    write_pdf(folder / "scan.pdf", [[], []])
    with zipfile.ZipFile(folder / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b" " * (4 * 1024 * 1024))
    (folder / "junk.txt").write_bytes(b"\x00\x01\x02" * 100)
    (folder / "fake.pdf").write_bytes(b"not a pdf")
    from pypdf import PdfWriter

    w = PdfWriter(clone_from=str(write_pdf(tmp_path / "p.pdf", [["words"]])))
    w.encrypt(user_password="pw", owner_password="pw", algorithm="AES-128")
    with (folder / "locked.pdf").open("wb") as f:
        w.write(f)
    write_pdf(folder / "half.pdf", [["Page one has words."], []])
    conn = open_index(tmp_path / "i.sqlite3")
    report = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    problems = {Path(r.path).name: (r.state, r.problem) for r in list_files(conn, get_collection(conn, "c"))}
    assert problems["note0.md"] == ("indexed", "") and problems["note1.md"] == ("indexed", "")
    assert problems["half.pdf"] == ("indexed", "pages without a text layer (scanned), not read: 2")
    assert problems["scan.pdf"][0] == "failed" and "scanned" in problems["scan.pdf"][1]
    assert problems["bomb.docx"][0] == "failed" and "zip bomb" in problems["bomb.docx"][1]
    assert problems["junk.txt"][0] == "failed" and "binary" in problems["junk.txt"][1]
    assert problems["fake.pdf"][0] == "failed" and "does not start as a PDF" in problems["fake.pdf"][1]
    assert problems["locked.pdf"][0] == "failed" and "password" in problems["locked.pdf"][1]
    assert report.count("failed") == 5 and report.count("indexed") == 3
    # a failed file unchanged is not read again
    assert index_files(conn, "c", [folder], HashEmbedder(), count_words).count("skipped") == 8


def test_progress_and_cancel_keep_what_was_stored(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    conn = open_index(tmp_path / "i.sqlite3")
    cancel = threading.Event()
    seen: list[IndexProgress] = []

    def progress(p: IndexProgress) -> None:
        seen.append(p)
        if p.files_done == 2:
            cancel.set()

    report = index_files(conn, "c", [folder], HashEmbedder(), count_words, progress=progress, cancel=cancel)
    assert report.cancelled and report.count("indexed") == 2
    assert seen[-1].files_total == 6 and seen[-1].chunks == report.chunks
    assert any(p.eta_s is not None for p in seen)
    assert _counts(conn)[0] == 2
    rest = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    assert (rest.count("skipped"), rest.count("indexed")) == (2, 4)


def test_cancel_between_batches_stores_nothing_of_that_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 1)
    conn = open_index(tmp_path / "i.sqlite3")
    cancel = threading.Event()

    class StopAfterOne(HashEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            cancel.set()
            return super().embed(texts)

    report = index_files(conn, "c", [folder], StopAfterOne(), count_words, cancel=cancel, batch=2)
    assert report.cancelled and _counts(conn) == (0, 0, 0, 0)


def test_a_new_embedding_model_indexes_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 2)
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [folder], HashEmbedder(), count_words)
    other = index_files(conn, "c", [folder], HashEmbedder(64, "other-64"), count_words)
    assert other.count("indexed") == 2
    c = get_collection(conn, "c")
    assert (c.model_id, c.n_embd) == ("other-64", 64)
    assert {len(b) for (b,) in conn.execute("SELECT embedding FROM vectors")} == {64 * 4}
    [summary] = list_collections(conn)
    assert (summary.name, summary.files, summary.model_id) == ("c", 2, "other-64")
    remove_collection(conn, "c")
    assert _counts(conn) == (0, 0, 0, 0) and list_collections(conn) == []


def test_vectors_of_the_wrong_size_stop_the_job(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 1)
    conn = open_index(tmp_path / "i.sqlite3")

    class Liar(HashEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            return [v[:10] for v in super().embed(texts)]

    with pytest.raises(EmbedderMismatch):
        index_files(conn, "c", [folder], Liar(), count_words)
    assert _counts(conn) == (0, 0, 0, 0)


def test_kill_9_mid_index_then_resume_without_duplicates(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 7)
    index = tmp_path / "i.sqlite3"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'app'}{os.pathsep}{ROOT}"}
    child = subprocess.Popen([sys.executable, "-m", "tests.documents.index_child", str(folder), str(index), "3"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    watchdog = threading.Timer(120, child.kill)  # a child that never says "blocked" fails the test, never hangs it
    watchdog.start()
    try:
        assert child.stdout is not None
        lines = []
        for line in child.stdout:
            lines.append(line.strip())
            if line.strip() == "blocked":
                break
        assert lines == ["stored 1", "stored 2", "stored 3", "blocked"]
        child.send_signal(signal.SIGKILL)
    finally:
        watchdog.cancel()
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    conn = open_index(index)
    assert _counts(conn)[0] == 3
    resumed = index_files(conn, "c", [folder], HashEmbedder(), count_words)
    assert (resumed.count("skipped"), resumed.count("indexed")) == (3, 4)
    fresh = open_index(tmp_path / "fresh.sqlite3")
    index_files(fresh, "c", [folder], HashEmbedder(), count_words)
    assert _counts(conn) == _counts(fresh)
    assert conn.execute("SELECT COUNT(*) FROM (SELECT file_id, seq FROM chunks GROUP BY file_id, seq "
                        "HAVING COUNT(*) > 1)").fetchone()[0] == 0


def test_files_refused_by_their_size_or_kind_are_not_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefill.documents import indexer
    from prefill.documents.readers import ReadLimits

    (tmp_path / "big.txt").write_text("x" * 5000)
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8" * 10)
    os.mkfifo(tmp_path / "pipe.txt")  # reading it would wait for a writer for ever

    def no_hash(path: Path) -> str:
        raise AssertionError(f"{path.name} was hashed")

    monkeypatch.setattr(indexer, "file_hash", no_hash)
    conn = open_index(tmp_path / "i.sqlite3")
    paths = [tmp_path / "big.txt", tmp_path / "photo.jpg", tmp_path / "pipe.txt"]
    report = index_files(conn, "c", paths, HashEmbedder(), count_words, limits=ReadLimits(max_bytes=1000))
    said = {Path(o.path).name: o.problem for o in report.outcomes}
    assert "more than the 1,000 read" in said["big.txt"]
    assert "Prefill does not read" in said["photo.jpg"]
    assert "not a regular file" in said["pipe.txt"]
    again = index_files(conn, "c", paths, HashEmbedder(), count_words, limits=ReadLimits(max_bytes=1000))
    assert again.count("skipped") == 3
