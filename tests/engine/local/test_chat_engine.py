"""Streaming a chat through the real SmolLM2 on the real llama.cpp."""

from __future__ import annotations

import threading
from pathlib import Path

import llama_cpp
import pytest

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.local import chat_engine as chat
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.conftest import GREEDY


def run(engine: ChatEngine, msgs: list[Message], sampling: SamplingSettings = GREEDY, cancel=None):
    events = list(engine.stream(ChatRequest.of(msgs, sampling), cancel))
    prefill = next(e for e in events if isinstance(e, PrefillDone))
    finished = events[-1]
    assert isinstance(finished, Finished)
    return events, prefill, finished


def test_streaming_gives_text_and_figures(fresh_engine: ChatEngine) -> None:
    events, prefill, fin = run(fresh_engine, [Message("user", "What is the capital of France?")])
    tokens = [e for e in events if isinstance(e, Token)]
    assert len(tokens) > 3
    assert "".join(t.text for t in tokens) == fin.text and fin.text.strip()
    assert prefill.cached_tokens == 0 and prefill.evaluated_tokens == prefill.prompt_tokens > 10
    m = fin.metrics
    assert m.completion_tokens == tokens[-1].n_tokens
    assert m.ttft_ms > 0 and m.prefill_ms > 0 and m.prefill_tps > 0 and m.decode_tps > 0
    assert 0 < m.itl_p50_ms <= m.itl_p95_ms
    assert m.kv_total == 2048 and m.kv_bytes == m.kv_used * fresh_engine.bytes_per_cell


def test_the_prompt_and_the_decode_get_their_own_thread_counts(engine: ChatEngine) -> None:
    s = engine.runtime.settings
    assert llama_cpp.llama_n_threads(engine.runtime.ctx) == s.threads
    assert llama_cpp.llama_n_threads_batch(engine.runtime.ctx) == s.prefill_threads


def test_kv_used_equals_tokens_in_cache(fresh_engine: ChatEngine) -> None:
    _, prefill, fin = run(fresh_engine, [Message("user", "Name three colours.")])
    cached = fresh_engine.cached_tokens
    assert fin.metrics.kv_used == len(cached) == fresh_engine.runtime.kv_cells_used()
    assert len(cached) == prefill.prompt_tokens + fin.metrics.completion_tokens


def test_second_turn_evaluates_only_the_new_turn(fresh_engine: ChatEngine) -> None:
    history = [Message("system", "You are brief."), Message("user", "What is the capital of France?")]
    _, p1, f1 = run(fresh_engine, history)
    follow = "And of Italy?"
    history += [Message("assistant", f1.text), Message("user", follow)]
    _, p2, _ = run(fresh_engine, history)
    new_turn = fresh_engine.runtime.tokenize(
        f"<|im_end|>\n<|im_start|>user\n{follow}<|im_end|>\n<|im_start|>assistant\n")
    assert p2.cached_tokens == p1.prompt_tokens + f1.metrics.completion_tokens
    assert p2.evaluated_tokens <= len(new_turn) + 2
    assert p2.prompt_tokens == p2.cached_tokens + p2.evaluated_tokens


def test_regenerate_evaluates_almost_nothing(fresh_engine: ChatEngine) -> None:
    history = [Message("user", "Tell me a fact about cats.")]
    _, p1, _ = run(fresh_engine, history, SamplingSettings(temperature=0.8, seed=1, max_tokens=24))
    _, p2, _ = run(fresh_engine, history, SamplingSettings(temperature=0.8, seed=2, max_tokens=24))
    assert p2.prompt_tokens == p1.prompt_tokens
    assert p2.evaluated_tokens <= 1 and p2.cached_tokens >= p1.prompt_tokens - 1


def test_editing_an_earlier_message_evaluates_from_there(fresh_engine: ChatEngine) -> None:
    history = [Message("system", "You are a helpful assistant who answers briefly and kindly."),
               Message("user", "Hello!")]
    _, p1, f1 = run(fresh_engine, history)
    history += [Message("assistant", f1.text), Message("user", "What is 2 + 2?")]
    _, p2, f2 = run(fresh_engine, history)
    edited = [history[0], Message("user", "Good evening!")]
    _, p3, _ = run(fresh_engine, edited)
    opener = len("<|im_start|>assistant\n")
    system_part = len(fresh_engine.runtime.tokenize(fresh_engine.render(history[:1])[:-opener]))
    assert p3.cached_tokens >= system_part - 1  # the system prompt is kept
    assert p3.evaluated_tokens <= p3.prompt_tokens - system_part + 4  # from the edited message on
    assert p3.cached_tokens < p1.prompt_tokens  # the old user message is not reused


