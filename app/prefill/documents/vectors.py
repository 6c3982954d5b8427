"""Nearest passages by cosine similarity: numpy over a matrix held in memory, or sqlite-vec in SQL when asked.

Vectors are stored the same way for both (a little-endian float32 blob per passage, normalised), so an
index written by either is read by the other. By default a collection's vectors are read once into a numpy
matrix, kept until the collection changes, and searched by one matrix product: 8 ms a search at 100,000
passages of 384 numbers on 2 cores, for 150 MB held. sqlite-vec (a loadable SQLite extension) holds
nothing, but its `vec_distance_cosine` scans every row in SQL: 265 ms at 100,000 (benchmarks/docs_bench.py);
and a Python whose sqlite3 was built without `enable_load_extension` (pyenv's builds, some distributions')
cannot load it at all, which `why_numpy` says in words.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from prefill.documents.errors import EmbedderMismatch
from prefill.documents.index import Collection

Matrix = npt.NDArray[np.float32]


def to_blob(vector: Sequence[float], n_embd: int) -> bytes:
    """A vector as stored: float32, normalised to length 1.

    Raises:
        EmbedderMismatch: It is not `n_embd` long.
    """
    v = np.asarray(vector, dtype=np.float32)
    if v.shape != (n_embd,):
        raise EmbedderMismatch(n_embd, int(v.size))
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype("<f4").tobytes()


def load_sqlite_vec(conn: sqlite3.Connection) -> str:
    """Load sqlite-vec into `conn`; "" when it loaded, else why not (in words)."""
    try:
        import sqlite_vec
    except ImportError:
        return "the sqlite-vec package is not installed"
    if not hasattr(conn, "enable_load_extension"):
        return "this Python's sqlite3 was built without loadable extensions"
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
    except (sqlite3.Error, OSError, AttributeError) as exc:
        return f"sqlite-vec did not load: {exc}"
    return ""


class VectorSearch:
    """Finds a collection's passages nearest a query vector.

    Attributes:
        backend: "sqlite-vec" or "numpy".
        why_numpy: Why sqlite-vec is not used ("" when it is).
    """

    def __init__(self, conn: sqlite3.Connection, use_sqlite_vec: bool = False):
        self._conn = conn
        self.why_numpy = load_sqlite_vec(conn) if use_sqlite_vec else "sqlite-vec was not asked for"
        self.backend = "numpy" if self.why_numpy else "sqlite-vec"
        self._cache: dict[int, tuple[int, npt.NDArray[np.int64], Matrix]] = {}

    def nearest(self, collection: Collection, query: Sequence[float], k: int) -> list[tuple[int, float]]:
        """Up to `k` (chunk id, cosine similarity) pairs, the most similar first."""
        if collection.n_embd == 0 or k <= 0:
            return []
        blob = to_blob(query, collection.n_embd)
        if not any(blob):  # a query with nothing in it (no words the model knows) is near nothing
            return []
        if self.backend == "sqlite-vec":
            rows = self._conn.execute("""
                SELECT v.chunk_id, vec_distance_cosine(v.embedding, ?) AS d
                FROM vectors v JOIN chunks c ON c.id = v.chunk_id JOIN files f ON f.id = c.file_id
                WHERE f.collection_id = ? ORDER BY d IS NULL, d LIMIT ?""", (blob, collection.id, k)).fetchall()
            return [(int(i), 1.0 - float(d)) for i, d in rows if d is not None]  # None: a stored zero vector
        ids, matrix = self._matrix(collection)
        if not len(ids):
            return []
        scores = matrix @ np.frombuffer(blob, dtype="<f4")
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def forget(self) -> None:
        """Drop every matrix held."""
        self._cache.clear()

    def _matrix(self, collection: Collection) -> tuple[npt.NDArray[np.int64], Matrix]:
        row = self._conn.execute("SELECT generation FROM collections WHERE id = ?", (collection.id,)).fetchone()
        generation = int(row[0]) if row else -1
        held = self._cache.get(collection.id)
        if held is not None and held[0] == generation:
            return held[1], held[2]
        self._cache.pop(collection.id, None)
        rows = self._conn.execute("""
            SELECT v.chunk_id, v.embedding FROM vectors v JOIN chunks c ON c.id = v.chunk_id
            JOIN files f ON f.id = c.file_id WHERE f.collection_id = ? ORDER BY v.chunk_id""",
                                  (collection.id,)).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), collection.n_embd)
        del rows
        self._cache[collection.id] = (generation, ids, matrix)
        return ids, matrix
