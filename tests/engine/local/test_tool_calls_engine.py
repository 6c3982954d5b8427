"""A model that calls a tool, through the chat engine and the window's slot: the call comes out
as a ToolCalled event and in Finished, none of its markup in the answer's text."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.events import Finished, Token, ToolCalled
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.vocab_models import write_caller

WEATHER = Tool("weather", "The weather in a city.",
               json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
SETTINGS = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf")


def _ask(engine: ChatEngine, **fields: object) -> list[object]:
    request = ChatRequest.of([Message("user", "What is the weather in Oslo?")], SamplingSettings(temperature=0.0))
    return list(engine.stream(replace(request, **fields)))


def test_a_call_is_taken_out_of_the_answer(caller: Path) -> None:
    engine = ChatEngine.load(caller, SETTINGS)
    try:
        events = _ask(engine, tools=(WEATHER,))
        calls = [e.call for e in events if isinstance(e, ToolCalled)]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("weather", {"city": "Oslo"})]
        assert calls[0].id.startswith("call_")
        assert "".join(e.text for e in events if isinstance(e, Token)) == ""  # no markup leaks
        end = events[-1]
        assert isinstance(end, Finished) and end.reason == "tool_calls" and end.tool_calls == tuple(calls)
        assert end.metrics.finish_reason == "tool_calls"
        # offered no tools, the same words are the answer's text, as written
        plain = _ask(engine)
        assert plain[-1].reason == "stop" and plain[-1].text.startswith('<tool_call>{"name":"weather"')
    finally:
        engine.close()
