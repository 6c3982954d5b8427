"""Ollama's API through `prefill serve`, with the official `ollama` client: list, ps, show and version on
SmolLM2, a chat whole and streamed alike, generate (templated, raw, load only), a JSON `format`, errors as
{"error"} with their status, the doors and the key on the second port (--ollama-port); `think` and
`keep_alive: 0` on a folder of scripted reasoning models; a tool round trip and a call cut short on the
scripted caller; a message's images on a tiny vision model."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import ollama
import pytest

from prefill.bench.tiny_vision import VisionShape, write_tiny_vision
from tests.engine.budget_thinkers import FAMILIES, write_budget_thinker
from tests.engine.vision.conftest import png
from tests.engine.vocab_models import write_round_tripper
from tests.server.conftest import Served, start_server, stop_server
from tests.server.test_tool_call_rules import MARKUP

pytestmark = pytest.mark.model

KEY = "sk-ollama-test"
GREEDY = {"temperature": 0}
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


def ollama_url(s: Served) -> str:
    """The second port's address, as `prefill serve --ollama-port` prints it."""
    line = s.out.get(timeout=30)
    assert line.startswith("prefill: Ollama's API at http://"), line
    return line.split(" at ")[1].split()[0]


@pytest.fixture(scope="module")
def smol(smollm2: Path) -> Iterator[tuple[Served, str]]:
    s = start_server(smollm2, "--parallel", "2", "--ctx", "2048", "--api-key", KEY, "--ollama-port", "0")
    yield s, ollama_url(s)
    stop_server(s)


