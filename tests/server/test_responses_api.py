"""OpenAI's Responses API through `prefill serve`, with the official `openai` SDK on SmolLM2: a response
whole and streamed (the events in order, numbered), a function-call round trip with
`function_call_output`, `previous_response_id`, retrieve and delete, the tool rules whole and streamed,
a json_schema answer, errors in OpenAI's shape (an unknown previous response named, a prompt past the
context with both sizes), the kept responses private and bounded, and reasoning on a scripted
reasoning model."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest

from prefill.store import HistoryStore
from tests.engine.budget_thinkers import FAMILIES, write_budget_thinker
from tests.server.conftest import Served, sse_events, start_server, stop_server

pytestmark = pytest.mark.model

KEY = "sk-local-test"
WEATHER = {"type": "function", "name": "weather", "description": "The weather in a city.", "strict": True,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = "What is the weather in Oslo, Paris, Rome and Berlin?"
MARKUP = ("<tool_call", "tool_call>", '{"name"', '"arguments"')


def _data_home(tmp: Path) -> dict[str, str]:
    """The server's data folder (its history database, where responses are kept): the test's own."""
    return {"XDG_DATA_HOME": str(tmp)}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("responses-data")


@pytest.fixture(scope="module")
def smol(smollm2: Path, data: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--parallel", "2", "--ctx", "2048", "--api-key", KEY, env=_data_home(data))
    yield s
    stop_server(s)


def client(s: Served) -> openai.OpenAI:
    return s.client(KEY)


def test_a_response_whole_and_streamed_say_the_same(smol: Served) -> None:
    c = client(smol)
    ask: dict[str, Any] = {"model": smol.model_id, "instructions": "Answer in one sentence.", "input": "Name a colour.",
                           "temperature": 0, "max_output_tokens": 24}
    whole = c.responses.create(**ask)
    assert whole.object == "response" and whole.id.startswith("resp_") and whole.model == smol.model_id
    assert [i.type for i in whole.output] == ["message"] and whole.output[0].id.startswith("msg_")
    assert whole.output_text.strip() and whole.status in ("completed", "incomplete")
    assert whole.usage is not None and whole.usage.output_tokens > 0 and whole.usage.input_tokens > 10
    assert whole.usage.total_tokens == whole.usage.input_tokens + whole.usage.output_tokens
    texts, names, final = [], [], None
    for ev in c.responses.create(**ask, stream=True):
        names.append(ev.type)
        if ev.type == "response.output_text.delta":
            texts.append(ev.delta)
        if ev.type in ("response.completed", "response.incomplete"):
            final = ev.response
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == f"response.{whole.status}"
    assert "".join(texts) == whole.output_text and final is not None and final.output_text == whole.output_text
    assert final.usage is not None and final.usage.output_tokens == whole.usage.output_tokens
    assert final.usage.input_tokens_details.cached_tokens > 0  # the same prompt again: from the prefix cache
    with c.responses.stream(**ask) as stream:  # the SDK's own reading of the events into a response
        built = stream.get_final_response()
    assert built.output_text == whole.output_text and built.id != whole.id


def test_the_stream_numbers_its_events_and_max_output_tokens_makes_it_incomplete(smol: Served) -> None:
    body = {"model": smol.model_id, "input": ASK, "max_output_tokens": 3, "stream": True, "store": False}
    r = httpx.post(smol.base + "/responses", json=body, timeout=60, headers={"authorization": f"Bearer {KEY}"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert all(d["type"] == name for name, d in events)
    names = [n for n, _ in events]
    assert names[2:4] == ["response.output_item.added", "response.content_part.added"]
    assert names[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete"]
    last = events[-1][1]["response"]
    assert last["incomplete_details"] == {"reason": "max_output_tokens"} and last["usage"]["output_tokens"] == 3
    whole = client(smol).responses.create(model=smol.model_id, input=ASK, max_output_tokens=3, store=False)
    assert whole.status == "incomplete" and whole.incomplete_details.reason == "max_output_tokens"  # type: ignore[union-attr]


def test_a_function_call_round_trip_by_previous_response_id_then_retrieve_and_delete(smol: Served) -> None:
    c = client(smol)
    first = c.responses.create(model=smol.model_id, input=ASK, tools=[WEATHER], tool_choice="required",  # type: ignore[list-item]
                               temperature=0, max_output_tokens=200)
    calls = [i for i in first.output if i.type == "function_call"]
    assert calls
    assert all(i.name == "weather" and "city" in json.loads(i.arguments) and i.id.startswith("fc_")  # type: ignore[union-attr]
               for i in calls)
    outputs = [{"type": "function_call_output", "call_id": i.call_id, "output": "Sunny, 20 C."} for i in calls]  # type: ignore[union-attr]
    second = c.responses.create(model=smol.model_id, previous_response_id=first.id, input=outputs,  # type: ignore[arg-type]
                                tools=[WEATHER], temperature=0, max_output_tokens=30)  # type: ignore[list-item]
    assert second.previous_response_id == first.id and second.status in ("completed", "incomplete")
    assert second.usage is not None and second.usage.input_tokens_details.cached_tokens > 0  # the conversation grew
    # the same turn sent whole, without the kept response, is the same prompt
    again = c.responses.create(model=smol.model_id, tools=[WEATHER], temperature=0, max_output_tokens=30,  # type: ignore[list-item]
                               input=[{"role": "user", "content": ASK}, *[i.model_dump() for i in first.output],  # type: ignore[list-item]
                                      *outputs], store=False)
    assert again.usage is not None and again.usage.input_tokens == second.usage.input_tokens
    got = c.responses.retrieve(first.id)
    assert got.id == first.id and [i.type for i in got.output] == [i.type for i in first.output]
    c.responses.delete(first.id)  # the SDK returns nothing: the body is read below, for the second
    r = httpx.delete(f"{smol.base}/responses/{second.id}", headers={"authorization": f"Bearer {KEY}"}, timeout=10)
    assert r.json() == {"id": second.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError) as e:
        c.responses.retrieve(first.id)
    assert first.id in e.value.body["message"]  # type: ignore[index]
    with pytest.raises(openai.NotFoundError) as e:
        c.responses.create(model=smol.model_id, previous_response_id=first.id, input="And tomorrow?")
    body = e.value.body
    assert body["param"] == "previous_response_id" and first.id in body["message"]  # type: ignore[index]


def test_parallel_tool_calls_false_allows_one_call_whole_and_streamed(smol: Served) -> None:
    c = client(smol)
    ask: dict[str, Any] = {"model": smol.model_id, "input": ASK, "tools": [WEATHER], "tool_choice": "required",
                           "parallel_tool_calls": False, "temperature": 0, "max_output_tokens": 200, "store": False}
    whole = c.responses.create(**ask)
    assert [i.type for i in whole.output] == ["function_call"] and whole.status == "completed"
    done = [ev.item for ev in c.responses.create(**ask, stream=True) if ev.type == "response.output_item.done"]
    assert [i.type for i in done] == ["function_call"]
    assert done[0].arguments == whole.output[0].arguments  # type: ignore[union-attr]
    several = c.responses.create(**{**ask, "parallel_tool_calls": True})
    assert len([i for i in several.output if i.type == "function_call"]) >= 2


def test_a_call_cut_by_max_output_tokens_leaves_no_markup_and_ends_the_same_both_ways(smol: Served) -> None:
    c = client(smol)
    for limit in (12, 30, 45):  # cut inside the first call, after it, inside a later one
        ask: dict[str, Any] = {"model": smol.model_id, "input": ASK, "tools": [WEATHER], "tool_choice": "required",
                               "temperature": 0, "max_output_tokens": limit, "store": False}
        whole = c.responses.create(**ask)
        streamed = [ev for ev in c.responses.create(**ask, stream=True)]
        text = "".join(ev.delta for ev in streamed if ev.type == "response.output_text.delta")
        assert not any(m in whole.output_text for m in MARKUP) and not any(m in text for m in MARKUP), limit
        assert whole.status == streamed[-1].response.status == "incomplete", limit  # type: ignore[union-attr]


def test_a_json_schema_answer(smol: Served) -> None:
    schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
              "required": ["colour"], "additionalProperties": False}
    r = client(smol).responses.create(model=smol.model_id, input="Pick a colour.", temperature=0, store=False,
                                      text={"format": {"type": "json_schema", "name": "pick", "schema": schema,
                                                       "strict": True}})
    assert json.loads(r.output_text)["colour"] in ("red", "green", "blue")
    assert r.text is not None and r.text.format.type == "json_schema"


def test_errors_are_in_openais_shape(smol: Served) -> None:
    c = client(smol)
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=smol.model_id, input=[])
    assert e.value.body["param"] == "input"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=smol.model_id, input="x", tools=[{"type": "web_search"}])  # type: ignore[list-item]
    assert "function" in e.value.body["message"]  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=smol.model_id, input="word " * 3000, store=False)
    said = e.value.body["message"]  # type: ignore[index]
    assert "2048" in said and "prompt is" in said  # both sizes named
    with pytest.raises(openai.NotFoundError):
        c.responses.create(model="gpt-5", input="x")
    r = httpx.post(smol.base + "/responses", content=b"{}", timeout=10,  # the doors stand before it
                   headers={"authorization": f"Bearer {KEY}", "content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    for method in ("GET", "DELETE", "POST"):
        path = "/responses/resp_x" if method != "POST" else "/responses"
        r = httpx.request(method, smol.base + path, json={} if method == "POST" else None, timeout=10,
                          headers={"authorization": "Bearer wrong"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key", method
    r = httpx.get(smol.base + "/responses/resp_x", timeout=10, headers={"authorization": f"Bearer {KEY}",
                                                                        "origin": "https://evil.example"})
    assert r.status_code == 403


def test_kept_responses_live_in_the_history_database_and_are_never_a_chat(smol: Served, data: Path) -> None:
    c = client(smol)
    kept = c.responses.create(model=smol.model_id, input="Say hi.", max_output_tokens=4, metadata={"k": "v"})
    unkept = c.responses.create(model=smol.model_id, input="Say hi.", max_output_tokens=4, store=False)
    assert kept.metadata == {"k": "v"} and unkept.store is False
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(unkept.id)
    path = data / "prefill" / "history.sqlite3"
    with HistoryStore(path) as history:
        assert history.list_conversations() == [] and history.search("hi") == []
    with sqlite3.connect(path) as raw:
        ids = [row[0] for row in raw.execute("SELECT id FROM api_responses")]
    raw.close()
    assert kept.id in ids and unkept.id not in ids
    assert (path.stat().st_mode & 0o077) == 0  # private, as the history is


@pytest.fixture(scope="module")
def bounded(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = start_server(smollm2, "--parallel", "1", "--ctx", "1024", "--max-stored-responses", "2",
                     env=_data_home(tmp_path_factory.mktemp("bounded")))
    yield s
    stop_server(s)


def test_at_most_the_bound_is_kept_the_oldest_going_first(bounded: Served) -> None:
    c = bounded.client()
    ids = [c.responses.create(model=bounded.model_id, input=f"Count to {n}.", max_output_tokens=2).id
           for n in range(3)]
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(ids[0])
    assert [c.responses.retrieve(i).id for i in ids[1:]] == ids[1:]


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = write_budget_thinker(tmp_path_factory.mktemp("budget") / "qwen.gguf", "qwen")
    s = start_server(model.path, "--parallel", "2", "--ctx", "1024",
                     env=_data_home(tmp_path_factory.mktemp("thinker")))
    yield s
    stop_server(s)


def test_reasoning_effort_on_a_reasoning_model_whole_and_streamed(thinker: Served) -> None:
    c = thinker.client()
    ask: dict[str, Any] = {"model": thinker.model_id, "input": "What is 2+2?", "max_output_tokens": 64}
    whole = c.responses.create(**ask, reasoning={"effort": "high"})
    assert [i.type for i in whole.output] == ["reasoning", "message"]
    thought = whole.output[0].content[0].text  # type: ignore[union-attr, index]
    assert FAMILIES["qwen"].thinking.strip() in thought and whole.output_text == "It is 4!"
    assert whole.usage is not None
    assert 0 < whole.usage.output_tokens_details.reasoning_tokens < whole.usage.output_tokens
    kinds, final = set(), None
    for ev in c.responses.create(**ask, reasoning={"effort": "high"}, stream=True):
        kinds.add(ev.type)
        if ev.type == "response.completed":
            final = ev.response
    assert {"response.reasoning_text.delta", "response.output_text.delta"} <= kinds
    assert final is not None and final.output[0].content[0].text == thought  # type: ignore[union-attr, index]
    with c.responses.stream(**ask, reasoning={"effort": "high"}) as stream:
        built = stream.get_final_response()
    assert [i.type for i in built.output] == ["reasoning", "message"] and built.output_text == "It is 4!"
    assert final.usage.output_tokens_details.reasoning_tokens == whole.usage.output_tokens_details.reasoning_tokens  # type: ignore[union-attr]
    off = c.responses.create(**ask, reasoning={"effort": "none"})
    assert [i.type for i in off.output] == ["message"]  # the template closed the thinking: all of it is answer
    assert off.usage is not None and off.usage.output_tokens_details.reasoning_tokens == 0
