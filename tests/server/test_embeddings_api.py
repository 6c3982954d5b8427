"""POST /v1/embeddings and /v1/rerank on a real `prefill serve`: SmolLM2 with the bundled embedding model
and a reranker beside it (--embed-model), each resident once; the official OpenAI client (floats, its
default base64, lists, token arrays) gets the vectors the EmbeddingModel makes itself; the refusals,
each in words; the doors (key, Host, Origin, content type) on the new routes."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import numpy as np
import ollama
import openai
import pytest

from prefill.engine.embed.model import EmbeddingModel
from prefill.engine.settings import LoadSettings
from tests.server.conftest import Served, start_server, stop_server

pytestmark = pytest.mark.model
KEY = "sk-embed"
CPU = LoadSettings(n_gpu_layers="none", n_threads=1)
EMBED = "bundled-embed"  # the alias --embed-model bundled-embed adds; its id is all-MiniLM-L6-v2
RERANK = "minilm-rank"
TEXTS = ["A man is eating food.", "The new movie is awesome.", "The cat sits outside on the warm mat."]
QUERY = "What is the cat doing?"
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def served(smollm2: Path, minilm_gguf: Path, minilm_reranker: Path, embed_cache_home: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--embed-model", "bundled-embed", "--embed-model", str(minilm_reranker),
                     "--parallel", "1", "--ctx", "1024", "--api-key", KEY,
                     env={"XDG_CACHE_HOME": str(embed_cache_home)})
    yield s
    stop_server(s)


@pytest.fixture(scope="module")
def local(minilm_gguf: Path) -> Iterator[EmbeddingModel]:
    m = EmbeddingModel.load(minilm_gguf, CPU)
    yield m
    m.close()


def post(s: Served, path: str, body: object, **headers: str) -> httpx.Response:
    return httpx.post(s.url + path, json=body, headers={"Authorization": f"Bearer {KEY}", **headers}, timeout=120)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_openai_client_gets_the_models_own_vectors(served: Served, local: EmbeddingModel) -> None:
    client = served.client()
    want = local.embed(TEXTS)
    by_default = client.embeddings.create(model=EMBED, input=TEXTS)  # the SDK asks for base64 and decodes it
    floats = client.embeddings.create(model=EMBED, input=TEXTS, encoding_format="float")
    for reply in (by_default, floats):
        got = np.array([d.embedding for d in sorted(reply.data, key=lambda d: d.index)])
        assert got.shape == (3, 384)
        assert cosines(got, want).min() >= 0.999
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)  # unit length, as OpenAI's
        assert reply.model == "all-MiniLM-L6-v2"
        assert reply.usage.prompt_tokens == reply.usage.total_tokens == sum(local.count_tokens(TEXTS))
    one = client.embeddings.create(model=EMBED, input=TEXTS[1], encoding_format="float")
    assert len(one.data) == 1 and cosines(np.array([one.data[0].embedding]), want[1:2])[0] >= 0.999


def test_base64_is_little_endian_float32(served: Served, local: EmbeddingModel) -> None:
    r = post(served, "/v1/embeddings", {"model": EMBED, "input": TEXTS[0], "encoding_format": "base64"})
    assert r.status_code == 200, r.text
    raw = base64.b64decode(r.json()["data"][0]["embedding"])
    assert len(raw) == 384 * 4
    assert cosines(np.frombuffer(raw, "<f4")[None], local.embed(TEXTS[:1]))[0] >= 0.999


def test_token_arrays_are_embedded_as_given(served: Served, local: EmbeddingModel) -> None:
    client = served.client()
    tokens = [local.tokenize(t) for t in TEXTS]  # framed as the model reads a text: the same vectors
    many = client.embeddings.create(model=EMBED, input=tokens, encoding_format="float")
    one = client.embeddings.create(model=EMBED, input=tokens[2], encoding_format="float")
    assert cosines(np.array([d.embedding for d in many.data]), local.embed(TEXTS)).min() >= 0.999
    assert cosines(np.array([one.data[0].embedding]), local.embed(TEXTS[2:]))[0] >= 0.999
    assert many.usage.prompt_tokens == sum(map(len, tokens)) and one.usage.prompt_tokens == len(tokens[2])
    r = post(served, "/v1/embeddings", {"model": EMBED, "input": [[1, 2, 10**9]]})
    assert r.status_code == 400 and "10000000" in r.json()["error"]["message"]


def test_dimensions_other_than_the_models_are_refused_in_words(served: Served) -> None:
    client = served.client()
    assert len(client.embeddings.create(model=EMBED, input="x", dimensions=384, encoding_format="float")
               .data[0].embedding) == 384
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=EMBED, input="x", dimensions=128)
    said = e.value.body["message"]  # type: ignore[index]
    assert "384 dimensions" in said and "128" in said and e.value.body["param"] == "dimensions"  # type: ignore[index]


def test_each_kind_answers_only_its_own_requests(served: Served) -> None:
    client = served.client()
    chat_id = served.model_id
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=chat_id, input="x")
    said = e.value.body["message"]  # type: ignore[index]
    assert e.value.body["code"] == "wrong_model_kind"  # type: ignore[index]
    assert f"'{chat_id}' is a chat model" in said and "'all-MiniLM-L6-v2'" in said  # where embeddings are
    with pytest.raises(openai.BadRequestError, match="is an embedding model: it answers embeddings"):
        client.chat.completions.create(model=EMBED, messages=HELLO, max_tokens=4)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="is a reranking model"):
        client.embeddings.create(model=RERANK, input="x")
    r = post(served, "/v1/rerank", {"model": EMBED, "query": QUERY, "documents": TEXTS})
    assert r.status_code == 400 and "is an embedding model" in r.json()["error"]["message"]
    assert "'minilm-rank'" in r.json()["error"]["message"]


def test_a_chat_and_an_embedding_model_answer_side_by_side_each_loaded_once(served: Served) -> None:
    client = served.client()
    for _ in range(2):
        reply = client.chat.completions.create(model=served.model_id, messages=HELLO, max_tokens=4)  # type: ignore[arg-type]
        assert reply.choices[0].message.content is not None
        assert len(client.embeddings.create(model=EMBED, input=TEXTS).data) == 3
    listed = {m["id"]: m for m in httpx.get(served.url + "/models", headers={"Authorization": f"Bearer {KEY}"},
                                            timeout=30).json()["data"]}
    assert {i: (m["kind"], m["state"], m["loads"]) for i, m in listed.items()} == {
        served.model_id: ("chat", "loaded", 1), "all-MiniLM-L6-v2": ("embedding", "loaded", 1),
        RERANK: ("rerank", "loaded", 1)}
    models = {m.id: m.model_extra for m in client.models.list().data}
    assert models["all-MiniLM-L6-v2"]["kind"] == "embedding"  # type: ignore[index]
    assert models["all-MiniLM-L6-v2"]["meta"]["n_embd"] == 384  # type: ignore[index]


def test_an_input_longer_than_the_context_is_refused_naming_both_or_cut_when_asked(served: Served) -> None:
    long = "word " * 700
    r = post(served, "/v1/embeddings", {"model": EMBED, "input": ["short", long]})
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "context_length_exceeded"
    assert err["message"].startswith("Input 1 is 702 tokens, longer than the 512 tokens")
    r = post(served, "/v1/embeddings", {"model": EMBED, "input": ["short", long], "truncate": True})
    assert r.status_code == 200 and r.json()["usage"]["prompt_tokens"] == 3 + 512


def test_the_number_and_shape_of_inputs_are_bounded(served: Served) -> None:
    def said(body: dict[str, object]) -> str:
        r = post(served, "/v1/embeddings", {"model": EMBED, **body})
        assert r.status_code == 400, r.text
        return str(r.json()["error"]["message"])

    assert "at most 2048" in said({"input": ["x"] * 2049})
    assert "'input' is required" in said({"input": []})
    assert "empty text" in said({"input": ["a", ""]})
    assert "one kind throughout" in said({"input": ["a", [1, 2]]})
    assert "not an integer" in said({"input": [[1, 2.5]]})
    assert "encoding_format" in said({"input": "a", "encoding_format": "int8"})


def test_rerank_orders_documents_by_the_models_own_scores(served: Served, minilm_reranker: Path) -> None:
    model = EmbeddingModel.load(minilm_reranker, CPU)
    try:
        want = model.rerank(QUERY, TEXTS)
        tokens = sum(len(p) for p in model.rerank_tokens(QUERY, TEXTS))
    finally:
        model.close()
    for path in ("/v1/rerank", "/rerank", "/v1/reranking"):
        r = post(served, path, {"model": RERANK, "query": QUERY, "documents": TEXTS})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["model"] == RERANK and body["usage"]["prompt_tokens"] == tokens
        results = body["results"]
        assert sorted(x["index"] for x in results) == [0, 1, 2]
        scores = [x["relevance_score"] for x in results]
        assert scores == sorted(scores, reverse=True)
        assert np.allclose([want[x["index"]] for x in results], scores, atol=1e-3)
    top = post(served, "/v1/rerank", {"model": RERANK, "query": QUERY, "documents": [{"text": t} for t in TEXTS],
                                      "top_n": 1, "return_documents": True}).json()["results"]
    best = int(np.argmax(want))
    assert top == [{"index": best, "relevance_score": pytest.approx(want[best], abs=1e-3),
                    "document": {"text": TEXTS[best]}}]


def test_rerank_refusals_are_in_words(served: Served) -> None:
    def said(body: dict[str, object]) -> str:
        r = post(served, "/v1/rerank", {"model": RERANK, **body})
        assert r.status_code == 400, r.text
        return str(r.json()["error"]["message"])

    assert "'documents' is required" in said({"query": QUERY})
    assert "'query' is required" in said({"documents": TEXTS})
    assert "'query' is empty" in said({"query": "", "documents": TEXTS})
    assert "holds no input" in said({"query": QUERY, "documents": []})
    assert "'top_n' must be at least 1" in said({"query": QUERY, "documents": TEXTS, "top_n": 0})
    assert said({"query": QUERY, "documents": ["word " * 700]}).startswith("The query and document 0 together are")


def test_the_doors_stand_before_the_new_routes(served: Served) -> None:
    body = {"model": EMBED, "input": "x"}
    for path in ("/v1/embeddings", "/v1/rerank"):
        assert httpx.post(served.url + path, json=body, timeout=30).status_code == 401
        assert post(served, path, body, Authorization="Bearer wrong").status_code == 401
        assert post(served, path, body, Host="attacker.example").status_code == 421
        assert post(served, path, body, Origin="https://evil.example").status_code == 403
        r = httpx.post(served.url + path, content=b'{"model": "x", "input": "x"}', timeout=30,
                       headers={"Authorization": f"Bearer {KEY}", "Content-Type": "text/plain"})
        assert r.status_code == 415
    assert post(served, "/v1/embeddings", {"model": "nope", "input": "x"}).status_code == 404


def test_the_bundled_embedding_model_alone_serves_embeddings(embed_cache_home: Path, local: EmbeddingModel) -> None:
    s = start_server(None, "--model", "bundled-embed", env={"XDG_CACHE_HOME": str(embed_cache_home)})
    try:
        client = s.client()
        assert [m.id for m in client.models.list().data] == ["all-MiniLM-L6-v2"]
        for name in ("bundled-embed", "all-MiniLM-L6-v2"):
            reply = client.embeddings.create(model=name, input=TEXTS)
            assert cosines(np.array([d.embedding for d in reply.data]), local.embed(TEXTS)).min() >= 0.999
        with pytest.raises(openai.BadRequestError, match="No model here is a chat model"):
            client.chat.completions.create(model="bundled-embed", messages=HELLO)  # type: ignore[arg-type]
    finally:
        stop_server(s)


def test_a_models_folder_lists_and_serves_its_embedding_and_reranking_models(
    tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path, minilm_reranker: Path, tiny_model: Path,
) -> None:
    import shutil

    folder = tmp_path_factory.mktemp("embed-folder")
    shutil.copyfile(minilm_gguf, folder / "minilm.gguf")
    shutil.copyfile(minilm_reranker, folder / "reranker.gguf")
    shutil.copyfile(tiny_model, folder / "tiny.gguf")
    hf = tmp_path_factory.mktemp("hf")
    s = start_server(None, "--models-dir", str(folder), "--ttl", "never", "--parallel", "1", "--ctx", "512",
                     env={"HF_HUB_CACHE": str(hf), "HF_HOME": str(hf)})
    try:
        client = s.client()
        listed = {m.id: m.model_extra for m in client.models.list().data}
        assert {i: (m["kind"], m["state"]) for i, m in listed.items() if ":" not in i} == {  # type: ignore[index]
            "minilm.gguf": ("embedding", "not loaded"), "reranker.gguf": ("rerank", "not loaded"),
            "tiny.gguf": ("chat", "not loaded")}
        reply = client.embeddings.create(model="minilm", input=TEXTS)  # the file's name without .gguf answers too
        assert reply.model == "minilm.gguf" and len(reply.data) == 3
        r = httpx.post(s.url + "/v1/rerank", json={"model": "reranker", "query": QUERY, "documents": TEXTS},
                       timeout=120)
        assert r.status_code == 200 and len(r.json()["results"]) == 3
        states = {m.id: m.model_extra["state"] for m in client.models.list().data}  # type: ignore[index]
        assert states["minilm.gguf"] == states["reranker.gguf"] == "loaded" and states["tiny.gguf"] == "not loaded"
    finally:
        stop_server(s)


def test_ollamas_embed_gives_the_same_vectors_and_its_own_fields(served: Served, local: EmbeddingModel) -> None:
    c = ollama.Client(host=served.url, headers={"Authorization": f"Bearer {KEY}"})
    got = c.embed(model=EMBED, input=TEXTS)
    assert got.model == "all-MiniLM-L6-v2" and len(got.embeddings) == len(TEXTS)
    assert (cosines(np.array(got.embeddings), local.embed(TEXTS)) >= 0.999).all()
    assert got.prompt_eval_count == sum(local.count_tokens(TEXTS))
    assert (got.total_duration or 0) > 0 and got.load_duration is not None
    one = c.embed(model=EMBED, input=TEXTS[0])  # a text alone: one vector
    assert len(one.embeddings) == 1 and np.allclose(one.embeddings[0], got.embeddings[0], atol=1e-5)
    long = "word " * 2000
    assert len(c.embed(model=EMBED, input=long).embeddings) == 1  # Ollama cuts by default
    with pytest.raises(ollama.ResponseError) as e:
        c.embed(model=EMBED, input=long, truncate=False)
    assert e.value.status_code == 400 and "512" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        c.embed(model="SmolLM2-135M-Instruct.Q4_1", input="hi")
    assert e.value.status_code == 400 and "chat" in e.value.error
    assert c.show(EMBED).capabilities == ["embedding"] and c.show(RERANK).capabilities == []  # never offered to chat
    assert c.embed(model=EMBED, input=[]).embeddings == []  # Ollama's answer to nothing: the model, no vector
    assert post(served, "/api/embeddings", {"model": EMBED, "prompt": ""}).json() == {"embedding": []}
    legacy = post(served, "/api/embeddings", {"model": EMBED, "prompt": TEXTS[1]}).json()
    assert list(legacy) == ["embedding"] and np.allclose(legacy["embedding"], got.embeddings[1], atol=1e-5)

