"""Finding passages: by vectors (meaning), by words (FTS5's bm25), or both fused.

Both lists' scores are fused, each on a scale from 0 (nothing) to 1 (the best match there can be): the
"convex combination of theoretically normalised scores" of Bruch et al. (2023), with reciprocal rank's
fault mended on the words' side:

- by meaning, the cosine similarity over the best one found, below 0 counted as 0. A cosine has no level
  that means "a perfect match" for every model (MiniLM's answers sit near 0.3 to 0.7, its unrelated
  passages near 0.1; other models put everything between 0.7 and 0.9), so the best found is the top;
- by words, bm25 over the first's, times the share of the question's words that first passage holds,
  each word weighed by its rarity over the whole index (idf). bm25 orders the list and sets its ratios
  (how often a word comes, how long the passage is, a heading); the share sets how far the list is to
  be trusted: a passage that holds the question's rare code scores near 1; the first by words of a
  question asked in other words, holding only a common word or two of it, scores near 0, where
  reciprocal rank and normalising by the best found both count it as much as the first by meaning.
  The share weighs words by Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), not FTS5's, which is 0
  for a word in half the passages (so in a small collection, where it would make every share 0).

The fused score is their mean (`words_weight` weighs the words'). Reciprocal-rank fusion (Cormack et al.,
2009: 1/(k + rank) summed over the lists) is kept as `fusion="rrf"`: it needs no scale, but ranks the best
of a list first however poor a match it is. On the project's corpus (benchmarks/docs_bench.py, bundled
MiniLM, 200-token passages) words alone found every "place" and "exact" question's passage (each names a
rare word of it) and reciprocal rank fused to recall@5 1.0 but MRR 0.76, below words alone (0.79); on
questions asked in other words (24) it kept vectors' recall (0.75) and lost their MRR (0.74 to 0.54).
Fused by scores: recall@5 / MRR 1.0 / 0.97 on the "place" questions, 0.75 / 0.74 on those in other words
(vectors' own), 0.92 / 0.93 on the 12 asked by a code or number (one fewer found than by words alone or
reciprocal rank, 1.0), 0.95 / 0.92 over all 132 (reciprocal rank 0.95 / 0.74).
The paper's k is 60, for lists of 1,000 from millions of documents; here the lists (50 each) cover much of
a person's collection, and k = 60 ranks a passage both lists place tenth above the one either places first
(recall@5 0.83 against 1.0 with k = 2 on the "place" questions), so `rrf` uses k = 2.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from typing import Literal

from prefill.documents.index import Collection, get_collection
from prefill.documents.indexer import Embedder
from prefill.documents.vectors import VectorSearch

Mode = Literal["vectors", "words", "both"]
Fusion = Literal["scores", "rrf"]
RRF_K = 2
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
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
            score (both: the mean of the cosine over the best found and of bm25 over the best found times
            the share of the question's words that best holds, each from 0 to 1; or the reciprocal-rank
            sum with `fusion="rrf"`); larger is better.
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
        self._count: tuple[object, int] | None = None

    def search(self, collection: str | Collection, query: str, embedder: Embedder | None = None, k: int = 5,
               mode: Mode = "both", pool: int = 50, words_weight: float = 1.0, rrf_k: int = RRF_K,
               fusion: Fusion = "scores") -> list[Passage]:
        """The `k` passages that best answer `query`.

        Args:
            collection: Its name, or the collection.
            query: The question, as the person asked it.
            embedder: Needed for "vectors" and "both"; its model must be the collection's.
            k: How many passages.
            mode: "vectors", "words", or "both" (fused).
            pool: How many each way feeds the fusion.
            words_weight: What the words' score (or rank) counts in the fusion against the vectors' (1: as much).
            rrf_k: Reciprocal rank's constant (see above): small lets the first of either list lead, 60 (the
                paper's) rewards passages both lists rank fairly well.
            fusion: "scores" (each list's scores on an absolute scale, averaged) or "rrf" (reciprocal rank).

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
            if fusion == "rrf":
                for hits, weight in ((vec, 1.0), (words, words_weight)):
                    for rank, (cid, _) in enumerate(hits):
                        fused[cid] = fused.get(cid, 0.0) + weight / (rrf_k + rank + 1)
            else:
                top = max(vec[0][1], 1e-9) if vec else 1.0
                for cid, cos in vec:
                    fused[cid] = max(cos, 0.0) / top / (1.0 + words_weight)
                # bm25 orders the words' list and sets its ratios (how often, how long, in a heading); the
                # share of the question its first holds sets the list's level
                level = self._word_shares(query, words[:1]).get(words[0][0], 0.0) if words else 0.0
                best = max(words[0][1], 1e-12) if words else 1.0
                for cid, bm in words:
                    fused[cid] = fused.get(cid, 0.0) + words_weight * level * bm / best / (1.0 + words_weight)
            # equal scores keep the order they came in: by meaning first, then by words
            ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
        out = self._passages(ranked[:k])
        self.last_times = SearchTimes(embed_ms, (time.perf_counter() - t0) * 1000 - embed_ms)
        return out

    def _words(self, c: Collection, query: str, k: int) -> list[tuple[int, float]]:
        terms = _terms(query)
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

    def _word_shares(self, query: str, hits: list[tuple[int, float]]) -> dict[int, float]:
        """For each passage found by words, the share of the question's words it holds, each word weighed
        by its rarity over the whole index (BM25's idf as Lucene has it, log(1 + (N - n + 0.5) / (n + 0.5)),
        which stays above 0 where FTS5's falls to nothing: a word in half of a small collection's passages)."""
        tokens = _tokens(query)
        if not tokens or not hits:
            return {}
        self._conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_terms "
                           "USING fts5vocab(main, chunks_fts, row)")
        n = self._passages_in_index()
        rows = self._conn.execute(f"""SELECT term, doc FROM temp.chunks_fts_terms
                                      WHERE term IN ({",".join("?" * len(tokens))})""", tokens).fetchall()
        docs = {str(t): int(d) for t, d in rows}
        idf = {t: math.log(1 + (n - docs.get(t, 0) + 0.5) / (docs.get(t, 0) + 0.5)) for t in tokens}
        most = sum(idf.values())
        ids = [cid for cid, _ in hits]
        held = {int(r[0]): set(_tokens(f"{r[1]} {r[2]}", keep_common=True)) for r in self._conn.execute(
            f"SELECT id, text, heading FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)}
        return {cid: sum(w for t, w in idf.items() if t in held.get(cid, ())) / most for cid in ids}

    def _passages_in_index(self) -> int:
        """How many passages the whole index holds (what idf counts over), counted again when any collection
        changed: at 100,000 passages a count takes milliseconds."""
        key = self._conn.execute("SELECT group_concat(id || ':' || generation) FROM collections").fetchone()[0]
        if self._count is None or self._count[0] != key:
            self._count = (key, int(self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]))
        return self._count[1]

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


def _terms(query: str) -> list[str]:
    """The question's words as searched: lower case, once each, the commonest left out (unless that is all)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    return ([w for w in words if w not in STOPWORDS] or words)[:64]


def _tokens(text: str, keep_common: bool = False) -> list[str]:
    """The words of `text` as FTS5's unicode61 tokenizer (remove_diacritics 2) stores them: letters and
    digits (an underscore parts them), lower case, no accents; once each, the commonest left out (unless that
    is all, or `keep_common`)."""
    folded = "".join(ch for ch in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(ch))
    words = list(dict.fromkeys(_TOKEN.findall(folded)))
    return words if keep_common else ([w for w in words if w not in STOPWORDS] or words)[:64]