def client(url: str, key: str = KEY) -> ollama.Client:
    return ollama.Client(host=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


def test_list_show_ps_and_version(smol: tuple[Served, str]) -> None:
    s, url = smol
    c = client(url)
    (listed,) = [m for m in c.list().models if m.model == s.model_id]
    assert listed.details is not None and listed.details.format == "gguf" and listed.details.family == "llama"
    assert listed.details.parameter_size == "0.13B" and listed.details.quantization_level  # as `prefill ls` says it
    assert listed.size and listed.size > 10**7 and listed.digest and len(listed.digest) == 64
    shown = c.show(s.model_id + ":latest")  # Ollama's default tag names the model too
    assert shown.capabilities == ["completion", "tools"]  # no reasoning markers, no projector
    assert shown.modelinfo is not None and shown.modelinfo["general.architecture"] == "llama"
    assert shown.modelinfo["general.parameter_count"] > 10**8 and shown.template and "im_start" in shown.template
    (running,) = c.ps().models
    assert running.model == s.model_id and running.size and running.size > 0 and running.size_vram == 0
    assert running.context_length == 2048 and running.expires_at is not None
    assert running.expires_at.year > 2100  # the one model of --model is pinned: it never expires
    r = httpx.get(url + "/api/version", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert r.status_code == 200 and r.json()["version"].count(".") == 2


def test_a_chat_whole_and_streamed_say_the_same_with_measured_figures(smol: tuple[Served, str]) -> None:
    s, url = smol
    c = client(url)
    ask = [{"role": "system", "content": "Answer in one sentence."}, {"role": "user", "content": "Name a colour."}]
    options = {**GREEDY, "num_predict": 24}
    whole = c.chat(model=s.model_id, messages=ask, options=options)
    assert whole.done and whole.done_reason in ("stop", "length") and whole.message.role == "assistant"
    assert whole.message.content and whole.message.thinking is None and not whole.message.tool_calls
    assert whole.eval_count and 0 < whole.eval_count <= 24 and whole.prompt_eval_count and whole.prompt_eval_count > 10
    assert whole.eval_duration and whole.prompt_eval_duration and whole.total_duration
    assert whole.total_duration > whole.eval_duration > 0 and whole.load_duration == 0  # resident: no load
    parts = list(c.chat(model=s.model_id, messages=ask, options=options, stream=True))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    assert "".join(p.message.content or "" for p in parts) == whole.message.content
    assert (parts[-1].done_reason, parts[-1].eval_count) == (whole.done_reason, whole.eval_count)
    r = httpx.post(url + "/api/chat", json={"model": s.model_id, "messages": ask, "options": options}, timeout=60,
                   headers={"Authorization": f"Bearer {KEY}"})  # Ollama streams unless told not to
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert lines[-1]["done"] and "".join(x["message"]["content"] for x in lines) == whole.message.content


def test_generate_templated_raw_and_load_only(smol: tuple[Served, str]) -> None:
    s, url = smol
    c = client(url)
    said = c.generate(model=s.model_id, prompt="Name a colour.", system="Be brief.",
                      options={**GREEDY, "num_predict": 8})
    assert said.done and said.response and said.eval_count and said.eval_count <= 8
    streamed = list(c.generate(model=s.model_id, prompt="Name a colour.", system="Be brief.", stream=True,
                               options={**GREEDY, "num_predict": 8}))
    assert "".join(p.response or "" for p in streamed) == said.response and streamed[-1].done
    raw = c.generate(model=s.model_id, prompt="<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n",
                     raw=True, options={**GREEDY, "num_predict": 8})
    assert raw.response and raw.prompt_eval_count and raw.prompt_eval_count < (said.prompt_eval_count or 0)
    loaded = c.generate(model=s.model_id)
    assert (loaded.done, loaded.done_reason, loaded.response) == (True, "load", "")
    with pytest.raises(ollama.ResponseError) as e:
        c.generate(model=s.model_id, prompt="def f(", suffix="    return 1")
    assert e.value.status_code == 400 and "suffix" in e.value.error


def test_format_holds_the_answer_to_json_and_to_a_schema(smol: tuple[Served, str]) -> None:
    s, url = smol
    c = client(url)
    schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
              "required": ["colour"]}
    ask = [{"role": "user", "content": "Which colour is the sky? Answer in JSON."}]
    held = c.chat(model=s.model_id, messages=ask, format=schema, options={**GREEDY, "num_predict": 64})
    assert json.loads(held.message.content or "")["colour"] in ("red", "green", "blue")
    streamed = "".join(p.message.content or "" for p in c.chat(model=s.model_id, messages=ask, format=schema,
                                                               options={**GREEDY, "num_predict": 64}, stream=True))
    assert streamed == held.message.content
    any_json = c.generate(model=s.model_id, prompt="List two colours as JSON.", format="json",
                          options={**GREEDY, "num_predict": 48})
    if any_json.done_reason == "stop":
        assert isinstance(json.loads(any_json.response or ""), dict)


def test_errors_are_an_error_field_with_their_status(smol: tuple[Served, str]) -> None:
    s, url = smol
    c = client(url)
    with pytest.raises(ollama.ResponseError) as e:
        c.chat(model="llama3.2", messages=ASK)
    assert e.value.status_code == 404 and "llama3.2" in e.value.error and s.model_id in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        c.chat(model=s.model_id, messages=ASK, think=True)
    assert e.value.status_code == 400 and "thinking" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        c.chat(model=s.model_id, messages=[{"role": "user", "content": "What colour?",
                                            "images": [base64.b64encode(png(8, 8, (200, 10, 10))).decode()]}])
    assert e.value.status_code == 400 and "projector" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        c.chat(model=s.model_id, messages=[{"role": "user", "content": "word " * 3000}])
    assert e.value.status_code == 400 and "2048" in e.value.error
    headers = {"Authorization": f"Bearer {KEY}"}
    r = httpx.post(url + "/api/embed", json={"model": s.model_id, "input": "hi"}, headers=headers, timeout=10)
    assert r.status_code == 400 and list(r.json()) == ["error"] and "is a chat model" in r.json()["error"]
    r = httpx.post(url + "/api/pull", json={"model": "llama3.2"}, headers=headers, timeout=10)
    assert r.status_code == 404 and list(r.json()) == ["error"] and "POST /api/pull" in r.json()["error"]
    r = httpx.post(url + "/api/chat", json={"model": s.model_id, "messages": "hi"}, headers=headers, timeout=10)
    assert r.status_code == 400 and r.json() == {"error": "'messages' must be an array."}


def test_the_second_port_is_the_same_server_behind_the_same_doors(smol: tuple[Served, str]) -> None:
    s, url = smol
    assert url != s.url
    for base in (s.url, url):  # each port answers every dialect
        assert client(base).list().models
        assert httpx.get(base + "/v1/models", headers={"Authorization": f"Bearer {KEY}"}, timeout=10).status_code == 200
        with pytest.raises(ollama.ResponseError) as e:
            client(base, "wrong").list()
        assert e.value.status_code == 401 and "Bearer" in e.value.error
        r = httpx.get(base + "/api/tags", timeout=10, headers={"Authorization": f"Bearer {KEY}", "Host": "evil.test"})
        assert r.status_code == 421 and list(r.json()) == ["error"]
        r = httpx.post(base + "/api/chat", content=b"{}", timeout=10,
                       headers={"Authorization": f"Bearer {KEY}", "Content-Type": "text/plain"})
        assert r.status_code == 415 and "JSON" in r.json()["error"]
        r = httpx.post(base + "/api/show", json={"model": s.model_id}, timeout=10,
                       headers={"Authorization": f"Bearer {KEY}", "Origin": "https://evil.test"})
        assert r.status_code == 403 and list(r.json()) == ["error"]
        r = httpx.post(base + "/api/show", json={"model": "x" * 20_000}, headers={"Authorization": f"Bearer {KEY}"},
                       timeout=10)
        assert r.status_code == 413 and list(r.json()) == ["error"]


def test_keep_alive_0_with_no_prompt_unloads_and_the_next_request_waits_for_the_load(smol: tuple[Served, str]) -> None:
    s, url = smol  # last of the module's tests on this server: the model is loaded again by the end
    c = client(url)
    s.wait_until(lambda snap: snap["in_flight"] == 0)  # idle as the scheduler's snapshot sees it (0.1 s late)
    gone = c.generate(model=s.model_id, keep_alive=0)
    assert (gone.done, gone.done_reason) == (True, "unload") and c.ps().models == []
    again = c.chat(model=s.model_id, messages=ASK, options={**GREEDY, "num_predict": 2})
    assert again.load_duration and again.total_duration and again.total_duration > again.load_duration > 0
    assert [m.model for m in c.ps().models] == [s.model_id]


@pytest.fixture(scope="module")
def thinkers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("ollama-folder")
    write_budget_thinker(folder / "qwen.gguf", "qwen")
    (folder / "garbage.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    hf = tmp_path_factory.mktemp("hf")  # an empty Hugging Face cache: only the folder (and the bundled model)
    s = start_server(None, "--models-dir", str(folder), "--parallel", "1", "--ctx", "1024",
                     env={"HF_HUB_CACHE": str(hf), "HF_HOME": str(hf)})
    yield s
    stop_server(s)


def test_think_on_a_reasoning_model_whole_and_streamed(thinkers: Served) -> None:
    c = ollama.Client(host=thinkers.url, timeout=120)
    names = {m.model for m in c.list().models}
    assert "qwen.gguf" in names and "garbage.gguf" not in names  # a file the guard refused is not offered
    assert "thinking" in (c.show("qwen:latest").capabilities or [])  # from its template, before a load
    ask = [{"role": "user", "content": "What is 2+2?"}]
    whole = c.chat(model="qwen", messages=ask, think=True, options={"num_predict": 64})
    assert whole.message.thinking and FAMILIES["qwen"].thinking in whole.message.thinking
    assert (whole.message.content, whole.done_reason) == ("It is 4!", "stop")
    assert whole.load_duration and whole.load_duration > 0  # the first request waited for the model's load
    parts = list(c.chat(model="qwen", messages=ask, think=True, options={"num_predict": 64}, stream=True))
    assert "".join(p.message.thinking or "" for p in parts) == whole.message.thinking
    assert "".join(p.message.content or "" for p in parts) == "It is 4!" and parts[-1].load_duration == 0
    off = c.chat(model="qwen", messages=ask, think=False, options={"num_predict": 64})
    assert off.message.thinking is None and off.message.content  # the template closed the thinking
    said = c.generate(model="qwen", prompt="What is 2+2?", think="low", options={"num_predict": 64})
    assert said.thinking and said.response == "It is 4!"


def test_ps_and_keep_alive_0_on_a_model_of_the_folder(thinkers: Served) -> None:
    c = ollama.Client(host=thinkers.url, timeout=120)
    c.generate(model="qwen", keep_alive="1h30m")  # loads it, kept an hour and a half once idle
    (running,) = c.ps().models
    assert running.model == "qwen.gguf" and running.expires_at is not None
    assert 5300 < running.expires_at.timestamp() - time.time() <= 5400
    c.chat(model="qwen", messages=[{"role": "user", "content": "hi"}], keep_alive=0, options={"num_predict": 4})
    end = time.monotonic() + 30
    while c.ps().models:  # unloaded as soon as its request ended, by the pool's reaper
        assert time.monotonic() < end, c.ps()
        time.sleep(0.05)


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = write_round_tripper(tmp_path_factory.mktemp("ollama-tripper") / "tripper.gguf")
    s = start_server(model, "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)


def _streamed_calls(c: ollama.Client, model: str, messages: list[Any], **kw: Any) -> tuple[str, list[Any], Any]:
    text, calls, last = "", [], None
    for part in c.chat(model=model, messages=messages, tools=[WEATHER], stream=True, **kw):
        text += part.message.content or ""
        calls += part.message.tool_calls or []
        last = part
    return text, calls, last


def test_a_tool_round_trip_whole_and_streamed(caller: Served) -> None:
    c = ollama.Client(host=caller.url, timeout=120)
    first = c.chat(model=caller.model_id, messages=ASK, tools=[WEATHER], options=GREEDY)
    (call,) = first.message.tool_calls or []
    assert (call.function.name, dict(call.function.arguments)) == ("weather", {"city": "Oslo"})
    assert first.done_reason == "stop" and not first.message.content
    text, calls, last = _streamed_calls(c, caller.model_id, ASK, options=GREEDY)
    assert text == "" and [(x.function.name, dict(x.function.arguments)) for x in calls] == [
        ("weather", {"city": "Oslo"})]
    assert last.done and last.done_reason == "stop"
    follow = [*ASK, first.message, {"role": "tool", "tool_name": "weather", "content": "Sunny, 21 °C"}]
    done = c.chat(model=caller.model_id, messages=follow, tools=[WEATHER], options=GREEDY)
    assert (done.message.content, done.message.tool_calls, done.done_reason) == ("It is sunny in Oslo.", None, "stop")
    text, calls, _ = _streamed_calls(c, caller.model_id, follow, options=GREEDY)
    assert (text, calls) == ("It is sunny in Oslo.", [])


def test_a_call_cut_by_num_predict_leaves_no_markup_and_ends_the_same_both_ways(caller: Served) -> None:
    c = ollama.Client(host=caller.url, timeout=120)
    for limit in (2, 5):
        options = {**GREEDY, "num_predict": limit}
        whole = c.chat(model=caller.model_id, messages=ASK, tools=[WEATHER], options=options)
        text, calls, last = _streamed_calls(c, caller.model_id, ASK, options=options)
        content = whole.message.content or ""
        assert not any(m in content for m in MARKUP) and not any(m in text for m in MARKUP), (limit, content, text)
        assert whole.done_reason == last.done_reason == "length" and not whole.message.tool_calls and not calls



@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model, _ = write_tiny_vision(tmp_path_factory.mktemp("ollama-vision"))
    s = start_server(model, "--ctx", "1024", "--parallel", "1")  # the mmproj beside it is found
    yield s
    stop_server(s)


def test_a_messages_images_are_read_and_counted_by_a_model_with_a_projector(seeing: Served) -> None:
    c = ollama.Client(host=seeing.url, timeout=120)
    assert "vision" in (c.show(seeing.model_id).capabilities or [])
    image = base64.b64encode(png(64, 48, (220, 10, 10))).decode()
    seen = c.chat(model=seeing.model_id, messages=[{"role": "user", "content": "what is it", "images": [image]}],
                  options={**GREEDY, "num_predict": 4})
    plain = c.chat(model=seeing.model_id, messages=[{"role": "user", "content": "what is it"}],
                   options={**GREEDY, "num_predict": 4})
    assert (seen.prompt_eval_count or 0) >= (plain.prompt_eval_count or 0) + VisionShape().n_patches
    said = c.generate(model=seeing.model_id, prompt="what is it", images=[image], options={**GREEDY, "num_predict": 4})
    assert said.prompt_eval_count == seen.prompt_eval_count  # the same turn, asked through /api/generate
