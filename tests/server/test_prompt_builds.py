"""Where a prompt is built (core.build_prompt): a small one on the serving loop, which saves its first
token the trip to a worker thread and back; a large one on a worker thread, so the loop serving the other
streams never waits on it; and none on the loop any more once a model's template made small builds slow
(cost_bounds.PromptBounds.inline). A real server on the tiny model, in this process."""

from __future__ import annotations

import threading

import httpx2 as httpx
import pytest

from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.request import ChatRequest
from prefill.server import cost_bounds
from prefill.server.cost_bounds import INLINE_BUILD_BYTES, PromptBounds
from prefill.server.lifecycle import RunningServer


def _ask(tiny_served: RunningServer, content: str) -> None:
    body = {"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": content}]}
    r = httpx.post(tiny_served.url + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text


def test_a_small_prompt_is_built_on_the_loop_and_a_large_one_on_a_worker_thread(
        tiny_served: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    where: list[str] = []
    real = ModelChat.text_of

    def text_of(self: ModelChat, request: ChatRequest) -> str:
        where.append(threading.current_thread().name)
        return real(self, request)

    monkeypatch.setattr(ModelChat, "text_of", text_of)
    _ask(tiny_served, "count to three")
    _ask(tiny_served, "word " * (INLINE_BUILD_BYTES // 5 + 1))  # past INLINE_BUILD_BYTES
    assert where[0] == "prefill-serve"  # the serving loop's thread (RunningServer.start_thread)
    assert where[1] != "prefill-serve"


def test_small_builds_leave_the_loop_for_good_after_some_in_a_row_were_slow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bounds = PromptBounds(n_ctx_seq=4096, longest_token_bytes=16)
    assert bounds.inline(INLINE_BUILD_BYTES) and not bounds.inline(INLINE_BUILD_BYTES + 1)
    monkeypatch.setattr(cost_bounds, "INLINE_BUILD_S", -1.0)  # every build is slow
    for _ in range(cost_bounds.INLINE_SLOW_BUILDS - 1):
        with bounds.inline_build():
            pass
    assert bounds.inline(10)  # a first slow build, or a few, may be a cold start
    monkeypatch.setattr(cost_bounds, "INLINE_BUILD_S", 60.0)
    with bounds.inline_build():  # a fast one starts the count again
        pass
    monkeypatch.setattr(cost_bounds, "INLINE_BUILD_S", -1.0)
    for _ in range(cost_bounds.INLINE_SLOW_BUILDS - 1):
        with bounds.inline_build():
            pass
    assert bounds.inline(10)
    with bounds.inline_build():
        pass
    assert not bounds.inline(10)
    monkeypatch.setattr(cost_bounds, "INLINE_BUILD_S", 60.0)
    assert not bounds.inline(10)  # no build runs on the loop to show it fast again
