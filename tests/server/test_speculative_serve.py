"""`prefill serve --speculative ngram|PATH.gguf`: llama.cpp's `timings.draft_n` / `draft_n_accepted` in
replies (whole and the last streamed chunk), each slot's acceptance in /slots, the flag itself, a
draft model (and the one line that refuses an incompatible one), and answers that speculation must
not change: a stop string, a tools request."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.engine.events import MetricsSnapshot
from prefill.server.openai.shapes import timings
from tests.server.conftest import Served, start_server, stop_server

COPY = ("Repeat this text exactly:\n\nThe river town woke slowly that spring. Fishermen mended their nets along "
        "the stone quay while the baker set out loaves still warm from the oven. Children ran between the "
        "market stalls, chasing a dog that had stolen a string of sausages.")
GREEDY = {"temperature": 0, "max_tokens": 80}


@pytest.fixture(scope="module")
def served(smollm2: Path) -> Iterator[Served]:
    # no --flash-attn: "auto", which llama.cpp's CPU backend turns on, so the slots speculate
    s = start_server(smollm2, "--ctx", "1024", "--parallel", "2", "--speculative", "ngram")
    yield s
    stop_server(s)


def chat(s: Served, **body: object) -> dict[str, object]:
    r = httpx.post(s.base + "/chat/completions", timeout=120, headers={"Authorization": f"Bearer {s.key}"},
                   json={"model": s.model_id, "messages": [{"role": "user", "content": COPY}], **body})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_timings_name_drafts_as_llama_cpp_does_only_when_a_request_drafted() -> None:
    assert "draft_n" not in timings(MetricsSnapshot())
    t = timings(MetricsSnapshot(draft_n=12, draft_n_accepted=9))
    assert (t["draft_n"], t["draft_n_accepted"]) == (12, 9)


def test_a_greedy_reply_carries_its_drafts(served: Served) -> None:
    t = chat(served, **GREEDY)["timings"]
    assert isinstance(t, dict)
    assert t["draft_n"] > 0 and 0 < t["draft_n_accepted"] <= t["draft_n"]


def test_the_last_streamed_chunk_carries_the_drafts(served: Served) -> None:
    stream = served.client().chat.completions.create(
        model=served.model_id, messages=[{"role": "user", "content": COPY}], stream=True, **GREEDY)  # type: ignore[call-overload]
    chunks = list(stream)
    last = chunks[-1].model_extra or {}
    assert last["timings"]["draft_n_accepted"] > 0
    assert all("timings" not in (c.model_extra or {}) for c in chunks[:-1])


def test_a_sampled_reply_has_no_drafts(served: Served) -> None:
    t = chat(served, temperature=0.7, seed=3, max_tokens=16)["timings"]
    assert isinstance(t, dict) and "draft_n" not in t


def test_slots_show_the_mode_and_each_slots_acceptance(served: Served) -> None:
    chat(served, **GREEDY)
    snap = served.slots()
    assert snap["speculative"] == "ngram"
    assert snap["draft_n_accepted"] > 0 and snap["draft_n"] >= snap["draft_n_accepted"]  # type: ignore[operator]
    assert all({"drafted", "accepted"} <= set(slot) for slot in snap["slots"])  # type: ignore[attr-defined]


def test_without_flash_attention_it_says_why_speculation_is_off(tiny_model: Path) -> None:
    s = start_server(tiny_model, "--ctx", "256", "--parallel", "1", "--flash-attn", "off", "--speculative", "ngram")
    try:
        assert s.slots()["speculative"] == "off"
    finally:
        err = stop_server(s)
    assert "--speculative ngram is off" in err and "flash attention" in err


@pytest.mark.parametrize("value", ["draft.gguf", "ngarm"])
def test_an_unknown_mode_or_a_missing_draft_is_a_one_line_error(tiny_model: Path, value: str) -> None:
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", str(tiny_model),
                          "--speculative", value], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode != 0 and "--speculative" in out.stderr and len(out.stderr.splitlines()) == 1


@pytest.fixture(scope="module")
def plain(smollm2: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--ctx", "1024", "--parallel", "2", "--flash-attn")
    yield s
    stop_server(s)


def test_a_draft_model_path_drafts_the_same_text(smollm2: Path, plain: Served) -> None:
    s = start_server(smollm2, "--ctx", "1024", "--parallel", "2", "--flash-attn", "--speculative", str(smollm2))
    try:
        drafted = chat(s, **GREEDY)
        snap = s.slots()
    finally:
        err = stop_server(s)
    t = drafted["timings"]
    assert isinstance(t, dict) and t["draft_n"] > 0 and t["draft_n_accepted"] > 0.9 * t["draft_n"]
    assert content(drafted) == content(chat(plain, **GREEDY))
    assert snap["speculative"] == "draft" and snap["draft_n_accepted"] > 0
    assert f"draft model: {smollm2.name}" in err


def test_an_incompatible_draft_is_refused_in_one_line_and_the_server_runs(smollm2: Path, tmp_path: Path) -> None:
    from tests.engine.vocab_models import vocab_dir, write_scripted

    other = write_scripted(tmp_path / "qwen-draft.gguf", vocab_dir() / "ggml-vocab-qwen2.gguf", [100, 101, 102])
    s = start_server(smollm2, "--ctx", "512", "--parallel", "1", "--flash-attn", "--speculative", str(other))
    try:
        assert s.slots()["speculative"] == "off"
        reply = chat(s, temperature=0, max_tokens=8)
        assert "draft_n" not in reply["timings"]  # type: ignore[operator]
    finally:
        err = stop_server(s)
    refusals = [ln for ln in err.splitlines() if "qwen-draft.gguf" in ln]
    assert len(refusals) == 1 and "is off: qwen-draft.gguf cannot draft for this model" in refusals[0]
    assert "same tokenizer" in refusals[0]


def content(reply: dict[str, object]) -> str:
    choices = reply["choices"]
    assert isinstance(choices, list)
    return str(choices[0]["message"]["content"])


def test_a_stop_string_gives_the_plain_answer(served: Served, plain: Served) -> None:
    words = content(chat(plain, **GREEDY)).split()
    assert len(words) > 8
    body = {**GREEDY, "stop": [words[6]]}
    a, b = chat(plain, **body), chat(served, **body)
    assert content(b) == content(a) and words[6] not in content(b)
    assert b["choices"][0]["finish_reason"] == a["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]
    assert b["timings"]["draft_n_accepted"] > 0  # type: ignore[index]


def test_a_tools_request_gives_the_plain_answer(caller_server: Served, tmp_path: Path) -> None:
    from tests.engine.vocab_models import write_caller
    from tests.server.test_tool_calls_api import ASK, WEATHER

    fast = start_server(write_caller(tmp_path / "caller.gguf"), "--parallel", "1", "--ctx", "512", "--flash-attn",
                        "--speculative", "ngram")
    try:
        replies = [s.client().chat.completions.create(model=s.model_id, messages=ASK, tools=[WEATHER],
                                                      temperature=0) for s in (caller_server, fast)]
    finally:
        stop_server(fast)
    a, b = (r.choices[0] for r in replies)
    assert b.finish_reason == a.finish_reason == "tool_calls"
    assert [c.function.model_dump() for c in b.message.tool_calls] == [
        c.function.model_dump() for c in a.message.tool_calls]
    assert b.message.content == a.message.content
