"""A request that names a document collection, through `prefill serve` on SmolLM2 with the bundled embedding
model and a reranker in the pool: the passages found for the question go in with it, and the answer carries
them as `sources` (file, page, score, text, n) in Chat Completions, Messages, Responses and Ollama's chat,
whole and streamed; an unknown collection is a 404 in each dialect's shape; the reranker orders the fused
candidates as it scores them itself; a collection whose files changed is indexed again before the search."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from prefill.documents.embedding import ModelEmbedder
from prefill.documents.library import DocumentLibrary
from prefill.engine.embed.model import EmbeddingModel
from prefill.engine.settings import LoadSettings
from tests.documents.corpus import Question, write_corpus
from tests.server.conftest import Served, sse_events, start_server, stop_server

pytestmark = pytest.mark.model
KEY = "sk-docs"
CPU = LoadSettings(n_gpu_layers="none", n_threads=1)
INDEX = "documents.sqlite3"


@dataclass
class Setup:
    served: Served
    index: Path
    corpus: Path
    watched: Path
    question: Question  # answered by a PDF, whose file the fused search ranks first


def _write_watched(folder: Path) -> None:
    folder.mkdir()
    (folder / "keeper.md").write_text("# Lighthouse\n\nThe lighthouse keeper is named Orla Brenn.\n")
    (folder / "ferry.md").write_text("# Ferry\n\nThe ferry to the lighthouse island leaves at dawn.\n")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, smollm2: Path, minilm_gguf: Path, minilm_reranker: Path,
          embed_cache_home: Path) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("documents-api")
    questions = write_corpus(root / "corpus")
    _write_watched(root / "watched")
    index = root / "index"
    index.mkdir()
    model = EmbeddingModel.load(minilm_gguf, CPU)
    try:
        e = ModelEmbedder(model)
        lib = DocumentLibrary(index / INDEX)
        lib.add("corpus", [root / "corpus"], e, e.count_tokens)
        lib.add("watched", [root / "watched"], e, e.count_tokens)
        first = next(q for q in questions if q.page is not None and Path(
            lib.search("corpus", q.question, e, k=1)[0].file).name == q.file)
        lib.close()
    finally:
        model.close()
    s = start_server(smollm2, "--embed-model", "bundled-embed", "--embed-model", str(minilm_reranker),
                     "--docs-dir", str(index), "--parallel", "1", "--ctx", "2048", "--api-key", KEY,
                     env={"XDG_CACHE_HOME": str(embed_cache_home)})
    yield Setup(s, index / INDEX, (root / "corpus").resolve(), (root / "watched").resolve(), first)
    stop_server(s)


def _post(s: Served, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(s.url + path, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=300)


def _ask(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


def _check(sources: list[dict[str, Any]], setup: Setup) -> None:
    """Numbered from 1, each from the collection's files (a PDF's with its page), the question's file first."""
    assert [s["n"] for s in sources] == list(range(1, len(sources) + 1)) and sources
    files = {str(p) for p in setup.corpus.iterdir()}
    for s in sources:
        assert s["file"] in files and isinstance(s["text"], str) and s["text"] and isinstance(s["cited"], bool)
        assert (s["page"] is not None) == s["file"].endswith(".pdf")
    first = sources[0]
    assert Path(first["file"]).name == setup.question.file and first["page"] >= 1


def test_each_dialect_answers_with_the_passages_as_sources(setup: Setup) -> None:
    s, q = setup.served, setup.question
    docs = {"collection": "corpus", "rerank": False}
    chat = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 8,
                                             "temperature": 0, "documents": docs})
    assert chat.status_code == 200, chat.text
    _check(chat.json()["sources"], setup)
    retrieval = chat.json()["retrieval"]
    assert (retrieval["mode"], retrieval["by"], retrieval["searches"]) == ("passages", "both", 1)
    assert retrieval["embedding_model"] == "all-MiniLM-L6-v2" and retrieval["reranker"] is None
    assert retrieval["passages"] == len(chat.json()["sources"])
    # the passages are in the prompt: it is longer than the question's alone
    bare = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 1})
    assert chat.json()["usage"]["prompt_tokens"] > bare.json()["usage"]["prompt_tokens"] + 100

    messages = _post(s, "/v1/messages", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 8,
                                         "documents": docs})
    assert messages.status_code == 200, messages.text
    _check(messages.json()["sources"], setup)
    ollama = _post(s, "/api/chat", {"model": s.model_id, "messages": _ask(q.question), "stream": False,
                                    "options": {"num_predict": 8}, "documents": docs})
    assert ollama.status_code == 200, ollama.text
    _check(ollama.json()["sources"], setup)
    responses = _post(s, "/v1/responses", {"model": s.model_id, "input": q.question, "max_output_tokens": 8,
                                           "store": False, "documents": docs})
    assert responses.status_code == 200, responses.text
    _check(responses.json()["sources"], setup)


def test_anthropic_count_tokens_counts_the_passages_the_answer_would_read(setup: Setup) -> None:
    s, q = setup.served, setup.question
    docs = {"collection": "corpus", "rerank": False}
    # (max_tokens, optional here, sizes the room the passages fit, as /v1/messages will)
    body = {"model": s.model_id, "messages": _ask(q.question), "documents": docs, "max_tokens": 1}
    counted = _post(s, "/v1/messages/count_tokens", body)
    assert counted.status_code == 200, counted.text
    bare = _post(s, "/v1/messages/count_tokens", {"model": s.model_id, "messages": _ask(q.question)})
    assert counted.json()["input_tokens"] > bare.json()["input_tokens"] + 100  # the passages, counted
    sent = _post(s, "/v1/messages", body)
    assert sent.status_code == 200, sent.text
    usage = sent.json()["usage"]  # exactly what it sends (the prefix cache's part included)
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] == counted.json()["input_tokens"]
    nope = _post(s, "/v1/messages/count_tokens", {**body, "documents": "nope"})
    assert nope.status_code == 404 and nope.json()["type"] == "error"


