"""The prompt cache through the server, on the real SmolLM2: three conversations taking turns on two
slots each find their prefix again (usage, timings), GET /slots shows the cache, GET /models counts its
bound in the model's memory, and another key's request reads nothing of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefill.engine.settings import LoadSettings
from prefill.server.lifecycle import RunningServer, ServeOptions

LIMIT = 64 << 20
TOPICS = ("the sea", "mountains", "deserts")


@pytest.fixture(scope="module")
def served(smollm2: Path) -> Iterator[RunningServer]:
    options = ServeOptions(smollm2, LoadSettings(n_ctx=2048, n_gpu_layers="none", n_threads=1), port=0,
                           parallel=2, prompt_cache=LIMIT)
    server = RunningServer.open(options)
    server.start_thread()
    yield server
    server.stop()


def chat(server: RunningServer, messages: list[dict[str, str]], key: str = "alice") -> dict[str, Any]:
    body = {"model": server.model_id, "messages": messages, "max_tokens": 12, "temperature": 0}
    r = httpx.post(server.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                   timeout=120)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def system(topic: str) -> dict[str, str]:
    return {"role": "system", "content": f"You know {topic} well. " + "Answer in one short plain sentence, "
            "one fact at a time, and never give the same fact twice. " * 4}


def test_three_conversations_on_two_slots_each_find_their_prefix(served: RunningServer) -> None:
    chats = [[system(t), {"role": "user", "content": f"Tell me about {t}."}] for t in TOPICS]
    last = [0, 0, 0]
    for turn in range(3):
        for i, messages in enumerate(chats):
            reply = chat(served, messages)
            usage, timings = reply["usage"], reply["timings"]
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            assert timings["cached_tokens"] == cached
            if turn:  # the whole of its last prompt came back, from whichever slot or the cache
                assert cached >= last[i], (turn, i, cached, last[i])
            last[i] = usage["prompt_tokens"]
            messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                         {"role": "user", "content": f"And point {turn + 2}?"}]
    slots = httpx.get(served.url + "/slots", timeout=10).json()
    cache = slots["prompt_cache"]
    assert cache["hits"] >= 6 and cache["tokens_saved"] > 0 and cache["limit"] == LIMIT
    assert 0 < cache["bytes"] <= LIMIT and cache["entries"] >= 1
    assert slots["models"][served.model_id]["prompt_cache"] == cache  # one model: its own figures
    assert all("cached" in s for s in slots["slots"])
    memory = next(m for m in httpx.get(served.url + "/models", timeout=10).json()["data"]
                  if m["id"] == served.model_id)["memory"]
    assert memory["prompt_cache"] == LIMIT  # counted whole in the model's memory, so in the pool's budget
    assert memory["total"] == sum(memory[k] for k in ("weights", "kv", "compute", "projector", "prompt_cache"))


def test_another_key_reads_nothing_of_the_cache(served: RunningServer) -> None:
    mine = [system("rivers"), {"role": "user", "content": "Tell me about rivers."}]
    chat(served, mine, key="carol")
    for t in TOPICS:  # other conversations take both slots: hers leaves for the cache
        chat(served, [system(t), {"role": "user", "content": "Anything new?"}], key="carol")
    before = httpx.get(served.url + "/slots", timeout=10).json()["prompt_cache"]["hits"]
    assert chat(served, mine, key="dave")["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert httpx.get(served.url + "/slots", timeout=10).json()["prompt_cache"]["hits"] == before
    again = chat(served, mine, key="carol")
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] >= again["usage"]["prompt_tokens"] - 1
