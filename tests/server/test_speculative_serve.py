"""`prefill serve --speculative ngram`: llama.cpp's `timings.draft_n` / `draft_n_accepted` in replies
(whole and the last streamed chunk), each slot's acceptance in /slots, and the flag itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.engine.events import MetricsSnapshot
from prefill.server.shapes import timings
from tests.server.conftest import Served, start_server, stop_server

COPY = ("Repeat this text exactly:\n\nThe river town woke slowly that spring. Fishermen mended their nets along "
        "the stone quay while the baker set out loaves still warm from the oven. Children ran between the "
        "market stalls, chasing a dog that had stolen a string of sausages.")
GREEDY = {"temperature": 0, "max_tokens": 80}


@pytest.fixture(scope="module")
def served(smollm2: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--ctx", "1024", "--parallel", "2", "--flash-attn", "--speculative", "ngram")
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
    s = start_server(tiny_model, "--ctx", "256", "--parallel", "1", "--speculative", "ngram")
    try:
        assert s.slots()["speculative"] == "off"
    finally:
        err = stop_server(s)
    assert "--speculative ngram is off" in err and "flash attention" in err


def test_an_unknown_mode_is_a_one_line_error(tiny_model: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", str(tiny_model),
                          "--speculative", "draft.gguf"], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode != 0 and "--speculative" in out.stderr and len(out.stderr.splitlines()) == 1
