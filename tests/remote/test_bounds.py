"""What a server sends is bounded: an endless body, line or event is refused as it arrives, the
words streamed before it kept, the connection closed, and the client's memory held to its bound."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable, Iterator

import httpx2 as httpx
import pytest

from prefill.engine.events import Token
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.remote.engine import MAX_BODY_BYTES, RemoteEngine
from prefill.remote.errors import ResponseTooLarge, Unauthorized
from prefill.remote.sse import MAX_EVENT_CHARS, MAX_LINE_BYTES, SseTooLarge, sse_data, sse_lines
from prefill.ui.workers.remote_messages import remote_error_text
from tests.remote.fault_server import ENDLESS_BYTES, FaultServer

HI = [Message("user", "Hi")]
HANG_UP_S = 10.0  # the server notices the closed connection at its next write


def _peak_while(work: Callable[[], object]) -> int:
    """The most memory Python held at once (in bytes, above what it held before) while `work` ran."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        work()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _stream_tokens(engine: RemoteEngine, got: list[str]) -> None:
    for ev in engine.stream(ChatRequest.of(HI)):
        if isinstance(ev, Token):
            got.append(ev.text)


def _refused(work: Callable[[], object]) -> ResponseTooLarge:
    try:
        work()
    except ResponseTooLarge as e:
        return e
    raise AssertionError("not refused")


def test_an_endless_model_list_is_refused_at_its_bound(fault_server: FaultServer) -> None:
    fault_server.mode = "endless_body"
    engine = RemoteEngine(fault_server.url)
    errors: list[ResponseTooLarge] = []
    peak = _peak_while(lambda: errors.append(_refused(engine.list_models)))
    e = errors[0]
    said = f"the server at {engine.base} sent an answer of more than 8 MiB; it is not an OpenAI-compatible answer"
    assert e.message == said
    assert e.limit == MAX_BODY_BYTES == 8 * 2**20
    assert peak < 3 * MAX_BODY_BYTES
    assert fault_server.hung_up.wait(HANG_UP_S)  # closed, not drained
    assert fault_server.sent < ENDLESS_BYTES
    assert remote_error_text(e) == (
        f"T{said[1:]}. Check that the URL leads to the endpoint's API, not to some other server."
    )


def test_an_endless_error_body_is_dropped_and_its_status_kept(fault_server: FaultServer) -> None:
    fault_server.mode = "endless_error"
    engine = RemoteEngine(fault_server.url, "fake-a")
    with pytest.raises(Unauthorized) as info:
        engine.list_models()
    assert info.value.message == f"{engine.base} refused the key (HTTP 401)"  # no detail: the body was not read
    assert fault_server.hung_up.wait(HANG_UP_S)
    fault_server.hung_up.clear()
    with pytest.raises(Unauthorized):
        list(engine.stream(ChatRequest.of(HI)))
    assert fault_server.hung_up.wait(HANG_UP_S)


@pytest.mark.parametrize(("mode", "what"), [("endless_line", "a line"), ("endless_event", "an event")])
def test_an_endless_line_or_event_is_refused_and_the_answer_so_far_kept(
    fault_server: FaultServer, mode: str, what: str
) -> None:
    fault_server.mode = mode
    engine = RemoteEngine(fault_server.url, "fake-a")
    got: list[str] = []
    errors: list[ResponseTooLarge] = []
    peak = _peak_while(lambda: errors.append(_refused(lambda: _stream_tokens(engine, got))))
    e = errors[0]
    said = f"the server at {engine.base} sent {what} of more than 1 MiB; it is not an OpenAI-compatible stream"
    assert e.message == said
    assert e.limit == 2**20
    assert got == ["Let me think.", "Hello"]  # streamed before the bad part came, and kept
    assert (e.partial, e.partial_reasoning) == ("Hello", "Let me think.")
    assert peak < 3 * 2**20
    assert fault_server.hung_up.wait(HANG_UP_S)
    assert fault_server.sent < ENDLESS_BYTES
    kept = "The answer so far is kept, marked incomplete; regenerate it to ask again."
    assert remote_error_text(e) == f"T{said[1:]}. {kept}"
    fault_server.mode = "ok"
    assert engine.list_models() == ["fake-a", "fake-b"]  # the engine is still usable


def test_a_body_declared_too_long_is_refused_before_it_is_read() -> None:
    pulled: list[bytes] = []

    class Endless(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for piece in itertools.repeat(b"x" * 1024):
                pulled.append(piece)
                yield piece

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": str(2**40)}, stream=Endless())

    engine = RemoteEngine("http://remote.test", transport=httpx.MockTransport(handler))
    with pytest.raises(ResponseTooLarge, match="more than 8 MiB"):
        engine.list_models()
    assert pulled == []


# --- sse.py's own bounds and line ends ---------------------------------------------------


def test_lines_end_at_lf_crlf_or_a_lone_cr_wherever_the_chunks_split() -> None:
    raw = "data: a\r\ndata: é\rdata: c\n\r\n:ping\r\r\ndata: d".encode()
    want = ["data: a", "data: é", "data: c", "", ":ping", "", "data: d"]
    for cut in range(len(raw) + 1):
        for cut2 in range(cut, len(raw) + 1):
            assert list(sse_lines([raw[:cut], raw[cut:cut2], raw[cut2:]])) == want, (cut, cut2)


def test_a_line_is_yielded_as_soon_as_its_end_arrives() -> None:
    pulled: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for c in (b'data: {"a": 1}\r', b"\n\r", b"\ndata: 2\n", b"\n"):
            pulled.append(c)
            yield c

    lines = sse_lines(chunks())
    assert next(lines) == 'data: {"a": 1}' and len(pulled) == 1  # its CR ended it: no wait for a LF
    assert next(lines) == "" and len(pulled) == 2
    assert next(lines) == "data: 2" and len(pulled) == 3
    assert list(lines) == [""]


def test_an_endless_line_is_refused_without_reading_it_all() -> None:
    chunks = itertools.chain([b"data: 1\n\n"], itertools.repeat(b"x" * 4096))  # never ends
    lines = sse_lines(chunks, max_line=64 * 1024)
    assert next(lines) == "data: 1"
    assert next(lines) == ""
    with pytest.raises(SseTooLarge) as info:
        next(lines)
    assert (info.value.what, info.value.limit) == ("a line", 64 * 1024)
    assert MAX_LINE_BYTES == 2**20


def test_a_line_of_exactly_the_bound_passes() -> None:
    assert list(sse_lines([b"x" * 10 + b"\n"], max_line=10)) == ["x" * 10]
    with pytest.raises(SseTooLarge):
        list(sse_lines([b"x" * 6, b"x" * 5 + b"\n"], max_line=10))


def test_an_event_of_many_data_lines_is_refused_at_its_bound() -> None:
    endless = itertools.chain(["data: 1", ""], itertools.repeat("data: " + "x" * 100))
    events = sse_data(endless, max_data=10_000)
    assert next(events) == "1"
    with pytest.raises(SseTooLarge) as info:
        next(events)
    assert (info.value.what, info.value.limit) == ("an event", 10_000)
    assert list(sse_data(["data: " + "x" * 4, "data: " + "x" * 5, ""], max_data=10)) == ["xxxx\nxxxxx"]
    assert MAX_EVENT_CHARS == 2**20
