"""Context overflow: stop, truncate_middle and rolling_window do what they say; a full cache ends an answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.engine.errors import ContextOverflow
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.prompt.overflow import fit_messages
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, OverflowSettings, SamplingSettings

# A conversation whose messages cost 10 tokens each (the counter below), system prompt included.
CHAT = [Message("system", "sys"), Message("user", "u1"), Message("assistant", "a1"),
        Message("user", "u2"), Message("assistant", "a2"), Message("user", "u3"),
        Message("assistant", "a3"), Message("user", "u4")]


def tens(msgs) -> int:  # noqa: ANN001
    return 10 * len(msgs)


def test_fits_untouched() -> None:
    f = fit_messages(CHAT, tens, n_ctx=100, reserve=20, policy="stop")
    assert f.dropped == () and f.prompt_tokens == 80 and f.note == ""


def test_stop_says_how_many_tokens_over() -> None:
    with pytest.raises(ContextOverflow) as e:
        fit_messages(CHAT, tens, n_ctx=70, reserve=20, policy="stop")
    assert e.value.over == 30 and "30 more than the 70-token context" in str(e.value)


def test_rolling_window_drops_oldest_turns_keeps_system() -> None:
    f = fit_messages(CHAT, tens, n_ctx=70, reserve=20, policy="rolling_window")
    assert f.dropped == (1, 2, 3, 4)  # u1 a1, then u2 a2
    assert [m.content for m in f.messages] == ["sys", "u3", "a3", "u4"]
    assert "4 earlier messages left out" in f.note


def test_truncate_middle_keeps_system_and_first_exchange() -> None:
    f = fit_messages(CHAT, tens, n_ctx=70, reserve=20, policy="truncate_middle")
    assert [m.content for m in f.messages] == ["sys", "u1", "a1", "u4"]
    assert f.dropped == (3, 4, 5, 6)


def test_nothing_fits_is_an_overflow_whatever_the_policy() -> None:
    for policy in ("rolling_window", "truncate_middle"):
        with pytest.raises(ContextOverflow):
            fit_messages(CHAT, tens, n_ctx=25, reserve=10, policy=policy)


def test_policies_on_the_real_model(smollm2: Path) -> None:
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=256, n_gpu_layers="none"))
    try:
        long = "Please remember this sentence about the weather in Paris today. " * 8
        chat = [Message("system", "Be brief."), Message("user", "First question?"),
                Message("assistant", "First answer."),
                Message("user", long), Message("assistant", "Noted."), Message("user", long),
                Message("assistant", "Noted again."), Message("user", "Last question?")]
        sampling = SamplingSettings(temperature=0.0, max_tokens=32)
        assert e.count_tokens(ChatRequest.of(chat)) + 32 > 256
        with pytest.raises(ContextOverflow) as err:
            list(e.stream(ChatRequest.of(chat, sampling, overflow=OverflowSettings("stop"))))
        assert err.value.over > 0
        for policy, kept_first in (("rolling_window", False), ("truncate_middle", True)):
            events = list(e.stream(ChatRequest.of(chat, sampling, overflow=OverflowSettings(policy))))
            p = next(ev for ev in events if isinstance(ev, PrefillDone))
            assert p.dropped_messages and 7 not in p.dropped_messages and 0 not in p.dropped_messages
            assert (1 not in p.dropped_messages) == kept_first
            assert p.prompt_tokens + 32 <= 256 and "left out" in p.overflow_note
            assert isinstance(events[-1], Finished)
    finally:
        e.close()


def test_answer_reaching_the_context_end_stops_with_context_full(tiny_model: Path) -> None:
    e = ChatEngine.load(tiny_model, LoadSettings(n_ctx=128, n_gpu_layers="none"))
    try:
        ask = ChatRequest.of([Message("user", "go on")], SamplingSettings(seed=9, max_tokens=1000),
                             OverflowSettings(reserve=16))
        events = list(e.stream(ask))
        fin = events[-1]
        assert isinstance(fin, Finished) and fin.reason == "context_full"
        assert fin.metrics.kv_used == e.n_ctx == len(e.cached_tokens)
        # and the engine is ready for more, from an emptier cache
        e.reset_cache()
        again = list(e.stream(ChatRequest.of([Message("user", "hi")], SamplingSettings(seed=1, max_tokens=5))))
        assert isinstance(again[-1], Finished) and again[-1].reason == "length"
    finally:
        e.close()
