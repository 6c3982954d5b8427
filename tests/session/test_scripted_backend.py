"""The scripted backend (tests/scripted_backend.py) keeps the ChatBackend contract the real backends
keep, so a fast test that uses it tests what the app will see: the events and their order, the
token counts, the finish reasons, Stop and one stream at a time. The last test holds it to a real
engine's stream (model tier)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from prefill.engine.chat_backend import Event
from prefill.engine.errors import ContextOverflow, EngineBusy
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token, ToolCalled
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.session.capabilities import ChatBackend
from prefill.store import HistoryStore
from tests.scripted_backend import Answer, ScriptedBackend, prompt_tokens, tokens, tool_call

ASK = ChatRequest((Message("system", "Be brief."), Message("user", "Hello there")))


LETTERS = {PrefillDone: "P", Token: "T", MetricsSnapshot: "M", ToolCalled: "C", Finished: "F"}


def kinds(events: list[Event]) -> str:
    """The stream's shape: P(refillDone), T(oken), t (a thinking token), M(etricsSnapshot), C (ToolCalled),
    F(inished)."""
    return "".join("t" if isinstance(e, Token) and e.reasoning else LETTERS[type(e)] for e in events)


def test_it_has_every_member_of_the_protocol() -> None:
    wanted = {n for n in vars(ChatBackend) if not n.startswith("_")}
    assert wanted <= set(dir(ScriptedBackend)), wanted - set(dir(ScriptedBackend))
    model = ScriptedBackend()
    assert (model.local, model.speculates, model.sees_images, model.disk_cache, model.endpoint) == (None,) * 5


def test_an_answer_streams_prefill_thinking_tokens_metrics_calls_then_finished() -> None:
    weather = tool_call("weather", '{"city": "Oslo"}')
    model = ScriptedBackend([Answer("Let me look it up.", thinking="They ask the weather.", tool_calls=(weather,))],
                            metrics_every=4)
    events = list(model.stream(ASK))
    assert kinds(events) == "P" + "tttt" + "M" + "TTTT" + "M" + "T" + "C" + "F"
    prefill, end = events[0], events[-1]
    assert isinstance(prefill, PrefillDone) and isinstance(end, Finished)
    assert prefill.prompt_tokens == model.count_tokens(ASK) == len(["<system>", "Be ", "brief.", "<user>", "Hello ",
                                                                     "there", "<assistant>"])
    assert (end.reason, end.text, end.reasoning, end.tool_calls) == (
        "tool_calls", "Let me look it up.", "They ask the weather.", (weather,))
    assert [e.n_tokens for e in events if isinstance(e, Token)] == list(range(1, 10))
    assert end.metrics.completion_tokens == 9 and end.metrics.reasoning_tokens == 4
    assert end.metrics.finish_reason == "tool_calls" and end.metrics.kv_known
    assert model.requests == [ASK]


def test_the_next_turn_reads_the_last_one_from_its_cache() -> None:
    model = ScriptedBackend(["Hi, how can I help?", "Sure."])
    list(model.stream(ASK))
    follow = ASK.with_messages([*ASK.messages, Message("assistant", "Hi, how can I help?"), Message("user", "Help")])
    prefill = next(model.stream(follow))
    assert isinstance(prefill, PrefillDone)
    assert prefill.cached_tokens == len(prompt_tokens(ASK.messages)) + len(tokens("Hi, how can I help?"))
    assert prefill.evaluated_tokens == prefill.prompt_tokens - prefill.cached_tokens == 3


def test_max_tokens_ends_it_with_length() -> None:
    model = ScriptedBackend(["one two three four"])
    end = list(model.stream(ChatRequest(ASK.messages, SamplingSettings(max_tokens=2))))[-1]
    assert isinstance(end, Finished) and (end.reason, end.text) == ("length", "one two ")


def test_stop_ends_it_after_the_current_token_and_one_stream_runs_at_a_time() -> None:
    cancel = threading.Event()
    model = ScriptedBackend(["one two three four"], pause_after=2)
    stream = model.stream(ASK, cancel)
    seen: list[Event] = []
    worker = threading.Thread(target=lambda: seen.extend(stream))
    worker.start()
    assert model.paused.wait(30)
    with pytest.raises(EngineBusy):
        next(model.stream(ASK))
    cancel.set()
    worker.join(30)
    end = seen[-1]
    assert isinstance(end, Finished) and (end.reason, end.text) == ("cancelled", "one two ")
    assert isinstance(list(model.stream(ASK))[-1], Finished)  # free again


def test_failures_raise_or_end_in_error_where_the_script_says() -> None:
    overflow = ContextOverflow(5000, 512, 4096)
    model = ScriptedBackend([Answer(raises=overflow), Answer("a b c", raises=RuntimeError("gone"), fail_after=1),
                             Answer("a b c", error="the server went away", fail_after=2)])
    with pytest.raises(ContextOverflow):
        list(model.stream(ASK))
    seen: list[Event] = []
    with pytest.raises(RuntimeError, match="gone"):
        seen.extend(model.stream(ASK))
    assert kinds(seen) == "PT"
    end = list(model.stream(ASK))[-1]
    assert isinstance(end, Finished) and (end.reason, end.text, end.error) == ("error", "a b ", "the server went away")


def test_a_scripted_answer_is_stored_as_the_window_stores_one(history_store: HistoryStore) -> None:
    """The scripted backend and the test history together: what a fast window test will build on."""
    end = list(ScriptedBackend([Answer("Tom.", thinking="A cat.")]).stream(ASK))[-1]
    assert isinstance(end, Finished)
    chat = history_store.create_conversation()
    history_store.add_message(chat.id, "user", "Hello there")
    answer = history_store.begin_answer(chat.id)
    history_store.finish_answer(answer, end.text, end.reason, end.metrics.as_dict(), end.reasoning)
    stored = history_store.messages(chat.id)[-1]
    assert (stored.content, stored.reasoning, stored.finish_reason) == ("Tom.", "A cat.", "stop")
    assert stored.figures["completion_tokens"] == 3 and stored.figures["prompt_tokens"] == 7  # thinking included


@pytest.mark.model
def test_its_stream_has_the_shape_of_a_real_engines(tiny_model: Path) -> None:
    """The same request through the real engine (the tiny generated model) and the script: the same
    kinds of events in the same order (PrefillDone, Token…, MetricsSnapshot among them, Finished)."""
    import re

    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.settings import LoadSettings

    engine = ChatEngine.load(tiny_model, LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1))
    try:
        real = list(engine.stream(ChatRequest(ASK.messages, SamplingSettings(temperature=0.0, max_tokens=24))))
    finally:
        engine.close()
    scripted = list(ScriptedBackend([" ".join(["word"] * 24)], metrics_every=5).stream(
        ChatRequest(ASK.messages, SamplingSettings(max_tokens=24))))
    shape = re.compile(r"P[TM]*T[TM]*F")
    assert shape.fullmatch(kinds(real)) and shape.fullmatch(kinds(scripted)), (kinds(real), kinds(scripted))
    r_end, s_end = real[-1], scripted[-1]
    assert isinstance(r_end, Finished) and isinstance(s_end, Finished) and s_end.reason == "length"
    assert r_end.reason in ("stop", "length") and r_end.metrics.finish_reason == r_end.reason
    assert s_end.metrics.finish_reason == "length" and s_end.metrics.completion_tokens == 24
