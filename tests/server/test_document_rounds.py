"""A request with the `search_documents` tool, from scripted engine events and a scripted search, without a
model: the model's search call is answered by the server and the next answer follows, read by each dialect
as one answer (the call never shown, the text of both, the figures of both), its `sources` numbered across
the searches and marked where cited; a round that also calls a client's tool goes back to the client; a next
answer that cannot start ends the stream in words. And the `documents` field's door."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from starlette.requests import Request

from prefill.documents.search import Passage
from prefill.documents.sources import CITATION_RULE
from prefill.engine.events import Finished, MetricsSnapshot, Token
from prefill.engine.message import Message, ToolCall
from prefill.server.anthropic.replies import MessageReply
from prefill.server.anthropic.replies import full_reply as anthropic_whole
from prefill.server.core import Generation
from prefill.server.documents.field import DocumentsAsked, documents_field
from prefill.server.documents.search import CollectionSearch, Figures
from prefill.server.documents.turn import NO_PASSAGE, TOOL_NAME, DocumentsTurn
from prefill.server.errors import ApiError
from prefill.server.ollama.replies import OllamaLines, OllamaReply
from prefill.server.openai.replies import ChatChunks
from prefill.server.openai.shapes import Reply
from prefill.server.stream_body import stream_body
from tests.server.scripted_events import scripted_generation

PUMP = Passage(11, "/docs/pumps.pdf", 3, 0, 40, "Pumps", "The pump house is painted blue.", 0.9)
GATE = Passage(12, "/docs/gates.md", None, 0, 30, "", "The north gate opens at nine.", 0.5)
BELL = Passage(13, "/docs/bells.md", None, 0, 30, "", "The chapel bell rings at noon.", 0.7)
SEARCH = ToolCall("call_s", TOOL_NAME, '{"query": "pump colour"}')
WEATHER = ToolCall("call_w", "weather", '{"city": "Oslo"}')


class ScriptedSearch(CollectionSearch):
    """The collection's search as a table: a query's first word gives its passages."""

    def __init__(self, table: dict[str, list[Passage]]):  # no pool, no index
        self.asked = DocumentsAsked("notes", "tool")
        self.figures = Figures("notes", "tool")
        self.table = table
        self.queries: list[str] = []

    async def find(self, query: str, k: int) -> list[Passage]:
        self.queries.append(query)
        self.figures.searches += 1
        return self.table.get(query.split()[0], [])[:k]


def _words(text: str) -> int:
    return len(text.split())


def _said(text: str, tokens: int) -> list[object]:
    return [Token(text, 1), Finished("stop", text, MetricsSnapshot(completion_tokens=tokens))]


class Rounds:
    """Answers scripted one after another: each a list of events and the calls its reader took out."""

    def __init__(self, answers: Sequence[tuple[list[object], Sequence[ToolCall]]], fail: ApiError | None = None):
        self.search = ScriptedSearch({"pump": [PUMP, GATE], "bell": [BELL, PUMP]})
        self.turn = DocumentsTurn(self.search)
        self.answers = list(answers)
        self.fail = fail
        self.results: list[list[Message]] = []  # the tool results each next answer read

    def start(self) -> Generation:
        gen = scripted_generation(*self.answers.pop(0))
        gen.documents = self.turn
        gen.then = self.then
        return gen

    async def then(self, gen: Generation) -> Generation:
        if self.fail is not None:
            raise self.fail
        self.results.append(await self.turn.answer(gen.splitter.calls, _words, 1000))
        nxt = scripted_generation(*self.answers.pop(0))
        nxt.documents = self.turn
        nxt.then = self.then if self.answers else None
        return nxt


def _openai(rounds: Rounds) -> list[Any]:
    async def main() -> str:
        return "".join([b async for b in stream_body(ChatChunks(Reply("chat", "m"), rounds.start(), True))])
    body = asyncio.run(main())
    return [json.loads(e[6:]) for e in body.split("\n\n") if e and e != "data: [DONE]"]


def test_a_search_call_is_answered_by_the_server_and_the_answer_goes_on() -> None:
    rounds = Rounds([(_said("Let me look. ", 4), [SEARCH]), (_said("It is blue [1].", 5), [])])
    chunks = _openai(rounds)
    deltas = [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
    assert not any("tool_calls" in d for d in deltas)  # the server's call is never the client's
    assert "".join(d.get("content") or "" for d in deltas) == "Let me look. It is blue [1]."
    last = next(c for c in chunks if c.get("choices") and c["choices"][0]["finish_reason"])
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["sources"] == [
        {"n": 1, "file": "/docs/pumps.pdf", "page": 3, "score": 0.9, "text": PUMP.text, "cited": True},
        {"n": 2, "file": "/docs/gates.md", "page": None, "score": 0.5, "text": GATE.text, "cited": False}]
    assert last["retrieval"]["mode"] == "tool" and last["retrieval"]["searches"] == 1
    assert chunks[-1]["usage"]["completion_tokens"] == 9  # both answers' tokens
    assert rounds.search.queries == ["pump colour"]
    (result,) = rounds.results[0]
    assert (result.role, result.tool_call_id, result.name) == ("tool", "call_s", TOOL_NAME)
    assert result.content.startswith(CITATION_RULE) and "[1] pumps.pdf, page 3\n" + PUMP.text in result.content


def test_searches_are_numbered_on_and_a_passage_is_given_once() -> None:
    again = ToolCall("call_b", TOOL_NAME, '{"query": "bell times"}')
    rounds = Rounds([(_said("", 3), [SEARCH]), (_said("", 3), [again]), (_said("Noon [3], blue [1].", 5), [])])
    last = next(c for c in _openai(rounds) if c.get("choices") and c["choices"][0]["finish_reason"])
    assert [(s["n"], s["file"], s["cited"]) for s in last["sources"]] == [
        (1, "/docs/pumps.pdf", True), (2, "/docs/gates.md", False), (3, "/docs/bells.md", True)]
    second = rounds.results[1][0].content
    assert "[3] bells.md\n" in second and "pumps.pdf" not in second  # the pump passage was given already
    assert last["retrieval"]["searches"] == 2 and last["retrieval"]["passages"] == 3


def test_the_passages_put_in_never_pass_their_budget_rule_and_labels_included() -> None:
    for budget in range(0, 80):
        turn = DocumentsTurn(ScriptedSearch({"pump": [PUMP, GATE, BELL]}))
        block = asyncio.run(turn.passages("pump colour", _words, budget))
        assert _words(block) <= budget
        assert (block != "") == (budget >= _words(f"{CITATION_RULE}\n\n[1] pumps.pdf, page 3\n{PUMP.text}"))
        turn = DocumentsTurn(ScriptedSearch({"pump": [PUMP, GATE, BELL], "bell": [BELL]}))
        asyncio.run(turn.passages("bell", _words, 1000))  # [1] given: the tool's passages are numbered on
        (result,) = asyncio.run(turn.answer([SEARCH], _words, budget))
        if result.content.startswith(CITATION_RULE):
            assert _words(result.content) <= budget and "[2] pumps.pdf" in result.content


def test_a_search_beside_a_clients_call_goes_back_to_the_client_without_the_search() -> None:
    rounds = Rounds([(_said("", 3), [SEARCH, WEATHER]), (_said("never", 1), [])])
    chunks = _openai(rounds)
    calls = [p for c in chunks if c.get("choices") for p in c["choices"][0]["delta"].get("tool_calls", [])]
    assert {p["function"]["name"] for p in calls if p.get("function", {}).get("name")} == {"weather"}
    last = next(c for c in chunks if c.get("choices") and c["choices"][0]["finish_reason"])
    assert last["choices"][0]["finish_reason"] == "tool_calls" and last["sources"] == []
    assert rounds.results == []  # no next answer


def test_the_whole_reply_waits_for_the_last_answer_and_says_both() -> None:
    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # the client stays
        return {"type": "http.disconnect"}

    async def main() -> dict[str, Any]:
        rounds = Rounds([(_said("Looking. ", 2), [SEARCH]), (_said("Blue [1].", 3), [])])
        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        return await anthropic_whole(MessageReply("m"), rounds.start(), request)

    body = asyncio.run(main())
    assert body["content"] == [{"type": "text", "text": "Looking. Blue [1]."}]
    assert body["stop_reason"] == "end_turn" and body["usage"]["output_tokens"] == 5
    assert [s["cited"] for s in body["sources"]] == [True, False]


def test_ollamas_last_line_carries_the_sources_and_a_next_answer_that_fails_is_an_error_line() -> None:
    def lines(rounds: Rounds) -> list[dict[str, Any]]:
        async def main() -> str:
            return "".join([b async for b in stream_body(OllamaLines(OllamaReply(True, "m"), rounds.start()))])
        return [json.loads(line) for line in asyncio.run(main()).splitlines()]

    good = lines(Rounds([(_said("", 1), [SEARCH]), (_said("Blue [2].", 3), [])]))
    assert good[-1]["done"] is True and [s["cited"] for s in good[-1]["sources"]] == [False, True]
    assert not any(line.get("message", {}).get("tool_calls") for line in good)
    bad = lines(Rounds([(_said("", 1), [SEARCH]), (_said("never", 1), [])],
                       fail=ApiError(400, "The prompt is 9000 tokens, past the context.")))
    assert bad[-1] == {"error": "The prompt is 9000 tokens, past the context."}


def test_a_search_that_finds_nothing_says_so_and_a_call_without_words_is_told_how() -> None:
    async def main() -> list[Message]:
        turn = DocumentsTurn(ScriptedSearch({}))
        return await turn.answer([ToolCall("a", TOOL_NAME, '{"query": "nothing here"}'),
                                  ToolCall("b", TOOL_NAME, '{"query": 3}')], _words, 1000)

    found, empty = asyncio.run(main())
    assert found.content == NO_PASSAGE and found.tool_call_id == "a"
    assert '"query"' in empty.content and empty.tool_call_id == "b"


def test_the_documents_field_is_a_name_or_an_object_and_anything_else_is_a_400() -> None:
    assert documents_field({}) is None
    assert documents_field({"documents": "notes"}) == DocumentsAsked("notes")
    assert documents_field({"documents": {"collection": "notes", "mode": "tool", "rerank": False}}) == \
        DocumentsAsked("notes", "tool", False)
    assert documents_field({"documents": {"collection": "n", "rerank": "bge-reranker"}}) == \
        DocumentsAsked("n", "auto", "bge-reranker")
    for bad in (["notes"], "", {"mode": "tool"}, {"collection": "n", "mode": "all"}, {"collection": "n", "k": 3},
                {"collection": "n", "rerank": 1}, "x" * 300):
        with pytest.raises(ApiError) as e:
            documents_field({"documents": bad})
        assert e.value.status == 400 and e.value.param == "documents", bad
