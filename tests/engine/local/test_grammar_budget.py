"""The window's own decode loop keeps the grammar's per-step budget too: an answer whose grammar
step runs past it ends in words, and the engine answers the next request as before."""

from __future__ import annotations

import pytest

from prefill.engine.events import Finished, Token
from prefill.engine.llama import grammar_sampler
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, ResponseFormat
from prefill.engine.settings import SamplingSettings

GREEDY = SamplingSettings(temperature=0.0, max_tokens=24)


def _end(engine: ChatEngine, request: ChatRequest) -> tuple[Finished, list[Token]]:
    events = list(engine.stream(request))
    end = events[-1]
    assert isinstance(end, Finished)
    return end, [e for e in events if isinstance(e, Token)]


def test_a_grammar_step_over_budget_ends_the_answer_in_words(fresh_engine: ChatEngine,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ask = ChatRequest((Message("user", "Describe Paris as JSON."),), GREEDY,
                      response_format=ResponseFormat("json_object"))
    monkeypatch.setattr(grammar_sampler, "STEP_BUDGET_S", -1.0)  # every grammar step runs past it
    end, tokens = _end(fresh_engine, ask)
    assert end.reason == "error" and "ms to judge one token" in end.error, end
    assert not tokens  # ended at its first token
    monkeypatch.undo()
    again, tokens = _end(fresh_engine, ask)
    assert again.reason in ("stop", "length") and tokens and not again.error  # the engine goes on
