"""The `search_documents` tool through `prefill serve`, with a scripted model that calls it (query="Oslo")
and, once a result holding "Sunny" is in the conversation, answers citing [1]: the server answers the call
with the passages its search finds, the model goes on, and the client gets one answer with its `sources`,
in Chat Completions (whole and streamed), Messages and Ollama's chat. The collection is indexed with a
hashed bag-of-words embedder the pool does not have, so the server searches it by its words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from prefill.documents.library import DocumentLibrary
from tests.documents.embedders import HashEmbedder, count_words
from tests.engine.vocab_models import write_round_tripper
from tests.server.conftest import Served, sse_events, start_server, stop_server

pytestmark = pytest.mark.model
ANSWER = "It is sunny in Oslo [1]."
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]
TOOL = {"collection": "notes", "mode": "tool"}
# the tool's name as the scripted model writes it, in pieces that are each one token of Qwen2's vocabulary
NAME = ("search", "_documents")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    folder = tmp_path_factory.mktemp("notes")
    (folder / "weather.md").write_text("Sunny, 21 °C in Oslo today, with a light wind from the fjord.\n")
    (folder / "ferry.md").write_text("The ferry to Nesodden leaves from the city hall pier every hour.\n")
    docs = tmp_path_factory.mktemp("docs-index")
    lib = DocumentLibrary(docs / "documents.sqlite3")
    lib.add("notes", [folder], HashEmbedder(), count_words)
    lib.close()
    model = write_round_tripper(tmp_path_factory.mktemp("searcher") / "searcher.gguf", NAME, answer=ANSWER,
                                key=("query",))
    s = start_server(model, "--parallel", "1", "--ctx", "1024", "--docs-dir", str(docs))
    yield s, folder.resolve()
    stop_server(s)


def _post(s: Served, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(s.url + path, json=body, headers={"Authorization": "Bearer none"}, timeout=120)


def _check_sources(sources: list[dict[str, Any]], folder: Path) -> None:
    assert sources[0]["n"] == 1 and sources[0]["file"] == str(folder / "weather.md") and sources[0]["cited"]
    assert sources[0]["page"] is None and "Sunny, 21 °C" in sources[0]["text"]


def test_the_model_searches_the_server_answers_and_the_client_gets_the_answer(served: tuple[Served, Path]) -> None:
    s, folder = served
    r = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": ASK, "temperature": 0,
                                          "documents": TOOL})
    assert r.status_code == 200, r.text
    body = r.json()
    message = body["choices"][0]["message"]
    assert message["content"] == ANSWER and not message.get("tool_calls")  # the search was the server's
    assert body["choices"][0]["finish_reason"] == "stop"
    _check_sources(body["sources"], folder)
    retrieval = body["retrieval"]
    assert (retrieval["mode"], retrieval["searches"], retrieval["by"]) == ("tool", 1, "words")
    assert body["usage"]["completion_tokens"] > len(ANSWER.split())  # the call's tokens and the answer's


def test_streamed_the_search_is_not_shown_and_the_last_chunk_has_the_sources(served: tuple[Served, Path]) -> None:
    s, folder = served
    r = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": ASK, "temperature": 0, "stream": True,
                                          "documents": TOOL})
    assert r.status_code == 200, r.text
    chunks = [json.loads(e[6:]) for e in r.text.split("\n\n") if e.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert "".join(d.get("content") or "" for d in deltas) == ANSWER
    assert not any(d.get("tool_calls") for d in deltas)
    last = chunks[-1]
    assert last["choices"][0]["finish_reason"] == "stop"
    _check_sources(last["sources"], folder)


def test_messages_and_ollama_run_the_same_loop(served: tuple[Served, Path]) -> None:
    s, folder = served
    m = _post(s, "/v1/messages", {"model": s.model_id, "messages": ASK, "max_tokens": 64, "temperature": 0,
                                  "documents": TOOL})
    assert m.status_code == 200, m.text
    assert m.json()["content"] == [{"type": "text", "text": ANSWER}] and m.json()["stop_reason"] == "end_turn"
    _check_sources(m.json()["sources"], folder)
    streamed = _post(s, "/v1/messages", {"model": s.model_id, "messages": ASK, "max_tokens": 64, "temperature": 0,
                                         "stream": True, "documents": TOOL})
    events = sse_events(streamed.text)
    assert not any(d.get("content_block", {}).get("type") == "tool_use" for _, d in events)
    _check_sources(next(d for n, d in events if n == "message_delta")["sources"], folder)
    o = _post(s, "/api/chat", {"model": s.model_id, "messages": ASK, "stream": False, "options": {"temperature": 0},
                               "documents": TOOL})
    assert o.status_code == 200, o.text
    assert o.json()["message"]["content"] == ANSWER and not o.json()["message"].get("tool_calls")
    _check_sources(o.json()["sources"], folder)


def test_a_clients_tool_named_like_the_servers_is_refused(served: tuple[Served, Path]) -> None:
    s, _ = served
    own = {"type": "function", "function": {"name": "search_documents", "parameters": {"type": "object"}}}
    r = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": ASK, "tools": [own],
                                          "documents": "notes"})
    assert r.status_code == 400 and "search_documents" in r.json()["error"]["message"]
