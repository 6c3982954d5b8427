"""Remote engines against real servers: llama-cpp-python's own (SmolLM2) and Prefill's (`prefill serve`).

Each is chatted with through RemoteEngine and through `prefill chat --remote … --json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.remote.engine import RemoteEngine
from prefill.remote.errors import ModelNotFound, Unauthorized
from prefill.store.endpoints import EndpointsFile, SavedEndpoint
from tests.remote.servers import ALIAS, LlamaCppServer
from tests.server.conftest import Served

GREEDY = SamplingSettings(temperature=0.0, max_tokens=24)
CAPITAL = [Message("system", "Answer briefly."), Message("user", "What is the capital of France?")]


def _chat(engine: RemoteEngine, messages: list[Message]) -> tuple[list[object], Finished]:
    events = list(engine.stream(ChatRequest.of(messages, GREEDY)))
    assert isinstance(events[0], PrefillDone)
    f = events[-1]
    assert isinstance(f, Finished)
    assert "".join(e.text for e in events if isinstance(e, Token) and not e.reasoning) == f.text
    return events, f


def _cli(url: str, model: str, *args: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(config))
    return subprocess.run(
        [sys.executable, "-m", "prefill", "chat", "--remote", url, "--model", model, "--temperature", "0",
         "--max-tokens", "16", "--system", "Answer briefly.", "--json", *args],
        capture_output=True, text=True, env=env, timeout=120,
    )


def test_llama_cpp_server_streams_a_conversation(llama_cpp: LlamaCppServer) -> None:
    engine = RemoteEngine(llama_cpp.url)
    assert engine.list_models() == [ALIAS]
    _, first = _chat(engine, CAPITAL)
    assert "Paris" in first.text and first.reason in ("stop", "length")
    m = first.metrics
    assert m.ttft_ms > 0 and m.completion_tokens > 1 and m.decode_tps > 0 and not m.kv_known
    # The second turn carries the first answer back, as history and regenerate do.
    _, second = _chat(engine, [*CAPITAL, Message("assistant", first.text), Message("user", "And of Italy?")])
    assert second.text and second.text != first.text
    engine.close()


def test_llama_cpp_server_stops_when_cancelled(llama_cpp: LlamaCppServer) -> None:
    cancel = threading.Event()
    texts = []
    ask = ChatRequest.of(CAPITAL, SamplingSettings(max_tokens=200))
    for ev in RemoteEngine(llama_cpp.url, ALIAS).stream(ask, cancel):
        if isinstance(ev, Token):
            texts.append(ev.text)
            cancel.set()
        last = ev
    assert isinstance(last, Finished) and last.reason == "cancelled" and last.text == texts[0]


def test_prefill_chat_remote_against_llama_cpp_server(llama_cpp: LlamaCppServer, tmp_path: Path) -> None:
    out = _cli(llama_cpp.url, ALIAS, "--prompt", "What is the capital of France?", "--prompt", "Thanks!",
               config=tmp_path)
    assert out.returncode == 0, out.stderr
    turns = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(turns) == 2 and "Paris" in turns[0]["answer"]
    assert turns[0]["chat_format"] == "remote" and turns[0]["kv_total"] is None
    assert turns[0]["ttft_ms"] > 0 and turns[0]["completion_tokens"] > 0


def test_prefill_server_as_the_remote_reports_usage(prefill_server: Served) -> None:
    with pytest.raises(Unauthorized):
        RemoteEngine(prefill_server.url, api_key="wrong").list_models()
    engine = RemoteEngine(prefill_server.url, api_key="sk-test")
    assert engine.list_models() == [prefill_server.model_id]
    _, f = _chat(engine, CAPITAL)
    m = f.metrics
    assert f.text.strip()
    assert m.prompt_tokens > 10 and m.completion_tokens > 1 and m.ttft_ms > 0 and not m.kv_known
    with pytest.raises(ModelNotFound):
        list(RemoteEngine(prefill_server.url, "no-such-model", "sk-test").stream(ChatRequest.of(CAPITAL, GREEDY)))


def test_prefill_chat_remote_takes_the_saved_key(prefill_server: Served, tmp_path: Path) -> None:
    EndpointsFile(tmp_path / "prefill" / "endpoints.json").put(
        SavedEndpoint("mine", prefill_server.url, prefill_server.model_id, "sk-test"))
    out = _cli(prefill_server.url, prefill_server.model_id, "--prompt", "What is the capital of France?",
               config=tmp_path)
    assert out.returncode == 0, out.stderr
    turn = json.loads(out.stdout)
    assert turn["answer"].strip() and turn["prompt_tokens"] > 10 and turn["kv_used"] is None
    denied = _cli(prefill_server.url, prefill_server.model_id, "--api-key", "wrong", "--prompt", "Hi",
                  config=tmp_path)
    assert denied.returncode != 0 and "refused the key" in denied.stderr and "wrong" not in denied.stderr
