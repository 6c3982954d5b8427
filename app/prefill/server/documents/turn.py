"""One request's documents: the passages given to the model (numbered across its searches, each once), the
`search_documents` tool the server runs for it, and the `sources` and `retrieval` its reply carries.

The passages reach the model as the terminal gives them (`documents/sources.py`): the citation rule, then
each passage under "[n] file, page p". The reply's `sources` are every passage the model was given, by that
number, each marked `cited` when the answer's marks point at it (a mark that points at no passage given is
none).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import anyio.to_thread

from prefill.documents.search import Passage
from prefill.documents.sources import NumberedSource, cited, number_passages, sources_block
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import Tool
from prefill.server.documents.search import CANDIDATES, CollectionSearch

TOOL_NAME = "search_documents"
TOOL_PASSAGES = 5  # passages one search by the model returns, at most
MAX_SEARCH_ROUNDS = 3  # answers in which the model may search; in the next the tool is withdrawn
NO_PASSAGE = "No passage of the collection answers that query."
NO_ROOM = "Passages were found, but none fits the room left in the context: answer from those given before."
Count = Callable[[str], int]


class DocumentsTurn:
    """The documents of one request (its collection's searches already prepared)."""

    def __init__(self, search: CollectionSearch):
        self.search = search
        self.given: list[NumberedSource] = []
        self._seen: set[int] = set()  # chunks given, by id

    @property
    def mode(self) -> str:
        return self.search.figures.mode

    @property
    def tool(self) -> Tool:
        """The tool the model searches with."""
        name = self.search.asked.collection
        params = {"type": "object", "properties": {"query": {
            "type": "string", "description": "What to look for, in words: a question or the terms it would use."}},
            "required": ["query"]}
        return Tool(TOOL_NAME, f"Search the document collection {name!r} for passages that answer a question. "
                               "Returns numbered passages: cite them by number, as [1].", json.dumps(params))

    def runs(self, name: str) -> bool:
        """Whether a call of `name` is the server's to answer (the search tool, in tool mode)."""
        return self.mode == "tool" and name == TOOL_NAME

    async def passages(self, question: str, count: Count, budget: int) -> str:
        """The passages found for `question`, as many of the best as fit `budget` tokens (by `count`),
        numbered under the citation rule ("" when none is found); the rule and the labels are counted in."""
        found = await self.search.find(question, CANDIDATES)
        numbered = await anyio.to_thread.run_sync(number_passages, found, count, budget, len(self.given) + 1)
        self._give(numbered, found)
        return sources_block(self.given)

    async def answer(self, calls: Sequence[ToolCall], count: Count, budget: int) -> list[Message]:
        """Each search call answered: the passages not given before that it finds (at most `TOOL_PASSAGES`,
        within `budget` tokens together, the rule and labels counted in), numbered after those given, as the
        tool's result."""
        out = []
        share = budget // max(1, len(calls))
        for c in calls:
            query = _query(c)
            if query is None:
                text = f"{TOOL_NAME} takes one argument, \"query\": the words to look for."
            else:
                found = [p for p in await self.search.find(query, CANDIDATES) if p.chunk_id not in self._seen]
                numbered = await anyio.to_thread.run_sync(number_passages, found[:TOOL_PASSAGES], count, share,
                                                          len(self.given) + 1)
                text = sources_block(self._give(numbered, found)) or (NO_ROOM if found else NO_PASSAGE)
            out.append(Message("tool", text, tool_call_id=c.id, name=c.name))
        return out

    def _give(self, numbered: list[NumberedSource], found: Sequence[Passage] = ()) -> list[NumberedSource]:
        """`numbered` (from the number after those given: the labels counted are the labels sent), kept as
        given."""
        fresh = list(numbered)
        self.given += fresh
        self.search.figures.passages = len(self.given)
        by_place = {(p.file, p.start, p.end): p.chunk_id for p in found}
        self._seen.update(by_place.get((s.file, s.start, s.end), -1) for s in fresh)
        return fresh

    def fields(self, answer: str) -> dict[str, object]:
        """The reply's extension fields: `sources` (every passage given, `cited` where the answer's marks point
        at it) and `retrieval` (what the documents did)."""
        marked = {s.n for s in cited(answer, self.given)}
        sources = [{"n": s.n, "file": s.file, "page": s.page, "score": round(s.score, 6), "text": s.quote,
                    "cited": s.n in marked} for s in self.given]
        return {"sources": sources, "retrieval": self.search.figures.as_dict()}


def _query(c: ToolCall) -> str | None:
    """The call's `query`; a small model that names its argument otherwise has its first text taken."""
    args = c.arguments_object()
    if not isinstance(args, dict):
        return None
    query = args.get("query")
    if not isinstance(query, str):
        query = next((v for v in args.values() if isinstance(v, str)), None)
    return query if isinstance(query, str) and query.strip() else None
