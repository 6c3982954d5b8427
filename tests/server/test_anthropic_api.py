"""Anthropic Messages through `prefill serve`, with the official `anthropic` SDK on SmolLM2: a message
whole and streamed (the events in Anthropic's order), a tool round trip, one call where parallel calls
are off, an image refused in words, count_tokens exact, errors in Anthropic's shape, `x-api-key`, and
thinking with a budget on a scripted reasoning model."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2 as httpx
import pytest

from prefill.bench.tiny_vision import VisionShape, write_tiny_vision
from prefill.engine.prompt.thinking_budget import NOTE
from tests.engine.budget_thinkers import FAMILIES, write_budget_thinker
from tests.engine.vision.conftest import png
from tests.server.conftest import Served, sse_events, start_server, stop_server

pytestmark = pytest.mark.model

WEATHER = {"name": "weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = [{"role": "user", "content": "What is the weather in Oslo, Paris and Rome?"}]
KEY = "sk-local-test"
GREEDY = {"temperature": 0}  # this SDK no longer takes temperature as an argument; the API still does


@pytest.fixture(scope="module")
def smol(smollm2: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--parallel", "2", "--ctx", "2048", "--api-key", KEY)
    yield s
    stop_server(s)


def client(s: Served, **kw: object) -> anthropic.Anthropic:
    kw.setdefault("api_key", KEY)
    return anthropic.Anthropic(base_url=s.url, max_retries=0, timeout=60, **kw)  # type: ignore[arg-type]


def test_a_message_whole_and_streamed_say_the_same(smol: Served) -> None:
    c = client(smol)
    whole = c.messages.create(model=smol.model_id, max_tokens=24, extra_body=GREEDY, system="Answer in one sentence.",
                              messages=[{"role": "user", "content": "Name a colour."}])
    assert whole.type == "message" and whole.role == "assistant" and whole.model == smol.model_id
    assert whole.id.startswith("msg_") and [b.type for b in whole.content] == ["text"]
    assert whole.content[0].text.strip() and whole.stop_reason in ("end_turn", "max_tokens")
    assert whole.usage.output_tokens > 0 and whole.usage.input_tokens + whole.usage.cache_read_input_tokens > 10
    with c.messages.stream(model=smol.model_id, max_tokens=24, extra_body=GREEDY, system="Answer in one sentence.",
                           messages=[{"role": "user", "content": "Name a colour."}]) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == whole.content[0].text == final.content[0].text
    assert (final.stop_reason, final.usage.output_tokens) == (whole.stop_reason, whole.usage.output_tokens)
    assert final.usage.cache_read_input_tokens > 0  # the same prompt again: read from the prefix cache


def test_the_stream_sends_anthropics_events_in_order_and_max_tokens_stops_it(smol: Served) -> None:
    body = {"model": smol.model_id, "max_tokens": 3, "stream": True, "messages": ASK}
    r = httpx.post(smol.url + "/v1/messages?beta=true", json=body, timeout=60,
                   headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    assert all(data["type"] == name for name, data in events)
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == 3  # type: ignore[index]


def test_a_tool_round_trip_with_tool_choice_any(smol: Served) -> None:
    c = client(smol)
    first = c.messages.create(model=smol.model_id, max_tokens=200, extra_body=GREEDY, messages=ASK, tools=[WEATHER],
                              tool_choice={"type": "any"})
    calls = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and calls
    assert all(b.name == "weather" and isinstance(b.input, dict) and "city" in b.input for b in calls)
    follow = [*ASK, {"role": "assistant", "content": [b.model_dump() for b in first.content]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "Sunny, 20 C."}
                                           for b in calls]}]
    second = c.messages.create(model=smol.model_id, max_tokens=40, extra_body=GREEDY, messages=follow, tools=[WEATHER])
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert second.usage.cache_read_input_tokens > 0  # the conversation only grew: its prefix was reused
    failed = [*follow[:2], {"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0].id,
                                                         "is_error": True, "content": "no such city"}]}]
    assert c.messages.create(model=smol.model_id, max_tokens=8, messages=failed, tools=[WEATHER]).type == "message"


def test_disable_parallel_tool_use_gives_one_call_whole_and_streamed(smol: Served) -> None:
    c = client(smol)
    choice = {"type": "any", "disable_parallel_tool_use": True}
    whole = c.messages.create(model=smol.model_id, max_tokens=200, extra_body=GREEDY, messages=ASK, tools=[WEATHER],
                              tool_choice=choice)
    assert [b.type for b in whole.content if b.type != "text"] == ["tool_use"] and whole.stop_reason == "tool_use"
    with c.messages.stream(model=smol.model_id, max_tokens=200, extra_body=GREEDY, messages=ASK, tools=[WEATHER],
                           tool_choice=choice) as stream:
        final = stream.get_final_message()
    uses = [b for b in final.content if b.type == "tool_use"]
    assert len(uses) == 1 and final.stop_reason == "tool_use"
    assert uses[0].input == next(b for b in whole.content if b.type == "tool_use").input


def test_an_image_is_refused_in_words_by_a_model_without_a_projector(smol: Served) -> None:
    data = base64.b64encode(png(8, 8, (200, 10, 10))).decode()
    with pytest.raises(anthropic.BadRequestError) as e:
        client(smol).messages.create(model=smol.model_id, max_tokens=8, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "text", "text": "What colour is this?"}]}])
    assert e.value.body["type"] == "error"  # type: ignore[index]
    assert e.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "projector" in e.value.body["error"]["message"]  # type: ignore[index]


def test_count_tokens_is_the_input_the_message_is_charged(smol: Served) -> None:
    c = client(smol)
    ask = {"model": smol.model_id, "system": [{"type": "text", "text": "Be brief."}], "tools": [WEATHER],
           "messages": [{"role": "user", "content": f"Which city is warmer today? ({uuid.uuid4().hex})"}]}
    counted = c.messages.count_tokens(**ask)  # type: ignore[arg-type]
    sent = c.messages.create(max_tokens=4, **ask)  # type: ignore[arg-type]
    assert counted.input_tokens == sent.usage.input_tokens + sent.usage.cache_read_input_tokens
    assert counted.input_tokens > c.messages.count_tokens(  # the tools' descriptions are in the prompt
        model=smol.model_id, messages=ask["messages"]).input_tokens  # type: ignore[arg-type]


def test_errors_are_in_anthropics_shape(smol: Served) -> None:
    c = client(smol)
    with pytest.raises(anthropic.BadRequestError) as e:
        c.post("/v1/messages", body={"model": smol.model_id, "messages": ASK}, cast_to=object)
    assert e.value.body == {"type": "error", "error": {"type": "invalid_request_error",
                                                       "message": "'max_tokens' is required."}}
    with pytest.raises(anthropic.NotFoundError) as e:
        c.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    assert e.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert "claude-sonnet-4-5" in e.value.body["error"]["message"]  # type: ignore[index]
    long = [{"role": "user", "content": "word " * 3000}]
    with pytest.raises(anthropic.BadRequestError) as e:
        c.messages.create(model=smol.model_id, max_tokens=8, messages=long)
    said = e.value.body["error"]["message"]  # type: ignore[index]
    assert "2048" in said and "prompt is" in said  # both sizes named
    r = httpx.post(smol.url + "/v1/messages/nothing", json={}, headers={"x-api-key": KEY}, timeout=10)
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    r = httpx.post(smol.url + "/v1/messages", content=b"{}", timeout=10,  # the doors answer in the dialect's shape
                   headers={"x-api-key": KEY, "content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["type"] == "error" and "JSON" in r.json()["error"]["message"]
    r = httpx.post(smol.url + "/v1/chat/completions", content=b"{}", timeout=10,
                   headers={"authorization": f"Bearer {KEY}", "content-type": "text/plain"})
    assert r.status_code == 415 and "type" not in r.json() and r.json()["error"]["code"] == "unsupported_media_type"


def test_the_key_as_x_api_key_or_bearer_and_a_wrong_one_refused(smol: Served) -> None:
    ask = {"model": smol.model_id, "max_tokens": 2, "messages": ASK}
    assert client(smol, api_key=None, auth_token=KEY).messages.create(**ask).type == "message"  # type: ignore[arg-type]
    with pytest.raises(anthropic.AuthenticationError) as e:
        client(smol, api_key="wrong").messages.create(**ask)  # type: ignore[arg-type]
    assert e.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    assert "x-api-key" in e.value.body["error"]["message"]  # type: ignore[index]
    assert httpx.head(smol.url + "/", headers={"x-api-key": KEY}, timeout=10).status_code == 200


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = write_budget_thinker(tmp_path_factory.mktemp("budget") / "qwen.gguf", "qwen")
    s = start_server(model.path, "--parallel", "2", "--ctx", "1024")
    yield s
    stop_server(s)


def test_thinking_with_a_budget_on_a_reasoning_model_whole_and_streamed(thinker: Served) -> None:
    c = anthropic.Anthropic(base_url=thinker.url, api_key="none", max_retries=0, timeout=60)
    ask = [{"role": "user", "content": "What is 2+2?"}]
    budget = {"type": "enabled", "budget_tokens": 3}
    whole = c.messages.create(model=thinker.model_id, max_tokens=64, messages=ask, thinking=budget)  # type: ignore[arg-type]
    assert [b.type for b in whole.content] == ["thinking", "text"]
    thought = whole.content[0].thinking.strip()  # type: ignore[union-attr]
    assert thought.endswith(NOTE) and FAMILIES["qwen"].thinking not in thought
    assert (whole.content[1].text, whole.stop_reason) == ("It is 4!", "end_turn")  # type: ignore[union-attr]
    with c.messages.stream(model=thinker.model_id, max_tokens=64, messages=ask, thinking=budget) as stream:  # type: ignore[arg-type]
        kinds = {ev.delta.type for ev in stream if ev.type == "content_block_delta"}
        final = stream.get_final_message()
    assert kinds == {"thinking_delta", "text_delta"}
    assert final.content[0].thinking.strip() == thought and final.content[1].text == "It is 4!"  # type: ignore[union-attr]
    full = c.messages.create(model=thinker.model_id, max_tokens=64, messages=ask,  # type: ignore[arg-type]
                             thinking={"type": "enabled", "budget_tokens": 1024})
    assert FAMILIES["qwen"].thinking in full.content[0].thinking  # type: ignore[union-attr]
    off = c.messages.create(model=thinker.model_id, max_tokens=64, messages=ask, thinking={"type": "disabled"})  # type: ignore[arg-type]
    assert [b.type for b in off.content] == ["text"]  # the template closed the thinking: all of it is answer


def test_a_stop_sequence_ends_the_message_and_is_named_whole_and_streamed(smol: Served) -> None:
    c = client(smol)
    ask = {"model": smol.model_id, "max_tokens": 40, "extra_body": GREEDY, "stop_sequences": [" "],
           "messages": [{"role": "user", "content": "Write a sentence about the sea."}]}
    whole = c.messages.create(**ask)  # type: ignore[arg-type]
    assert (whole.stop_reason, whole.stop_sequence) == ("stop_sequence", " ")
    assert " " not in whole.content[0].text  # type: ignore[union-attr]
    with c.messages.stream(**ask) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", " ")
    plain = c.messages.create(**{**ask, "stop_sequences": []})  # type: ignore[arg-type]
    assert plain.stop_sequence is None and plain.stop_reason in ("end_turn", "max_tokens")


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model, _ = write_tiny_vision(tmp_path_factory.mktemp("anthropic-vision"))
    s = start_server(model, "--ctx", "1024", "--parallel", "1")  # the mmproj beside it is found
    yield s
    stop_server(s)


def test_an_image_block_is_read_counted_and_counted_first_by_a_model_with_a_projector(seeing: Served) -> None:
    c = anthropic.Anthropic(base_url=seeing.url, api_key="none", max_retries=0, timeout=60)
    data = base64.b64encode(png(64, 48, (220, 10, 10))).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    ask = [{"role": "user", "content": [image, {"type": "text", "text": "what is it"}]}]
    plain = [{"role": "user", "content": "what is it"}]
    seen = c.messages.create(model=seeing.model_id, max_tokens=4, extra_body=GREEDY, messages=ask)  # type: ignore[arg-type]
    counted = c.messages.count_tokens(model=seeing.model_id, messages=ask)  # type: ignore[arg-type]
    without = c.messages.count_tokens(model=seeing.model_id, messages=plain)  # type: ignore[arg-type]
    assert counted.input_tokens == seen.usage.input_tokens + seen.usage.cache_read_input_tokens
    assert counted.input_tokens >= without.input_tokens + VisionShape().n_patches
    assert seen.content[0].type == "text"