def test_cancel_stops_within_one_step_and_engine_is_ready(fresh_engine: ChatEngine) -> None:
    cancel = threading.Event()
    seen = 0
    fin = None
    story = ChatRequest.of([Message("user", "Write a long story about a dragon.")],
                           SamplingSettings(temperature=0.8, seed=3, max_tokens=400))
    for ev in fresh_engine.stream(story, cancel):
        if isinstance(ev, Token):
            seen = ev.n_tokens
            if seen >= 5:
                cancel.set()
        elif isinstance(ev, Finished):
            fin = ev
    assert fin is not None and fin.reason == "cancelled"
    assert fin.metrics.completion_tokens == seen  # no token came after the one that saw the stop
    assert seen <= 6
    _, _, again = run(fresh_engine, [Message("user", "Say hi.")])
    assert again.reason in ("stop", "length") and again.text


def test_multibyte_characters_stream_whole(fresh_engine: ChatEngine) -> None:
    toks = fresh_engine.runtime.tokenize("你好世界 🎉")
    pieces = [fresh_engine.runtime.piece(t) for t in toks]
    assert any(_incomplete(p) for p in pieces), "the tokenizer should split characters across tokens"
    ask = 'Translate "hello world" into Chinese and Japanese. Use emoji.'
    events, _, fin = run(fresh_engine, [Message("user", ask)],
                         SamplingSettings(temperature=0.0, max_tokens=60))
    texts = [e.text for e in events if isinstance(e, Token)]
    assert all("\ufffd" not in t for t in texts)
    assert any(len(ch.encode()) >= 3 for t in texts for ch in t), "expected emoji or CJK in the answer"


def _incomplete(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def test_stop_string_ends_the_answer_and_is_not_shown(fresh_engine: ChatEngine) -> None:
    _, _, free = run(fresh_engine, [Message("user", "Count from 1 to 10, separated by commas.")],
                     SamplingSettings(temperature=0.0, max_tokens=60))
    assert "5" in free.text
    _, _, fin = run(fresh_engine, [Message("user", "Count from 1 to 10, separated by commas.")],
                    SamplingSettings(temperature=0.0, max_tokens=60, stop=("5",)))
    assert fin.reason == "stop" and "5" not in fin.text
    assert free.text.startswith(fin.text)


def test_max_tokens_finishes_with_length(fresh_engine: ChatEngine) -> None:
    _, _, fin = run(fresh_engine, [Message("user", "Write a poem about the sea.")],
                    SamplingSettings(temperature=0.0, max_tokens=5))
    assert fin.reason == "length" and fin.metrics.completion_tokens == 5


@pytest.mark.parametrize("every_s", [0.0, 1e9])
def test_snapshots_arrive_during_a_long_answer(tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                                               every_s: float) -> None:
    """Counted, not timed: at interval 0 every decoded token brings one; at a huge one, none."""
    monkeypatch.setattr(chat, "SNAPSHOT_EVERY_S", every_s)
    e = ChatEngine.load(tiny_model, LoadSettings(n_ctx=2048, n_gpu_layers="none"))
    try:
        events = list(e.stream(ChatRequest.of([Message("user", "go")], SamplingSettings(seed=5, max_tokens=200))))
        snaps = [ev for ev in events if isinstance(ev, MetricsSnapshot)]
        fin = events[-1]
        assert isinstance(fin, Finished) and fin.reason == "length" and fin.metrics.completion_tokens == 200
        assert len(snaps) == (200 if every_s == 0.0 else 0)
        assert all(s.kv_used > 0 for s in snaps)
        assert [s.completion_tokens for s in snaps] == list(range(1, len(snaps) + 1))
    finally:
        e.close()


def test_quantised_kv_cache_needs_flash_attention_and_shrinks_cells(smollm2: Path) -> None:
    with pytest.raises(ValueError, match="flash attention"):
        LoadSettings(kv_type="q8_0", flash_attn="off")
    # flash attention "auto" (the default): llama.cpp turns it on for the quantised cache
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=512, kv_type="q8_0", n_gpu_layers="none"))
    try:
        assert e.runtime.flash_attn_on
        _, _, fin = run(e, [Message("user", "Hi")], SamplingSettings(temperature=0.0, max_tokens=8))
        assert fin.metrics.kv_bytes == fin.metrics.kv_used * 30 * 3 * 128 * 34 // 32
    finally:
        e.close()
