"""Finding passages: by vectors (meaning), by words (FTS5's bm25), or both fused by reciprocal rank.

Fusion (Cormack et al., 2009) adds 1/(k + rank) over the two lists for each passage, so neither score's
scale has to be matched to the other's. The paper's k is 60, for lists of 1,000 from millions of
documents; here the lists (50 each) cover much of a person's collection, and k = 60 ranks a passage both
lists place tenth above the one that either places first: on the project's corpus (benchmarks/docs_bench.py,
96 questions, bundled MiniLM) recall@5 was 0.81 with k = 60 against 0.97 with k = 2 at 64-token passages
(vectors alone 0.77, words alone 0.76), and 0.83 against 1.0 at 200 (words alone 1.0). So k is 2: the
first few of either list lead, and agreement orders the rest.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass
from typing import Literal

from prefill.documents.index import Collection, get_collection
from prefill.documents.indexer import Embedder
from prefill.documents.vectors import VectorSearch

Mode = Literal["vectors", "words", "both"]
RRF_K = 2
_WORD = re.compile(r"\w+", re.UNICODE)
# Words nearly every passage has: bm25 gives them almost no weight, yet scoring one reads its whole posting
# list (every passage, at 100,000 passages a third of a second), so a question's words leave them out.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
ours out over own same she should so some such than that the their theirs them then there these they this those
through to too under until up very was we were what when where which while who whom why will with would you your
yours please tell say says said find show give
""".split())


@dataclass(frozen=True)
class Passage:
    """A passage found.

    Attributes:
        chunk_id: Its row in the index.
        file: The file's path.
        page: Its PDF page (1-based), None where the format has none.
        start, end: Its characters in the file's text as read.
        heading: Its heading path (" > " between headings).
        text: Its words.
        score: How well it matched: cosine similarity (vectors), bm25 made positive (words), or the fused
            reciprocal-rank sum (both); larger is better, within one search.
    """

    chunk_id: int
    file: str
    page: int | None
    start: int
    end: int
    heading: str
    text: str
    score: float


@dataclass(frozen=True)
class SearchTimes:
    """What one search cost: embedding the query, and looking up, in milliseconds."""

    embed_ms: float
    search_ms: float


class Searcher:
    """Searches the collections of one index (use it from one thread at a time)."""

    def __init__(self, conn: sqlite3.Connection, use_sqlite_vec: bool = False):
        self._conn = conn
        self.vectors = VectorSearch(conn, use_sqlite_vec)
        self.last_times = SearchTimes(0.0, 0.0)

    def search(self, collection: str | Collection, query: str, embedder: Embedder | None = None, k: int = 5,
               mode: Mode = "both", pool: int = 50, words_weight: float = 1.0, rrf_k: int = RRF_K) -> list[Passage]:
        """The `k` passages that best answer `query`.

        Args:
            collection: Its name, or the collection.
            query: The question, as the person asked it.
            embedder: Needed for "vectors" and "both"; its model must be the collection's.
            k: How many passages.
            mode: "vectors", "words", or "both" (fused).
            pool: How many each way feeds the fusion.
            words_weight: What a rank by words counts in the fusion against one by vectors (1: as much).
            rrf_k: The fusion's constant (see above): small lets the first of either list lead, 60 (the
                paper's) rewards passages both lists rank fairly well.

        Raises:
            CollectionNotFound: No collection of that name.
            ValueError: A mode that needs an embedder, without one or with another model than the collection's.
        """
        c = get_collection(self._conn, collection) if isinstance(collection, str) else collection
        embed_ms = 0.0
        t0 = time.perf_counter()
        vec: list[tuple[int, float]] = []
        if mode in ("vectors", "both"):
            if embedder is None:
                raise ValueError("searching by meaning needs the embedding model")
            if c.model_id and embedder.model_id != c.model_id:
                raise ValueError(f"the collection {c.name!r} was indexed with {c.model_id}, not {embedder.model_id}: "
                                 "index it again with this model, or search it with that one")
            q = embedder.embed([query])[0]
            embed_ms = (time.perf_counter() - t0) * 1000
            vec = self.vectors.nearest(c, q, k if mode == "vectors" else pool)
        words = self._words(c, query, k if mode == "words" else pool) if mode in ("words", "both") else []
        if mode == "vectors":
            ranked = vec
        elif mode == "words":
            ranked = words
        else:
            fused: dict[int, float] = {}
            for hits, weight in ((vec, 1.0), (words, words_weight)):
                for rank, (cid, _) in enumerate(hits):
                    fused[cid] = fused.get(cid, 0.0) + weight / (rrf_k + rank + 1)
            ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
        out = self._passages(ranked[:k])
        self.last_times = SearchTimes(embed_ms, (time.perf_counter() - t0) * 1000 - embed_ms)
        return out

    def _words(self, c: Collection, query: str, k: int) -> list[tuple[int, float]]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
        terms = [w for w in words if w not in STOPWORDS] or words
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms[:64])
        # The best of the whole index first (no join per matching row), kept where they are this collection's;
        # the joined query only when other collections took too many of the places.
        rows = self._conn.execute("""SELECT rowid, bm25(chunks_fts, 1.0, 0.5) AS s FROM chunks_fts
                                     WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?""", (match, 4 * k)).fetchall()
        mine = self._in_collection(c, [int(r[0]) for r in rows])
        hits = [(int(i), -float(s)) for i, s in rows if int(i) in mine][:k]
        if len(hits) < k and len(rows) == 4 * k:
            rows = self._conn.execute("""
                SELECT chunks_fts.rowid, bm25(chunks_fts, 1.0, 0.5) AS s FROM chunks_fts
                JOIN chunks c ON c.id = chunks_fts.rowid JOIN files f ON f.id = c.file_id
                WHERE chunks_fts MATCH ? AND f.collection_id = ? ORDER BY s LIMIT ?""", (match, c.id, k)).fetchall()
            hits = [(int(i), -float(s)) for i, s in rows]
        return hits

    def _in_collection(self, c: Collection, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        rows = self._conn.execute(f"""SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id
                                      WHERE f.collection_id = ? AND c.id IN ({",".join("?" * len(ids))})""",
                                  (c.id, *ids)).fetchall()
        return {int(r[0]) for r in rows}

    def _passages(self, ranked: list[tuple[int, float]]) -> list[Passage]:
        if not ranked:
            return []
        ids = [cid for cid, _ in ranked]
        rows = self._conn.execute(f"""
            SELECT c.id, f.path, c.page, c.start, c.end, c.heading, c.text FROM chunks c
            JOIN files f ON f.id = c.file_id WHERE c.id IN ({",".join("?" * len(ids))})""", ids).fetchall()
        by_id = {r[0]: r for r in rows}
        return [Passage(cid, by_id[cid][1], by_id[cid][2], by_id[cid][3], by_id[cid][4], by_id[cid][5],
                        by_id[cid][6], score) for cid, score in ranked if cid in by_id]
