"""EmbeddingModel on the bundled all-MiniLM-L6-v2, converted here and checked against the same
weights run in numpy; a reranker made from it; the refusals, each in words."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from prefill.engine.embed.bert_gguf import RankHead
from prefill.engine.embed.errors import InputTooLong, NotAnEmbeddingModel
from prefill.engine.embed.model import BadInput, EmbeddingModel, estimate_memory
from prefill.engine.errors import EngineError
from prefill.engine.gguf.header import GGUFError
from prefill.engine.settings import LoadSettings
from tests.engine.embed.bert_reference import MiniLM

pytestmark = pytest.mark.model

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The cat sits outside on the warm mat.",
    "Quarterly revenue grew by twelve percent, beating the analysts' forecasts!",
]
# one thread: two spin at every barrier, which a test machine shared with other processes makes slow
CPU = LoadSettings(n_gpu_layers="none", n_threads=1)


@pytest.fixture(scope="module")
def reference(minilm_zip: Path) -> MiniLM:
    return MiniLM.from_zip(minilm_zip)


@pytest.fixture(scope="module")
def model(minilm_gguf: Path) -> Iterator[EmbeddingModel]:
    m = EmbeddingModel.load(minilm_gguf, CPU)
    yield m
    m.close()


def test_the_model_says_what_it_is(model: EmbeddingModel) -> None:
    assert (model.kind, model.pooling, model.n_embd, model.n_ctx) == ("embedding", "mean", 384, 512)
    # float16 weights (46 MB) and a context's buffers, as llama.cpp counted them
    assert 40e6 < model.memory.weights < 50e6
    assert model.memory.context > 0
    assert model.memory_bytes == model.memory.weights + model.memory.context
    assert model.memory.kv == 0  # an encoder keeps no cache between calls
    assert model.in_flight == 0


def test_the_estimate_before_a_load_is_on_the_safe_side(minilm_gguf: Path, model: EmbeddingModel) -> None:
    guess = estimate_memory(minilm_gguf, CPU)
    assert not guess.measured and model.memory.measured
    assert abs(guess.weights - model.memory.weights) < 0.02 * model.memory.weights
    assert model.memory.total <= guess.total <= 1.5 * model.memory.total


def test_the_pool_hears_when_the_last_call_ends(model: EmbeddingModel) -> None:
    seen: list[int] = []
    model.on_idle = lambda: seen.append(model.in_flight)
    try:
        model.embed(["hello"])
        model.count_tokens(["hello"])
    finally:
        model.on_idle = None
    assert seen == [0, 0]


def test_tokens_are_the_wordpiece_tokens_of_the_checkpoint(model: EmbeddingModel, reference: MiniLM) -> None:
    for s in SENTENCES:
        assert model.tokenize(s) == reference.tokenize(s), s
    assert model.count_tokens(SENTENCES) == [len(reference.tokenize(s)) for s in SENTENCES]
    # accents stripped and case folded as the checkpoint's tokenizer does
    assert model.tokenize("Café NAÏVE") == reference.tokenize("cafe naive")
    # a special token written in a text is text: a document cannot end its input early
    assert model.tokenize("stop [SEP] here") == reference.tokenize("stop [ sep ] here")


def test_vectors_match_the_same_weights_run_in_numpy(model: EmbeddingModel, reference: MiniLM) -> None:
    got = model.embed(SENTENCES)
    assert got.shape == (len(SENTENCES), 384) and got.dtype == np.float32
    for row, s in zip(got, SENTENCES, strict=True):
        want = reference.embed(s)
        assert float(row @ want) >= 0.99, s  # both unit length: the dot is the cosine
        assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-5


def test_similar_sentences_are_closer_than_unrelated_ones(model: EmbeddingModel) -> None:
    food, bread, movie, cat, revenue = model.embed(SENTENCES)
    assert food @ bread > 0.6
    assert food @ bread > max(food @ movie, food @ cat, food @ revenue) + 0.3
    # the figure sentence-transformers' documentation gives for this pair
    assert abs(float(food @ bread) - 0.7553) < 0.01


def test_a_batch_gives_what_one_by_one_gives(model: EmbeddingModel) -> None:
    together = model.embed(SENTENCES)
    alone = np.stack([model.embed([s])[0] for s in SENTENCES])
    assert np.abs(together - alone).max() < 1e-3  # a batch's shapes round a little differently


def test_many_inputs_go_in_several_batches_in_order(model: EmbeddingModel) -> None:
    # 70 inputs (past 64 sequences a batch) with long ones among them (past 512 tokens a batch)
    texts = [f"item {i}: " + ("a long sentence about tokens " * (40 if i in (1, 3, 5) else 1)) for i in range(70)]
    together = model.embed(texts)
    for i in (0, 1, 3, 5, 6, 63, 64, 69):
        assert np.abs(together[i] - model.embed([texts[i]])[0]).max() < 1e-3, i  # batch shapes round differently


def test_token_lists_are_embedded_as_given(model: EmbeddingModel) -> None:
    text = SENTENCES[0]
    by_text, by_tokens = model.embed([text, model.tokenize(text)])
    assert np.abs(by_text - by_tokens).max() < 1e-5


def test_an_input_longer_than_the_context_is_refused_in_words(model: EmbeddingModel) -> None:
    long_text = "word " * 600
    with pytest.raises(InputTooLong) as e:
        model.embed(["short", long_text])
    assert e.value.index == 1 and e.value.limit == 512 and e.value.tokens == 602
    assert "input 1 is 602 tokens, longer than the 512 tokens" in str(e.value)
    assert "cut" in str(e.value)


def test_a_long_input_is_cut_when_asked(model: EmbeddingModel) -> None:
    long_text = "word " * 600
    cut = model.embed([long_text], truncate=True)[0]
    tokens = model.tokenize(long_text)
    assert np.abs(cut - model.embed([tokens[:511] + tokens[-1:]])[0]).max() < 1e-5
    assert model.count_tokens([long_text]) == [602]


def test_bad_token_lists_are_refused_in_words(model: EmbeddingModel) -> None:
    with pytest.raises(BadInput, match="input 0 is an empty list of tokens"):
        model.embed([[]])
    with pytest.raises(BadInput, match="input 1 holds the token 99999999, outside this model's 30522 tokens"):
        model.embed([[101, 102], [101, 99999999, 102]])


def test_a_smaller_context_asked_for_is_the_input_limit(minilm_gguf: Path, model: EmbeddingModel) -> None:
    small = LoadSettings(n_gpu_layers="none", n_threads=1, n_ctx=128)
    m = EmbeddingModel.load(minilm_gguf, small)
    try:
        assert m.n_ctx == 128
        assert m.memory.total <= estimate_memory(minilm_gguf, small).total
        with pytest.raises(InputTooLong, match="longer than the 128 tokens"):
            m.embed(["word " * 200])
        assert m.memory.context < model.memory.context
    finally:
        m.close()


def test_a_chat_model_is_refused_as_an_embedding_model_in_words(smollm2: Path) -> None:
    with pytest.raises(NotAnEmbeddingModel) as e:
        EmbeddingModel.load(smollm2, CPU)
    said = str(e.value)
    assert smollm2.name in said and "is not an embedding model" in said and "bundled-embed" in said


def test_a_corrupt_file_is_refused_at_the_model_door(minilm_gguf: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(minilm_gguf.read_bytes()[: 2_000_000])  # the header whole, the tensors cut short
    with pytest.raises(GGUFError):
        EmbeddingModel.load(cut, CPU)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    with pytest.raises(GGUFError):
        EmbeddingModel.load(junk, CPU)


def test_a_closed_model_says_so(minilm_gguf: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m.gguf"
    shutil.copy(minilm_gguf, copy)
    m = EmbeddingModel.load(copy, CPU)
    m.close()
    with pytest.raises(EngineError, match="has been closed"):
        m.embed(["hello"])


def test_a_reranker_scores_as_its_head_says(
    minilm_reranker: Path, reference: MiniLM, rank_head: RankHead, model: EmbeddingModel,
) -> None:
    r = EmbeddingModel.load(minilm_reranker, CPU)
    try:
        assert (r.kind, r.pooling, r.n_embd) == ("rerank", "rank", 1)
        query = "What do people eat?"
        scores = r.rerank(query, SENTENCES)
        assert len(scores) == len(SENTENCES)
        q = reference.tokenize(query)
        for s, got in zip(SENTENCES, scores, strict=True):
            pair = q + reference.tokenize(s)[1:]  # [CLS] query [SEP] document [SEP]
            assert abs(got - reference.rank(pair, rank_head.weight, rank_head.bias)) < 0.02, s
        with pytest.raises(EngineError, match="is a reranker"):
            r.embed(["hello"])
        with pytest.raises(EngineError, match="not a reranker"):
            model.rerank(query, SENTENCES)
        with pytest.raises(InputTooLong):
            r.rerank(query, ["word " * 600])
        assert len(r.rerank(query, ["word " * 600], truncate=True)) == 1
    finally:
        r.close()


@pytest.fixture(scope="module")
def causal_last(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random llama whose header pools on the last token: a causal embedding model, as
    Qwen3-Embedding and e5-mistral are."""
    import gguf

    from prefill.bench.tiny_model import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("causal") / "last.gguf", weight_scale=0.05,
                            edit=lambda w: w.add_pooling_type(gguf.PoolingType.LAST))


