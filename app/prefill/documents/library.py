"""The documents index as one object: collections to add to, list, remove and search (no Qt, no threads).

What the terminal's `prefill docs …`, the window's documents room and the server ask; each caller owns
its `DocumentLibrary` on one thread (the window's on a pool job or a worker of its own), as SQLite wants.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from prefill.documents.chunking import ChunkSizes, CountTokens
from prefill.documents.index import (
    CollectionSummary,
    FileRecord,
    ensure_collection,
    forget_file,
    get_collection,
    list_collections,
    list_files,
    open_index,
    remove_collection,
    set_model,
)
from prefill.documents.indexer import Embedder, IndexProgress, IndexReport, index_files
from prefill.documents.readers import ReadLimits
from prefill.documents.search import Mode, Passage, Searcher
from prefill.documents.watch import Changes, changes, forget_roots, refresh, remember_roots, roots, watch_paths


class DocumentLibrary:
    """Collections of documents in one index file.

    Args:
        path: The index file (`index.default_index_path(history_path)` beside the history).
        use_sqlite_vec: Search vectors with sqlite-vec where it loads, instead of numpy (see `vectors`).
    """

    def __init__(self, path: Path, use_sqlite_vec: bool = False):
        self.path = path
        self._conn = open_index(path)
        self._searcher = Searcher(self._conn, use_sqlite_vec)

    @property
    def vector_backend(self) -> str:
        """"sqlite-vec" or "numpy"."""
        return self._searcher.vectors.backend

    @property
    def why_numpy(self) -> str:
        """Why vectors are searched with numpy ("" when sqlite-vec is used)."""
        return self._searcher.vectors.why_numpy

    def add(self, name: str, paths: Sequence[Path], embedder: Embedder, count_tokens: CountTokens, *,
            sizes: ChunkSizes = ChunkSizes(), limits: ReadLimits = ReadLimits(),
            progress: Callable[[IndexProgress], None] | None = None, cancel: threading.Event | None = None,
            force: bool = False) -> IndexReport:
        """Index files and folders into the collection `name` (made when missing); see `index_files`. The
        paths are kept as the collection's roots, which `changes` and `refresh` look under."""
        remember_roots(self._conn, ensure_collection(self._conn, name), list(paths))
        return index_files(self._conn, name, paths, embedder, count_tokens, sizes=sizes, limits=limits,
                           progress=progress, cancel=cancel, force=force)

    def roots(self, name: str) -> list[Path]:
        """The files and folders the collection was made from. Raises CollectionNotFound."""
        return roots(self._conn, get_collection(self._conn, name))

    def changes(self, name: str) -> Changes:
        """What changed under the collection's roots since it was indexed, by size and time (nothing is
        read). Raises CollectionNotFound."""
        return changes(self._conn, get_collection(self._conn, name))

    def refresh(self, name: str, embedder: Embedder, count_tokens: CountTokens, *,
                progress: Callable[[IndexProgress], None] | None = None,
                cancel: threading.Event | None = None) -> IndexReport:
        """Index the collection's roots again: changed and new files read, unchanged ones skipped by hash,
        files gone deleted with their passages (see `watch`). Raises CollectionNotFound."""
        return refresh(self._conn, get_collection(self._conn, name), embedder, count_tokens, progress=progress,
                       cancel=cancel)

    def switch_model(self, name: str, embedder: Embedder) -> None:
        """Make the collection `embedder`'s: its passages and vectors go (another model's vectors mean nothing
        to this one), its roots stay, so `refresh` reads every file again, now or, when stopped, at the next
        look. A collection made before roots were kept takes its files as indexed for roots first. Nothing is
        done to a collection that is the model's already. Raises CollectionNotFound."""
        collection = get_collection(self._conn, name)
        if (collection.model_id, collection.n_embd) == (embedder.model_id, embedder.n_embd):
            return
        if not roots(self._conn, collection):
            remember_roots(self._conn, collection, [Path(f.path) for f in list_files(self._conn, collection)])
        set_model(self._conn, collection, embedder.model_id, embedder.n_embd)
        self._searcher.vectors.forget()

    def reindex(self, name: str, embedder: Embedder, count_tokens: CountTokens, *,
                progress: Callable[[IndexProgress], None] | None = None,
                cancel: threading.Event | None = None) -> IndexReport:
        """The collection indexed again with `embedder` (`switch_model`, then `refresh`).
        Raises CollectionNotFound."""
        self.switch_model(name, embedder)
        return self.refresh(name, embedder, count_tokens, progress=progress, cancel=cancel)

    def watch_paths(self, name: str, limit: int = 4096) -> list[str]:
        """The folders and files to watch for changes to the collection (see `watch.watch_paths`); none for a
        collection without roots. Raises CollectionNotFound."""
        return watch_paths(roots(self._conn, get_collection(self._conn, name)), limit)

    def collections(self) -> list[CollectionSummary]:
        return list_collections(self._conn)

    def files(self, name: str) -> list[FileRecord]:
        """Raises CollectionNotFound."""
        return list_files(self._conn, get_collection(self._conn, name))

    def forget(self, name: str, paths: Sequence[Path]) -> int:
        """Drop from the collection each file named and every file under each folder named (the files stay
        on disk), and from its roots, so a refresh does not index them again; returns how many files went.
        Raises CollectionNotFound."""
        collection = get_collection(self._conn, name)
        forget_roots(self._conn, collection, list(paths))
        named = [str(p.expanduser().resolve()) for p in paths]
        gone = 0
        for rec in list_files(self._conn, collection):
            if any(rec.path == n or rec.path.startswith(n.rstrip(os.sep) + os.sep) for n in named):
                forget_file(self._conn, collection, rec.path)
                gone += 1
        if gone:
            self._searcher.vectors.forget()
        return gone

    def remove(self, name: str) -> None:
        """Raises CollectionNotFound."""
        remove_collection(self._conn, name)
        self._searcher.vectors.forget()

    def search(self, name: str, query: str, embedder: Embedder | None = None, k: int = 5,
               mode: Mode = "both") -> list[Passage]:
        """See `Searcher.search`; `last_times` says what it cost."""
        return self._searcher.search(name, query, embedder, k=k, mode=mode)

    @property
    def last_times(self) -> tuple[float, float]:
        """The last search's (embedding ms, search ms)."""
        t = self._searcher.last_times
        return t.embed_ms, t.search_ms

    def close(self) -> None:
        self._conn.close()