def test_each_dialects_stream_ends_with_the_sources(setup: Setup) -> None:
    s, q = setup.served, setup.question
    docs = {"collection": "corpus", "rerank": False}
    chat = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 8,
                                             "stream": True, "documents": docs})
    chunks = [json.loads(e[6:]) for e in chat.text.split("\n\n") if e.startswith("data: {")]
    assert chunks[-1]["choices"][0]["finish_reason"] is not None
    _check(chunks[-1]["sources"], setup)
    messages = _post(s, "/v1/messages", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 8,
                                         "stream": True, "documents": docs})
    _check(next(d for n, d in sse_events(messages.text) if n == "message_delta")["sources"], setup)
    ollama = _post(s, "/api/chat", {"model": s.model_id, "messages": _ask(q.question), "options": {"num_predict": 8},
                                    "documents": docs})
    lines = [json.loads(line) for line in ollama.text.splitlines()]
    assert lines[-1]["done"] is True
    _check(lines[-1]["sources"], setup)


def test_an_unknown_collection_is_a_404_in_each_dialects_shape(setup: Setup) -> None:
    s = setup.served
    ask = _ask("Who built the mill?")
    chat = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": ask, "documents": "nope"})
    assert chat.status_code == 404
    error = chat.json()["error"]
    assert error["code"] == "collection_not_found" and error["param"] == "documents"
    assert "'nope'" in error["message"] and "'corpus'" in error["message"]  # the ones there are
    messages = _post(s, "/v1/messages", {"model": s.model_id, "messages": ask, "max_tokens": 4, "documents": "nope"})
    assert messages.status_code == 404 and messages.json()["type"] == "error"
    assert "'nope'" in messages.json()["error"]["message"]
    ollama = _post(s, "/api/chat", {"model": s.model_id, "messages": ask, "documents": "nope"})
    assert ollama.status_code == 404 and "'nope'" in ollama.json()["error"]
    bad = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": ask, "documents": ["corpus"]})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "documents"
    completion = _post(s, "/v1/completions", {"model": s.model_id, "prompt": "Hi", "documents": "corpus"})
    assert completion.status_code == 400 and "chat request" in completion.json()["error"]["message"]


def test_the_reranker_orders_the_fused_candidates(setup: Setup, minilm_gguf: Path, minilm_reranker: Path) -> None:
    s, q = setup.served, setup.question
    ranked = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 1,
                                               "documents": "corpus"}).json()
    fused = _post(s, "/v1/chat/completions", {"model": s.model_id, "messages": _ask(q.question), "max_tokens": 1,
                                              "documents": {"collection": "corpus", "rerank": False}}).json()
    assert ranked["retrieval"]["reranker"] == "minilm-rank" and ranked["retrieval"]["rerank_ms"] > 0
    embedder, reranker = EmbeddingModel.load(minilm_gguf, CPU), EmbeddingModel.load(minilm_reranker, CPU)
    lib = DocumentLibrary(setup.index)
    try:
        candidates = lib.search("corpus", q.question, ModelEmbedder(embedder), k=20)
        scores = reranker.rerank(q.question, [p.text for p in candidates], truncate=True)
    finally:
        lib.close()
        embedder.close()
        reranker.close()
    by_score = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    want = [candidates[i].text for i in by_score]
    got = [x["text"] for x in ranked["sources"]]
    assert got == want[: len(got)]
    assert [x["score"] for x in ranked["sources"]] == pytest.approx([scores[i] for i in by_score[: len(got)]],
                                                                    abs=1e-3)
    assert [x["text"] for x in fused["sources"]] == [p.text for p in candidates][: len(fused["sources"])]
    assert want != [p.text for p in candidates]  # the reranker's order is another than the fusion's


def test_a_changed_collection_is_indexed_again_before_the_search(setup: Setup) -> None:
    s, folder = setup.served, setup.watched
    ask = {"model": s.model_id, "messages": _ask("What is the lighthouse keeper's name?"), "max_tokens": 1,
           "documents": {"collection": "watched", "rerank": False}}
    before = _post(s, "/v1/chat/completions", ask).json()
    assert "refreshed" not in before["retrieval"]
    assert any("Orla Brenn" in x["text"] for x in before["sources"])

    keeper = folder / "keeper.md"
    keeper.write_text("# Lighthouse\n\nThe lighthouse keeper is named Tomas Vey since the spring.\n")
    st = keeper.stat()
    os.utime(keeper, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))
    (folder / "ferry.md").unlink()
    (folder / "bell.md").write_text("# Bell\n\nThe lighthouse bell rings in fog.\n")
    after = _post(s, "/v1/chat/completions", ask).json()
    refreshed = after["retrieval"]["refreshed"]
    assert (refreshed["added"], refreshed["changed"], refreshed["removed"]) == (1, 1, 1)
    texts = [x["text"] for x in after["sources"]]
    assert any("Tomas Vey" in t for t in texts) and not any("Orla" in t or "ferry" in t for t in texts)
    assert {Path(x["file"]).name for x in after["sources"]} <= {"keeper.md", "bell.md"}
    again = _post(s, "/v1/chat/completions", ask).json()
    assert "refreshed" not in again["retrieval"]  # nothing changed since
