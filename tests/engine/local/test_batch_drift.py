"""How far batched logits drift from one-token ones, measured on the loaded model: 0 for the bundled
Q4_1 SmolLM2 on the CPU (checked drafts write plain greedy decoding's text exactly), more for the
same model requantised to Q4_K, whose batched kernels round differently (the answer says so)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from prefill.engine.drafts.batch_drift import SAFETY, SeqZero, TieMargin, pair_drift
from prefill.engine.drafts.draft_length import DecodeCosts
from prefill.engine.events import Finished
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings

FA = LoadSettings(n_ctx=1024, n_gpu_layers="none", flash_attn="on")
GREEDY = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=120)
COPY = "Repeat exactly: the quick brown fox jumps over the lazy dog, and the lazy dog sleeps on."


def test_pair_drift_is_how_far_the_gaps_to_the_best_token_moved() -> None:
    batch = np.array([5.0, 4.0, 1.0, 0.0] + [-9.0] * 8, dtype=np.float32)
    assert pair_drift(batch, batch.copy()) == 0.0
    single = batch.copy()
    single += 3.0  # the same shift everywhere moves no gap
    assert pair_drift(batch, single) == 0.0
    single[1] += 0.25  # the runner-up came 0.25 closer
    assert pair_drift(batch, single) == pytest.approx(0.25)


def test_the_margin_trusts_nothing_before_a_measure_and_everything_when_batches_are_exact() -> None:
    margin = TieMargin()
    assert margin.margin == float("inf") and not margin.exact
    row = np.arange(16, dtype=np.float32)
    margin.observe(row, row.copy())
    assert margin.exact and margin.margin == 0.0
    other = row.copy()
    other[14] += 0.5
    margin.observe(row, other)
    assert not margin.exact and margin.margin == pytest.approx(SAFETY * 0.5)


def _answer(engine: ChatEngine, mode: str) -> Finished:
    engine.reset_cache()
    engine.speculative = mode
    for ev in engine.stream(ChatRequest.of([Message("user", COPY)], GREEDY)):
        if isinstance(ev, Finished):
            return ev
    raise AssertionError("no Finished event")


def test_the_bundled_model_measures_exact_and_says_so(smollm2: Path) -> None:
    engine = ChatEngine.load(smollm2, FA)
    try:
        margin = TieMargin()
        prompt = engine.runtime.tokenize(COPY * 2)
        engine.runtime.decode(prompt)
        costs = DecodeCosts()
        assert margin.measure(SeqZero(engine.runtime, len(prompt)), prompt, costs)
        assert margin.drift == 0.0
        assert costs.single > 0 and costs.line() is not None  # a step's and a batch's price, from the start
        assert engine.runtime.kv_cells_used() == len(prompt)  # the sample left the cache as it was
        assert not margin.measure(SeqZero(engine.runtime, len(prompt)), prompt[:5])  # too short a sample to tell
        fast = _answer(engine, "ngram")
        assert fast.metrics.draft_drift == 0.0 and fast.metrics.draft_n > 0
        assert fast.text == _answer(engine, "off").text
    finally:
        engine.close()


@pytest.fixture(scope="module")
def q4_k(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """SmolLM2 requantised to Q4_K_M by llama.cpp (the type most GGUFs on the hub come in)."""
    out = tmp_path_factory.mktemp("q4k") / "smollm2-q4_k_m.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.allow_requantize = True
    params.nthread = 2
    assert llama_cpp.llama_model_quantize(str(smollm2).encode(), str(out).encode(), ctypes.byref(params)) == 0
    yield out
    out.unlink()


def test_a_model_whose_batches_round_differently_reports_its_drift(q4_k: Path) -> None:
    engine = ChatEngine.load(q4_k, FA)
    try:
        fast = _answer(engine, "ngram")
        assert fast.metrics.draft_n > 0
        assert fast.metrics.draft_drift > 0.05  # measured 0.7 here: up to 8 picks in 148 turn
    finally:
        engine.close()
