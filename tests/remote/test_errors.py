"""Each failure of a remote endpoint is its own typed error; a cut answer is kept."""

from __future__ import annotations

import socket
import threading

import pytest

from prefill.engine.errors import EngineBusy
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.remote.engine import RemoteEngine, api_base
from prefill.remote.errors import (
    BadResponse,
    InvalidEndpoint,
    ModelNotFound,
    RateLimited,
    StreamCut,
    TlsFailure,
    Unauthorized,
    Unreachable,
)
from tests.remote.fault_server import FaultServer

HI = [Message("user", "Hi")]


def test_a_full_stream_gives_the_local_engines_events(fault_server: FaultServer) -> None:
    e = RemoteEngine(fault_server.url, "fake-a", api_key="sk-secret")
    events = list(e.stream(ChatRequest.of(HI, SamplingSettings(temperature=0.0, max_tokens=9, stop=("END",), seed=3))))
    assert isinstance(events[0], PrefillDone)
    tokens = [ev for ev in events if isinstance(ev, Token)]
    assert [(t.text, t.reasoning) for t in tokens] == [("Let me think.", True), ("Hello", False), (", world", False)]
    f = events[-1]
    assert isinstance(f, Finished) and f.reason == "stop"
    assert (f.text, f.reasoning) == ("Hello, world", "Let me think.")
    m = f.metrics
    assert (m.prompt_tokens, m.cached_tokens, m.evaluated_tokens, m.completion_tokens) == (12, 8, 4, 3)
    assert (m.prefill_ms, m.prefill_tps, m.decode_tps) == (2.0, 2000.0, 55.5)  # llama.cpp's timings
    assert m.ttft_ms > 0 and m.reasoning_tokens == 1
    assert not m.kv_known and m.kv_total == 0
    headers, body = fault_server.requests[-1]
    assert headers["Authorization"] == "Bearer sk-secret"
    assert body["model"] == "fake-a" and body["stream"] is True
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"]) == (0.0, 9, ["END"], 3)
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "sk-secret" not in repr(e)


def test_models_are_listed_and_the_first_is_the_default(fault_server: FaultServer) -> None:
    e = RemoteEngine(fault_server.url + "/v1/")
    assert e.list_models() == ["fake-a", "fake-b"]
    assert e.resolve_model() == "fake-a"


def test_a_cut_stream_keeps_the_partial_answer(fault_server: FaultServer) -> None:
    fault_server.mode = "cut"
    got: list[str] = []
    with pytest.raises(StreamCut) as info:
        for ev in RemoteEngine(fault_server.url, "fake-a").stream(ChatRequest.of(HI)):
            if isinstance(ev, Token):
                got.append(ev.text)
    assert got == ["Let me think.", "Hello"]
    assert (info.value.partial, info.value.partial_reasoning) == ("Hello", "Let me think.")


def test_an_error_event_in_the_stream_keeps_the_partial_answer(fault_server: FaultServer) -> None:
    fault_server.mode = "error_event"
    with pytest.raises(BadResponse, match="the model crashed") as info:
        list(RemoteEngine(fault_server.url, "fake-a").stream(ChatRequest.of(HI)))
    assert info.value.partial == "Hello"


@pytest.mark.parametrize(("mode", "error"), [("401", Unauthorized), ("404", ModelNotFound), ("429", RateLimited)])
def test_http_errors_are_typed(fault_server: FaultServer, mode: str, error: type[Exception]) -> None:
    fault_server.mode = mode
    e = RemoteEngine(fault_server.url, "fake-a", api_key="sk-secret")
    with pytest.raises(error, match=f"fake {mode}") as info:
        list(e.stream(ChatRequest.of(HI)))
    assert "sk-secret" not in str(info.value)
    with pytest.raises(error):
        e.list_models()
    if mode == "429":
        assert info.value.retry_after_s == 7  # type: ignore[attr-defined]


