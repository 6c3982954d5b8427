"""A response format whose pattern llama.cpp would take minutes a token to follow is refused at the door,
before any token, while another client's stream goes on."""

from __future__ import annotations

import json
import threading

import httpx2 as httpx

from tests.server.conftest import Served

ATTACK = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "string",
                                                                         "pattern": "^((a?){20}){20}$"}}}
LIVE_TOKENS = 120


def test_a_costly_pattern_is_refused_in_words_and_the_other_stream_goes_on(server: Served) -> None:
    first, done = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def live() -> None:
        body = {"model": server.model_id, "messages": [{"role": "user", "content": "Tell me about the sea."}],
                "max_tokens": LIVE_TOKENS, "ignore_eos": True, "stream": True,
                "stream_options": {"include_usage": True}}
        with httpx.stream("POST", server.base + "/chat/completions", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    if chunk.get("usage"):
                        seen["tokens"] = chunk["usage"]["completion_tokens"]
                    first.set()
        done.set()

    streamer = threading.Thread(target=live)
    streamer.start()
    assert first.wait(30), "the live stream never began"
    for stream in (True, False):
        body = {"model": server.model_id, "messages": [{"role": "user", "content": "Write a's."}], "stream": stream,
                "response_format": ATTACK, "max_tokens": 50}
        with httpx.stream("POST", server.base + "/chat/completions", json=body, timeout=30) as r:
            text = r.read().decode()
        assert r.status_code == 400, text  # refused whole: not a stream that began, no token
        error = json.loads(text)["error"]
        assert "/^((a?){20}){20}$/" in error["message"] and "many ways" in error["message"]
        assert error["param"] == "response_format"
    streamer.join(60)
    assert done.is_set() and seen.get("tokens") == LIVE_TOKENS  # the other client lost nothing