def test_a_causal_model_reads_a_long_input_over_several_decodes(
    causal_last: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefill.engine.embed import model as model_module

    settings = LoadSettings(n_gpu_layers="none", n_threads=1, n_ctx=1024)
    texts = ["hello world", "word " * 300, "another text", *[f"t {i}" for i in range(70)]]
    m = EmbeddingModel.load(causal_last, settings)
    try:
        assert (m.kind, m.pooling, m.n_ctx, m.n_batch) == ("embedding", "last", 1024, model_module.CAUSAL_BATCH)
        assert m.memory.kv > 0 and m.memory.total <= estimate_memory(causal_last, settings).total
        assert 2 * m.n_batch < m.count_tokens(texts[1:2])[0] < m.n_ctx  # three decodes, one input
        chunked = m.embed(texts)
        assert np.abs(chunked - m.embed(texts)).max() == 0  # the cache is cleared between calls
        alone = np.stack([m.embed([t])[0] for t in texts[:4]])
        assert np.abs(chunked[:4] - alone).max() < 1e-3
    finally:
        m.close()
    monkeypatch.setattr(model_module, "CAUSAL_BATCH", 1024)  # each input in one decode
    whole = EmbeddingModel.load(causal_last, settings)
    try:
        assert whole.n_batch == 1024
        assert np.abs(whole.embed(texts[:3]) - chunked[:3]).max() < 1e-3
    finally:
        whole.close()
