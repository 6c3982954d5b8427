"""The official `openai` client against `prefill serve` (tiny model, 2 slots, 127.0.0.1)."""

from __future__ import annotations

import json
import socket

from tests.server.conftest import Served

HELLO = [{"role": "user", "content": "Say hello"}]


def test_lists_the_model(server: Served) -> None:
    models = server.client().models.list().data
    assert [m.id for m in models] == [server.model_id]
    assert models[0].owned_by == "prefill"


def test_chat_non_streamed_has_usage_and_timings(server: Served) -> None:
    r = server.client().chat.completions.create(
        model=server.model_id, messages=HELLO, max_tokens=12, temperature=0, extra_body={"ignore_eos": True})
    choice = r.choices[0]
    assert r.object == "chat.completion" and choice.message.role == "assistant"
    assert choice.message.content and choice.finish_reason == "length"
    assert r.usage.completion_tokens == 12 and r.usage.prompt_tokens > 4
    assert r.usage.total_tokens == r.usage.prompt_tokens + 12
    t = r.model_extra["timings"]
    assert t["ttft_ms"] > 0 and t["decode_tps"] > 0 and t["prompt_tokens"] == r.usage.prompt_tokens


def test_chat_streamed_matches_non_streamed_with_usage_last(server: Served) -> None:
    c = server.client()
    args = {"model": server.model_id, "messages": HELLO, "max_tokens": 16, "temperature": 0,
                "extra_body": {"ignore_eos": True}}
    whole = c.chat.completions.create(**args).choices[0].message.content
    chunks = list(c.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == whole
    finals = [ch for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert [f.choices[0].finish_reason for f in finals] == ["length"]
    last = chunks[-1]
    assert last.choices == [] and last.usage.completion_tokens == 16
    assert last.usage.prompt_tokens_details.cached_tokens > 0  # the same prompt just ran
    assert all(ch.usage is None for ch in chunks[:-1])


def test_stream_without_include_usage_has_no_usage(server: Served) -> None:
    chunks = list(server.client().chat.completions.create(
        model=server.model_id, messages=HELLO, max_tokens=4, stream=True))
    assert all(ch.usage is None for ch in chunks)
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_completions_streamed_and_not(server: Served) -> None:
    c = server.client()
    args = {"model": server.model_id, "prompt": "Once upon a time", "max_tokens": 10, "temperature": 0,
                "extra_body": {"ignore_eos": True}}
    r = c.completions.create(**args)
    assert r.object == "text_completion" and r.usage.completion_tokens == 10
    streamed = list(c.completions.create(**args, stream=True, stream_options={"include_usage": True}))
    assert "".join(ch.choices[0].text for ch in streamed if ch.choices) == r.choices[0].text
    assert streamed[-1].usage.completion_tokens == 10


def test_sampling_parameters_are_honoured(server: Served) -> None:
    c = server.client()
    base = {"model": server.model_id, "messages": HELLO, "temperature": 0, "extra_body": {"ignore_eos": True}}
    text = c.chat.completions.create(**base, max_completion_tokens=20).choices[0].message.content
    stop = text[8:11]
    r = c.chat.completions.create(**base, max_tokens=20, stop=[stop])
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.content == text[: text.index(stop)]
    hot = {"model": server.model_id, "messages": HELLO, "max_tokens": 12, "temperature": 1.5, "top_p": 1.0,
               "extra_body": {"ignore_eos": True, "top_k": 0, "min_p": 0.0}}
    a = c.chat.completions.create(**hot, seed=11).choices[0].message.content
    b = c.chat.completions.create(**hot, seed=11).choices[0].message.content
    assert a == b and c.chat.completions.create(**hot, seed=12).choices[0].message.content != a
    # Long enough that greedy repeats itself whatever the kernels (with flash attention on, SmolLM2's
    # first 120 tokens of it no longer held a repeated word)
    plain = c.chat.completions.create(**base, max_tokens=240).choices[0].message.content
    assert len(set(plain.split())) < len(plain.split())
    for penalty in ({"frequency_penalty": 2.0}, {"presence_penalty": 2.0}):
        assert c.chat.completions.create(**base, max_tokens=240, **penalty).choices[0].message.content != plain


def test_a_cancelled_stream_frees_its_slot_at_once(server: Served) -> None:
    c = server.client()
    stream = c.chat.completions.create(model=server.model_id, messages=HELLO, stream=True,
                                       max_tokens=100_000, extra_body={"ignore_eos": True})
    for i, _chunk in enumerate(stream):
        if i == 3:
            break
    # The scheduler publishes its slots every 0.1 s: four tokens may come before it says busy.
    before = server.wait_until(lambda s: s["busy"] == 1)
    assert before["busy"] == 1
    stream.close()  # the client goes away mid-stream
    snap = server.wait_until(lambda s: s["busy"] == 0)
    assert snap["cancelled"] == before["cancelled"] + 1  # stopped, not run to its end
    r = c.chat.completions.create(model=server.model_id, messages=HELLO, max_tokens=3)
    assert r.choices[0].message.content is not None  # and it keeps serving


def test_a_client_gone_before_a_non_streamed_answer_frees_its_slot(server: Served) -> None:
    body = json.dumps({"model": server.model_id, "messages": HELLO, "max_tokens": 100_000,
                       "ignore_eos": True}).encode()
    host, port = server.url.removeprefix("http://").split(":")
    before = server.slots()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.wait_until(lambda s: s["busy"] == 1)
    snap = server.wait_until(lambda s: s["busy"] == 0)
    assert snap["cancelled"] == before["cancelled"] + 1
