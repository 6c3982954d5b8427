"""One request's searches of one collection: checked, looked at again, searched, reranked.

`CollectionSearch.prepare` finds the collection (a 404 names those there are), leases the pool's embedding
model the collection was indexed with (the model whose file is the one `prefill docs add` used) and, when
files changed under the collection's folders since they were indexed (`documents/watch.py`: sizes and times,
nothing read), indexes them again before the search. Without that model in the pool the collection is
searched by its words alone, and not re-indexed; `Figures` says so.

`find` fuses the search by meaning and by words (`documents/search.py`), then, where the pool has a
reranking model (or the request names one), reranks the fused candidates with it and keeps the best.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import cast

from prefill.documents.embedding import ModelEmbedder
from prefill.documents.errors import CollectionNotFound
from prefill.documents.library import DocumentLibrary
from prefill.documents.search import Passage
from prefill.documents.watch import Changes
from prefill.pool.embed_model import EmbedModel
from prefill.pool.pool import Lease
from prefill.server.documents.field import DocumentsAsked
from prefill.server.documents.library import ServerDocuments
from prefill.server.embeddings.core import rerank_documents
from prefill.server.errors import bad_request
from prefill.server.state import ServeState

CANDIDATES = 20  # fused passages a search keeps (and a reranker scores) before the best go in


@dataclass
class Figures:
    """What the documents did for one request, apart from the prefill (the reply's `retrieval`).

    Attributes:
        collection: The collection's name.
        mode: "passages" (given with the question) or "tool" (searched by the model).
        searches: Searches run.
        passages: Passages given to the model.
        by: "both" (meaning and words, fused) or "words" (the collection's embedding model is not in the pool).
        embedding_model, reranker: The pool's models that searched and reranked (None: none).
        embed_ms, search_ms, rerank_ms, refresh_ms: Time embedding questions, searching, reranking, and
            re-indexing changed files.
        refreshed: Files added, changed and removed that were indexed again before the search.
        stale: Changes seen but not indexed (no embedding model to index them with).
    """

    collection: str
    mode: str
    searches: int = 0
    passages: int = 0
    by: str = "both"
    embedding_model: str | None = None
    reranker: str | None = None
    embed_ms: float = 0.0
    search_ms: float = 0.0
    rerank_ms: float = 0.0
    refresh_ms: float = 0.0
    refreshed: Changes | None = None
    stale: Changes | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "collection": self.collection, "mode": self.mode, "searches": self.searches, "passages": self.passages,
            "by": self.by, "embedding_model": self.embedding_model, "reranker": self.reranker,
            "embed_ms": round(self.embed_ms, 3), "search_ms": round(self.search_ms, 3),
            "rerank_ms": round(self.rerank_ms, 3)}
        if self.refreshed is not None:
            out["refreshed"] = {**self.refreshed.as_dict(), "ms": round(self.refresh_ms, 3)}
        if self.stale is not None:
            out["stale"] = self.stale.as_dict()
        return out


def _model_of(library: DocumentLibrary, name: str) -> str:
    for c in library.collections():
        if c.name == name:
            return c.model_id
    raise CollectionNotFound(name)


class CollectionSearch:
    """The searches of one request in one collection (`prepare` first).

    Args:
        state: The server's pool and turns.
        docs: The index.
        asked: The request's `documents` field.
        mode: "passages" or "tool", as decided for this request.
    """

    def __init__(self, state: ServeState, docs: ServerDocuments, asked: DocumentsAsked, mode: str):
        self.state = state
        self.docs = docs
        self.asked = asked
        self.figures = Figures(asked.collection, mode)
        self._embedding_id: str | None = None
        self._reranker_id: str | None = None

    async def prepare(self) -> None:
        """The collection found, its embedding model and reranker chosen, its changed files indexed again.

        Raises:
            ApiError: 404 for an unknown collection (or a reranker the pool lacks), 400 for a `rerank` model of
                another kind, as the pool's leases do.
        """
        name = self.asked.collection
        model_file = await self.docs.run(_model_of, name, name=name)
        self._embedding_id = self._pool_model("embedding", model_file)
        self._reranker_id = await self._reranker()
        f = self.figures
        f.embedding_model, f.reranker = self._embedding_id, self._reranker_id
        f.by = "both" if self._embedding_id is not None else "words"
        changed = await self.docs.run(DocumentLibrary.changes, name, name=name)
        if not changed:
            return
        if self._embedding_id is None:
            f.stale = changed
            return
        t0 = time.perf_counter()
        with await self.state.lease(self._embedding_id, kind="embedding") as lease:
            embedder = _embedder(lease)
            await self.docs.run(DocumentLibrary.refresh, name, embedder, embedder.count_tokens, name=name)
        f.refreshed, f.refresh_ms = changed, (time.perf_counter() - t0) * 1000

    def _pool_model(self, kind: str, file_name: str) -> str | None:
        """The id of the pool's usable model of `kind` loaded from a file named `file_name`."""
        for st in self.state.pool.statuses():
            if st.kind == kind and st.path == file_name and st.state != "unusable":
                return st.id
        return None

    async def _reranker(self) -> str | None:
        asked = self.asked.rerank
        if asked is False:
            return None
        if isinstance(asked, str):
            lease = await self.state.lease(asked, kind="rerank")  # a 404 or a 400 in words, before any search
            lease.release()
            return lease.resident.id
        found = [st for st in self.state.pool.statuses() if st.kind == "rerank" and st.state != "unusable"]
        found.sort(key=lambda st: st.state != "loaded")  # one loaded already first
        return found[0].id if found else None

    async def find(self, query: str, k: int) -> list[Passage]:
        """The passages that best answer `query`: the fused search's `CANDIDATES`, reranked where there is a
        reranker, at most `k` (in their order, best first)."""
        if not query.strip():
            raise bad_request("The documents are searched with the last user message, and it holds no text.",
                              "documents")
        name, f = self.asked.collection, self.figures
        if self._embedding_id is None:
            found = await self.docs.run(_search, name, query, None, CANDIDATES, name=name)
        else:
            with await self.state.lease(self._embedding_id, kind="embedding") as lease:
                found = await self.docs.run(_search, name, query, _embedder(lease), CANDIDATES, name=name)
        passages, embed_ms, search_ms = found
        f.searches += 1
        f.embed_ms += embed_ms
        f.search_ms += search_ms
        if self._reranker_id is not None and len(passages) > 1:
            t0 = time.perf_counter()
            scored = await rerank_documents(self.state, self._reranker_id, query, [p.text for p in passages],
                                            truncate=True)
            passages = [replace(passages[i], score=s) for i, s in scored.ranked()]
            f.rerank_ms += (time.perf_counter() - t0) * 1000
        return passages[:k]


def _search(library: DocumentLibrary, name: str, query: str, embedder: ModelEmbedder | None,
            k: int) -> tuple[list[Passage], float, float]:
    found = library.search(name, query, embedder, k=k, mode="both" if embedder is not None else "words")
    embed_ms, search_ms = library.last_times
    return found, embed_ms, search_ms


def _embedder(lease: Lease) -> ModelEmbedder:
    return ModelEmbedder(cast(EmbedModel, lease.resident.model).model)
