"""The document collections as the server reads them: `documents/`'s `DocumentLibrary` on one thread of
its own (its SQLite connection lives there), so no search, check or re-index blocks the event loop.

The index is the one `prefill docs` writes (`documents.sqlite3` beside the history), or the one in
`prefill serve --docs-dir DIR`. It is opened on the first request that names a collection.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from prefill.documents.errors import CollectionNotFound, IndexUnavailable
from prefill.documents.index import INDEX_FILE, default_index_path
from prefill.documents.library import DocumentLibrary
from prefill.server.errors import ApiError, server_error

T = TypeVar("T")


def default_docs_index() -> Path:
    """The index `prefill docs` writes: `documents.sqlite3` beside the history."""
    from prefill.store.history import default_history_path

    return default_index_path(default_history_path())


def docs_index_in(folder: Path) -> Path:
    """The index in `folder` (`prefill serve --docs-dir`)."""
    return folder / INDEX_FILE


def not_found(name: str, known: list[str]) -> ApiError:
    """A request naming a collection the index does not hold: 404, listing those it does."""
    have = ", ".join(repr(n) for n in known[:20]) or "none"
    return ApiError(404, f"There is no document collection named {name[:80]!r} here (collections: {have}). "
                         "`prefill docs add NAME PATH…` makes one.", param="documents", code="collection_not_found")


class ServerDocuments:
    """The documents index, read and written off the event loop (one thread, one connection).

    Args:
        path: The index file (`documents.sqlite3`).
    """

    def __init__(self, path: Path):
        self.path = path
        self._library: DocumentLibrary | None = None
        self._thread: ThreadPoolExecutor | None = None

    def _open(self) -> DocumentLibrary:  # on the thread
        if self._library is None:
            self._library = DocumentLibrary(self.path)
        return self._library

    async def run(self, fn: Callable[..., T], *args: Any, name: str = "") -> T:
        """`fn(library, *args)` on the index's thread. `name`: the collection it reads, for a 404.

        Raises:
            ApiError: 404 for an unknown collection, 500 when the index cannot be read or written.
        """
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="prefill-documents")

        def call() -> T:
            return fn(self._open(), *args)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._thread, call)
        except CollectionNotFound:
            names = await loop.run_in_executor(self._thread, lambda: [c.name for c in self._open().collections()])
            raise not_found(name, names) from None
        except (IndexUnavailable, sqlite3.Error) as e:
            raise server_error(f"The documents index could not be read: {e}.") from None

    def close(self) -> None:
        """Close the index on its thread and end the thread (at the server's end)."""
        if self._thread is not None:
            if self._library is not None:
                self._thread.submit(self._library.close).result()
            self._thread.shutdown()
            self._thread = None
