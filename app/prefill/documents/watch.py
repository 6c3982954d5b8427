"""Watched collections: the files and folders a collection was made from, and what changed under them.

A collection keeps the paths `add` was given (its roots, in the index's `roots` table). `changes` looks at
what is under them now against what the index holds, by size and modification time only (one stat a file,
nothing read): files added, changed and gone. `refresh` then indexes the roots again when anything changed:
an unchanged file is skipped by its content hash (a file only touched is hashed, not read again), a changed
one is read again, and a file that is gone, with its passages and vectors, leaves the index.

Who asks: the server, on every request that names the collection (the check costs a folder walk),
`prefill docs add NAME` (again, with or without its paths), and the window, while it runs: it watches
`watch_paths` (the folders and files under the roots, for the system's file notifications) and asks for a
refresh when one of them changes, and every few minutes besides. A collection made before roots were kept
has none, and is not watched until it is added to again (or re-indexed with another embedding model).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefill.documents.chunking import ChunkSizes, CountTokens
from prefill.documents.index import Collection, forget_file, list_files
from prefill.documents.indexer import Embedder, FileOutcome, IndexProgress, IndexReport, gather, index_files
from prefill.documents.readers import ReadLimits
from prefill.store.transaction import transaction


@dataclass(frozen=True)
class Changes:
    """What differs between a collection's roots on disk and its index (paths, sorted)."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def as_dict(self) -> dict[str, int]:
        return {"added": len(self.added), "changed": len(self.changed), "removed": len(self.removed)}


def remember_roots(conn: sqlite3.Connection, collection: Collection, paths: list[Path]) -> None:
    """Keep `paths` (resolved) as roots of the collection, beside those it has."""
    with transaction(conn):
        for p in paths:
            conn.execute("INSERT OR IGNORE INTO roots(collection_id, path) VALUES (?, ?)",
                         (collection.id, str(p.expanduser().resolve())))


def forget_roots(conn: sqlite3.Connection, collection: Collection, paths: list[Path]) -> None:
    """Drop `paths` (resolved), and every root under one of them, from the collection's roots: a file or
    folder detached is not indexed again by the next refresh."""
    named = [str(p.expanduser().resolve()) for p in paths]
    with transaction(conn):
        for root in roots(conn, collection):
            r = str(root)
            if any(r == n or r.startswith(n.rstrip(os.sep) + os.sep) for n in named):
                conn.execute("DELETE FROM roots WHERE collection_id = ? AND path = ?", (collection.id, r))


def roots(conn: sqlite3.Connection, collection: Collection) -> list[Path]:
    rows = conn.execute("SELECT path FROM roots WHERE collection_id = ? ORDER BY path", (collection.id,)).fetchall()
    return [Path(r[0]) for r in rows]


def watch_paths(kept: list[Path], limit: int = 4096) -> list[str]:
    """What to watch for changes under the roots `kept`, at most `limit` paths: each root folder and the
    folders under it (hidden ones left out, links not followed), the folder of each root file, then the
    files themselves (a folder's notification says a file came or went, only the file's says it was written
    in place). Past `limit` the rest is left to a periodic look (`changes`)."""
    folders: dict[str, None] = {}
    for r in kept:
        if r.is_dir():
            for root, dirs, _files in os.walk(r):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                folders.setdefault(root, None)
                if len(folders) >= limit:
                    break
        elif r.parent.is_dir():
            folders.setdefault(str(r.parent), None)
    out = list(folders)[:limit]
    for f in gather([r for r in kept if r.exists()]):
        if len(out) >= limit:
            break
        out.append(str(f))
    return out


def _stat(path: Path) -> tuple[int, float] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime


def changes(conn: sqlite3.Connection, collection: Collection) -> Changes:
    """What was added, changed (size or modification time) and removed under the collection's roots since
    it was last indexed; nothing for a collection without roots."""
    kept = roots(conn, collection)
    if not kept:
        return Changes()
    on_disk: dict[str, tuple[int, float]] = {}
    for f in gather([r for r in kept if r.exists()]):
        st = _stat(f)
        if st is not None:
            on_disk[str(f)] = st
    known = {rec.path: (rec.size, rec.mtime) for rec in list_files(conn, collection)}
    return Changes(tuple(sorted(p for p in on_disk if p not in known)),
                   tuple(sorted(p for p, st in on_disk.items() if p in known and known[p] != st)),
                   tuple(sorted(p for p in known if p not in on_disk)))


def refresh(conn: sqlite3.Connection, collection: Collection, embedder: Embedder, count_tokens: CountTokens, *,
            sizes: ChunkSizes = ChunkSizes(), limits: ReadLimits = ReadLimits(),
            progress: Callable[[IndexProgress], None] | None = None,
            cancel: threading.Event | None = None) -> IndexReport:
    """Index the collection's roots again: changed and new files read, unchanged ones skipped by hash, and
    every file no longer under a root (a root gone included) deleted with its passages."""
    present = [r for r in roots(conn, collection) if r.exists()]
    report = index_files(conn, collection.name, present, embedder, count_tokens, sizes=sizes, limits=limits,
                         progress=progress, cancel=cancel) if present else IndexReport()
    if not report.cancelled:
        listed = {str(f) for f in gather(present)}
        gone = {o.path for o in report.outcomes if o.state == "removed"}
        for rec in list_files(conn, collection):
            if rec.path not in listed and rec.path not in gone:
                forget_file(conn, collection, rec.path)
                report.outcomes.append(FileOutcome(rec.path, "removed"))
    return report