def test_cancel_closes_the_stream_at_the_next_chunk(fault_server: FaultServer) -> None:
    fault_server.mode = "hold"
    cancel = threading.Event()
    events = []
    for ev in RemoteEngine(fault_server.url, "fake-a").stream(ChatRequest.of(HI), cancel):
        events.append(ev)
        if isinstance(ev, Token) and ev.text == "Hello":
            cancel.set()
            fault_server.release.set()
    f = events[-1]
    assert isinstance(f, Finished) and f.reason == "cancelled" and f.text == "Hello"
    assert not any(isinstance(ev, Token) and ev.text == ", world" for ev in events)


def test_a_stop_ends_a_stalled_stream_without_waiting_for_its_next_chunk(fault_server: FaultServer) -> None:
    fault_server.mode = "hold"  # the server sends nothing more until `release` (or 30 s)
    cancel = threading.Event()
    events = []
    for ev in RemoteEngine(fault_server.url, "fake-a").stream(ChatRequest.of(HI), cancel):
        events.append(ev)
        if isinstance(ev, Token) and ev.text == "Hello":
            cancel.set()  # and the server stays silent: only closing the socket can end the read
    f = events[-1]
    assert isinstance(f, Finished) and f.reason == "cancelled" and f.text == "Hello"
    assert fault_server.holding.is_set()  # it ended while the server was still silent


def test_a_stop_ends_the_wait_for_the_response_headers(fault_server: FaultServer) -> None:
    """A server still preparing its answer (a long prompt ahead in its queue) has sent no headers:
    the stop shuts the connection instead of waiting for them."""
    fault_server.mode = "silent"
    cancel = threading.Event()
    threading.Thread(target=lambda: fault_server.holding.wait(30) and cancel.set(), daemon=True).start()
    events = list(RemoteEngine(fault_server.url, "fake-a").stream(ChatRequest.of(HI), cancel))
    assert len(events) == 1
    f = events[0]
    assert isinstance(f, Finished) and f.reason == "cancelled" and f.text == ""
    assert fault_server.holding.is_set()  # it ended while the server was still silent
    fault_server.release.set()


def test_the_engine_streams_again_after_a_stop_shut_its_connections(fault_server: FaultServer) -> None:
    engine = RemoteEngine(fault_server.url, "fake-a")
    fault_server.mode = "silent"
    cancel = threading.Event()
    threading.Thread(target=lambda: fault_server.holding.wait(30) and cancel.set(), daemon=True).start()
    assert [type(e) for e in engine.stream(ChatRequest.of(HI), cancel)] == [Finished]
    fault_server.release.set()
    fault_server.mode = "ok"
    assert engine.list_models() == ["fake-a", "fake-b"]  # on a connection opened again
    end = list(engine.stream(ChatRequest.of(HI)))[-1]
    assert isinstance(end, Finished) and end.reason == "stop" and end.text == "Hello, world"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_unreachable() -> None:
    with pytest.raises(Unreachable):
        list(RemoteEngine(f"http://127.0.0.1:{_free_port()}", "m").stream(ChatRequest.of(HI)))


def test_https_to_a_plain_http_port_is_a_tls_failure(fault_server: FaultServer) -> None:
    with pytest.raises(TlsFailure):
        RemoteEngine(fault_server.url.replace("http:", "https:"), "m").list_models()


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:8080", "http://"])
def test_a_url_that_is_not_http_is_refused_at_the_door(url: str) -> None:
    with pytest.raises(InvalidEndpoint):
        RemoteEngine(url)


def test_the_api_root_is_added_only_to_a_bare_server() -> None:
    assert api_base("http://h:8080") == "http://h:8080/v1"
    assert api_base("http://h:8080/v1/") == "http://h:8080/v1"
    assert api_base("https://h/openai/v1") == "https://h/openai/v1"


def test_snapshots_leave_the_kv_unknown() -> None:
    assert not MetricsSnapshot().kv_known and MetricsSnapshot(kv_total=10).kv_known


def test_a_second_stream_while_one_runs_is_refused(fault_server: FaultServer) -> None:
    e = RemoteEngine(fault_server.url, "fake-a")
    first = e.stream(ChatRequest.of(HI))
    next(first)
    with pytest.raises(EngineBusy):
        next(e.stream(ChatRequest.of(HI)))
    first.close()
    assert isinstance(list(e.stream(ChatRequest.of(HI)))[-1], Finished)
