"""A chat served by an OpenAI-compatible endpoint, streamed with the local engine's events.

`RemoteEngine.stream()` yields what `ChatEngine.stream()` yields (PrefillDone, Token…,
ToolCalled…, MetricsSnapshot…, Finished), measured from the client: TTFT, decode tok/s and
inter-token latency from the arrival of each streamed chunk (one chunk, of text or of a call, is
counted as one token until the final `usage` says how many there were; then the decode rate
counts usage's tokens).
llama.cpp's server adds `timings`; where present, its prompt/cache counts and its own prefill
and decode speeds replace the client's estimates.
The KV cache of a remote is not visible: snapshots leave `kv_total` at 0, which
`MetricsSnapshot.kv_known` reads as unknown.

A request's tools, tool choice and response format are sent in OpenAI's shape, and the calls
the server streams back are put together by tool_calls.py's `CallAssembler`: a ToolCalled as
each is complete, all of them in `Finished.tool_calls`, with reason "tool_calls".

What a server sends is bounded as it arrives (`MAX_BODY_BYTES` for a whole JSON body, sse.py's
bounds for a line and an event of a stream): past a bound the answer is refused with
`ResponseTooLarge`, what was streamed before it kept, and the connection closed.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2 as httpx

from prefill.engine.chat_backend import Event, one_at_a_time
from prefill.engine.events import (
    FINISH_REASONS,
    Finished,
    FinishReason,
    MetricsSnapshot,
    PrefillDone,
    Token,
    ToolCalled,
)
from prefill.engine.message import ToolCall
from prefill.engine.metrics import RequestClock
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.remote.errors import (
    BadResponse,
    InvalidEndpoint,
    ModelNotFound,
    RateLimited,
    RemoteError,
    ResponseTooLarge,
    StreamCut,
    TlsFailure,
    Unauthorized,
    Unreachable,
    size_text,
)
from prefill.remote.sse import SseTooLarge, sse_data, sse_lines
from prefill.remote.tool_calls import CallAssembler, CallFault, tool_fields
from prefill.wire.openai_chat import encode_message

SNAPSHOT_EVERY_S = 0.25
CONNECT_TIMEOUT_S = 10.0
CANCEL_POLL_S = 0.05
READ_TIMEOUT_S = 300.0  # a long prompt on a slow machine may take minutes before its first token
# A whole JSON body (/models, an error): a list of ten thousand models is about 1 MiB.
MAX_BODY_BYTES = 8 * 2**20


def api_base(url: str) -> str:
    """The API root for a URL a person typed: `http://host:8080` -> `http://host:8080/v1`.

    A URL with a path of its own (`https://host/openai/v1`) is kept as it is.

    Raises:
        InvalidEndpoint: not http(s), or no host.
    """
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidEndpoint(url, "an endpoint is an http:// or https:// URL with a host")
    base = url.rstrip("/")
    return base if parts.path.strip("/") else base + "/v1"


class RemoteEngine:
    """One OpenAI-compatible endpoint and the model it serves. One thread streams at a time.

    Args:
        url: The server (`http://127.0.0.1:8080`) or its API root (`…/v1`).
        model: The model id to ask for ("" = the first that /v1/models lists, on first use).
        api_key: Sent as a bearer token; never logged, never in an error.
    """

    chat_format = "remote"

    def __init__(self, url: str, model: str = "", api_key: str = "", transport: httpx.BaseTransport | None = None):
        self.base = api_base(url)
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        self._client = httpx.Client(headers=headers, timeout=timeout, transport=transport)
        self._busy = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()  # what a stop shuts

    def __repr__(self) -> str:  # no key in logs
        return f"RemoteEngine({self.base!r}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    # --- what it can do (chat_backend.ChatBackend): answer; the rest is the remote server's ----
    @property
    def local(self) -> None:
        return None

    @property
    def speculates(self) -> None:
        return None

    @property
    def sees_images(self) -> None:
        return None

    @property
    def disk_cache(self) -> None:
        return None

    @property
    def endpoint(self) -> RemoteEngine:
        return self

    def count_tokens(self, request: ChatRequest) -> None:
        """Unknown here: the remote writes and tokenises the prompt itself."""
        return None

    def kv_snapshot(self) -> MetricsSnapshot:
        """Unknown here (`kv_total` 0): a remote's cache is not visible to its clients."""
        return MetricsSnapshot()

    # --- models ---------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """The ids /v1/models lists, in its order.

        Raises:
            RemoteError: one of its kinds (unreachable, TLS, 401, 404, 429, a body not OpenAI's shape).
        """
        with self._open("GET", "/models") as resp:
            body = self._json(resp.read())
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise BadResponse(self.base, "the /models answer has no `data` list", resp.status_code)
        return [str(m["id"]) for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def resolve_model(self) -> str:
        """The model to ask for: the one given, or the first the endpoint lists."""
        if not self.model:
            models = self.list_models()
            if not models:
                raise ModelNotFound(self.base, "the endpoint lists no models")
            self.model = models[0]
        return self.model

    # --- chat -----------------------------------------------------------------------
    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Send the conversation and stream the answer, as `ChatEngine.stream` does.

        The request's overflow policy and template options are the local engine's: a remote fits
        and renders the prompt itself, so they are not sent. Cancelling shuts the connection at once, whether
        the answer is streaming, stalled, or not begun (the server still preparing its headers).

        Raises:
            RemoteError: a kind per failure; a StreamCut (or an error event) keeps the partial answer.
            EngineBusy: another request is running.
        """
        return one_at_a_time(self._busy, self._stream(request, cancel))

    def _stream(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        reader = _Reader(self.base, RequestClock(), cancel)
        # From the first byte sent: a stop also ends the wait for the model list or the headers.
        with _closed_on(cancel, self._shut_sockets):
            try:
                resp = self._open("POST", "/chat/completions", self._chat_body(request))
            except RemoteError:
                if cancel is not None and cancel.is_set():  # the stop shut the socket: not a failure
                    yield reader._finished("cancelled")
                    return
                raise
            with resp:
                yield from reader.read(resp)

    def _chat_body(self, request: ChatRequest) -> dict[str, Any]:
        messages, sampling = request.messages, request.sampling
        return {
            "model": self.resolve_model(),
            "messages": [encode_message(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **sampling_fields(sampling),
            **tool_fields(request),
        }

    # --- HTTP -----------------------------------------------------------------------
    def _open(self, method: str, path: str, body: dict[str, Any] | None = None) -> _Response:
        try:
            req = self._client.build_request(method, self.base + path, json=body,
                                             extensions={"trace": self._trace})
            resp = self._client.send(req, stream=True)
        except httpx.HTTPError as e:
            raise transport_error(self.base, e) from e
        if resp.status_code >= 400:
            try:
                text = _read_body(self.base, resp, MAX_BODY_BYTES).decode("utf-8", "replace")
            except RemoteError:  # cut, or past the bound: the status still says what went wrong
                text = ""
            finally:
                resp.close()
            raise status_error(self.base, resp.status_code, text, resp.headers.get("retry-after", ""))
        return _Response(self.base, resp)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep each socket this client opens, so a stop can shut it."""
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                self._sockets.add(sock)

    def _shut_sockets(self) -> None:
        """From another thread: wake a send or read blocked on this client's sockets (closing a
        response alone would wait for it). One stream runs at a time, so the others are idle pooled
        connections, which the pool then drops as closed."""
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            raise BadResponse(self.base, "the endpoint answered with something that is not JSON") from None


@contextlib.contextmanager
def _closed_on(cancel: threading.Event | None, shut: Callable[[], None]) -> Iterator[None]:
    """Call `shut` as soon as `cancel` is set, from a watcher thread: a server that stalls (a long
    prompt, a stuck server) sends no chunk, nor even its headers, at which the reader could notice
    the stop."""
    if cancel is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(CANCEL_POLL_S):
            if cancel.is_set():
                shut()
                return

    watcher = threading.Thread(target=watch, name="prefill-remote-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


class _Response:
    """An open streamed response; closed on leaving the `with`, whatever happened."""

    def __init__(self, base: str, resp: httpx.Response):
        self.base = base
        self.resp = resp
        self.status_code = resp.status_code

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.resp.close()

    def read(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The whole body, read as it arrives and refused once past `limit` bytes."""
        return _read_body(self.base, self.resp, limit)

    @property
    def is_json(self) -> bool:
        """A whole JSON body (a server that ignored `stream`), not an event stream."""
        kind = self.resp.headers.get("content-type", "")
        return kind.split(";")[0].strip().lower() == "application/json"

    def lines(self) -> Iterator[str]:
        """The stream's lines, each as soon as its end arrives; raises SseTooLarge past sse.py's bound
        (httpx's `iter_lines` would buffer an endless line whole)."""
        return sse_lines(self.resp.iter_bytes())


def _read_body(base: str, resp: httpx.Response, limit: int) -> bytes:
    """A response's whole body, refused (ResponseTooLarge) before more than `limit` bytes are held."""
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise _too_large(base, "an answer", limit, resp.status_code)
    body = bytearray()
    try:
        for chunk in resp.iter_bytes():  # decoded in pieces of at most 1 MiB, so a gzip bomb is bounded too
            if len(body) + len(chunk) > limit:
                raise _too_large(base, "an answer", limit, resp.status_code)
            body += chunk
    except httpx.HTTPError as e:
        raise transport_error(base, e) from e
    return bytes(body)


def _too_large(base: str, what: str, limit: int, status: int = 0, partial: str = "",
               reasoning: str = "") -> ResponseTooLarge:
    """The refusal of `what` ("an answer", "a line", "an event") past `limit` bytes, in words."""
    whole = "answer" if what == "an answer" else "stream"
    message = (f"the server at {base} sent {what} of more than {size_text(limit)}; "
               f"it is not an OpenAI-compatible {whole}")
    return ResponseTooLarge(base, message, limit, status, partial, reasoning)


def sampling_fields(s: SamplingSettings) -> dict[str, Any]:
    """The request's sampling fields: OpenAI's, plus llama.cpp's top_k, min_p and repeat_penalty
    (which llama.cpp's, llama-cpp-python's and Prefill's servers read)."""
    out: dict[str, Any] = {
        "temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens,
        "top_k": s.top_k, "min_p": s.min_p, "repeat_penalty": s.repeat_penalty,
    }
    if s.stop:
        out["stop"] = list(s.stop)
    if s.seed >= 0:
        out["seed"] = s.seed
    return out


def transport_error(base: str, e: httpx.HTTPError, partial: str = "", reasoning: str = "") -> RemoteError:
    """A typed error for a failure below HTTP (`partial` set: the stream broke after it)."""
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return TlsFailure(base, f"the TLS handshake with {base} failed: {cause.reason or cause}")
        cause = cause.__cause__ or cause.__context__
    if partial or reasoning or isinstance(e, (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout)):
        return StreamCut(base, f"the stream from {base} broke off: {e}", partial, reasoning)
    if "SSL" in str(e) or "TLS" in str(e):  # some TLS faults arrive without the SSLError attached
        return TlsFailure(base, f"the TLS handshake with {base} failed: {e}")
    return Unreachable(base, f"cannot reach {base}: {e}")


def status_error(base: str, status: int, text: str, retry_after: str = "") -> RemoteError:
    """A typed error for an HTTP error status, with the server's own message when it gave one."""
    said = _error_message(text)
    detail = f": {said}" if said else ""
    if status in (401, 403):
        return Unauthorized(base, f"{base} refused the key (HTTP {status}){detail}")
    if status == 404:
        return ModelNotFound(base, f"{base} does not serve this model or path (HTTP 404){detail}")
    if status == 429:
        try:
            wait = max(0.0, float(retry_after))
        except ValueError:
            wait = 0.0
        return RateLimited(base, f"{base} is rate-limiting requests (HTTP 429){detail}", wait)
    return BadResponse(base, f"{base} answered HTTP {status}{detail}", status)


def _error_message(text: str) -> str:
    """The `error.message` (or `detail`) of an error body, else its first 200 characters."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:200]
    if isinstance(body, dict):
        err = body.get("error", body.get("detail"))
        if isinstance(err, dict):
            err = err.get("message")
        if isinstance(err, str):
            return err[:500]
    return text.strip()[:200]


class _Reader:
    """Turns the chunks of one streamed answer into events, timing each on arrival."""

    def __init__(self, base: str, clock: RequestClock, cancel: threading.Event | None):
        self.base = base
        self.clock = clock
        self.cancel = cancel
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.calls = CallAssembler()
        self.reason = ""
        self.usage: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}
        self.started = False

    def read(self, resp: _Response) -> Iterator[Event]:
        if resp.is_json:
            yield from self._read_whole(resp)
            return
        yield from self._read_stream(resp.lines())

    def _read_stream(self, lines: Iterable[str]) -> Iterator[Event]:
        next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
        done = False
        try:
            for data in sse_data(lines):
                if self.cancel is not None and self.cancel.is_set():
                    yield self._finished("cancelled")
                    return
                if data.strip() == "[DONE]":
                    done = True
                    break
                yield from self._chunk(data)
                if self.started and time.perf_counter() >= next_snapshot:
                    next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
                    yield self._snapshot("", live=True)
        except SseTooLarge as e:  # the caller's `with` closes the connection, unread
            raise _too_large(self.base, e.what, e.limit, 0, "".join(self.answer), "".join(self.thinking)) from None
        except CallFault as e:
            raise self._call_fault(e) from None
        except (httpx.HTTPError, httpx.StreamError, OSError) as e:
            if self.cancel is not None and self.cancel.is_set():  # closed by the stop: not a failure
                yield self._finished("cancelled")
                return
            if not isinstance(e, httpx.HTTPError):
                raise
            raise transport_error(self.base, e, "".join(self.answer), "".join(self.thinking)) from e
        if self.cancel is not None and self.cancel.is_set():
            yield self._finished("cancelled")
            return
        if not done and not self.reason:
            raise StreamCut(
                self.base, f"the stream from {self.base} ended before the answer was finished",
                "".join(self.answer), "".join(self.thinking),
            )
        yield from self._end()

    def _read_whole(self, resp: _Response) -> Iterator[Event]:
        """A server that answered with one JSON body, its `stream` ignored: the message is read as
        one chunk's delta (its calls, which carry no index, in their order)."""
        try:
            raw = resp.read()
        except RemoteError:
            if self.cancel is not None and self.cancel.is_set():
                yield self._finished("cancelled")
                return
            raise
        if raw.lstrip().startswith((b"data:", b":")):  # an event stream labelled as JSON, read whole
            yield from self._read_stream(sse_lines([raw]))
            return
        try:
            obj = json.loads(raw)
        except ValueError:
            raise self._bad("the answer is not JSON") from None
        choices = obj.get("choices") if isinstance(obj, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(choice, dict) and isinstance(message, dict):
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                calls = [{"index": i, **c} if isinstance(c, dict) else c for i, c in enumerate(calls)]
                message = {**message, "tool_calls": calls}
            obj = {**obj, "choices": [{**choice, "delta": message}]}
        try:
            yield from self._object(obj)
        except CallFault as e:
            raise self._call_fault(e) from None
        yield from self._end()

    def _end(self) -> Iterator[Event]:
        """The answer is over: the calls still open, then Finished."""
        if not self.started:
            yield self._prefill_done()
        yield from self._called(self.calls.finish())
        yield self._finished(self._final_reason())

    def _final_reason(self) -> FinishReason:
        """The server's reason; "tool_calls" for an answer that ended by itself with calls (Ollama
        says "stop"), and "stop" for one that says "tool_calls" but made none that could be read.
        A reason Prefill has no word for (a server's "content_filter") reads as "stop"."""
        reason = self.reason or "stop"
        if reason in ("stop", "tool_calls", "function_call"):
            return "tool_calls" if self.calls.calls else "stop"
        return next((r for r in FINISH_REASONS if r == reason), "stop")

    def _chunk(self, data: str) -> Iterator[Event]:
        try:
            obj = json.loads(data)
        except ValueError:
            raise self._bad("a streamed chunk is not JSON") from None
        yield from self._object(obj)

    def _object(self, obj: Any) -> Iterator[Event]:
        if not isinstance(obj, dict):
            raise self._bad("a streamed chunk is not an object")
        if "error" in obj:
            raise self._bad(_error_message(json.dumps(obj)) or "the endpoint sent an error")
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            self.timings = obj["timings"]
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        if not self.started:
            self.started = True
            yield self._prefill_done()
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for key, thinking in (("reasoning_content", True), ("content", False)):
                text = delta.get(key)
                if isinstance(text, str) and text:
                    yield self._token(text, thinking)
            fragments = delta.get("tool_calls")
            if isinstance(fragments, list) and fragments:
                self._arrived(thinking=False)  # a chunk of a call is a token of the answer, as text is
                yield from self._called(self.calls.feed(fragments))
        if isinstance(choice.get("finish_reason"), str):
            self.reason = choice["finish_reason"]
            if self.reason:
                yield from self._called(self.calls.finish())

    def _called(self, calls: list[ToolCall]) -> Iterator[ToolCalled]:
        for call in calls:
            yield ToolCalled(call, len(self.clock.token_times))

    def _call_fault(self, e: CallFault) -> BadResponse:
        """A refused call in words; the answer and thinking before it kept."""
        message = f"the server at {self.base} sent {e}"
        if e.limit:
            return ResponseTooLarge(self.base, f"{message}; the answer was stopped there", e.limit, 0,
                                    "".join(self.answer), "".join(self.thinking))
        return self._bad(message)

    def _arrived(self, thinking: bool) -> None:
        now = time.perf_counter()
        clock = self.clock
        clock.token_times.append(now)
        if thinking:
            clock.reasoning_tokens += 1
        elif not clock.t_first_answer:
            clock.t_first_answer = now

    def _token(self, text: str, thinking: bool) -> Token:
        self._arrived(thinking)
        (self.thinking if thinking else self.answer).append(text)
        return Token(text, len(self.clock.token_times), thinking)

    def _prefill_done(self) -> PrefillDone:
        # The remote's prompt pass ends, as far as a client can tell, when its first chunk arrives.
        self.clock.t_prefill_end = time.perf_counter()
        ms = (self.clock.t_prefill_end - self.clock.t_request) * 1000
        self.clock.base = MetricsSnapshot(prefill_ms=ms)
        return PrefillDone(0, 0, 0, ms)

    def _snapshot(self, reason: FinishReason | Literal[""], live: bool = False) -> MetricsSnapshot:
        snap = self.clock.snapshot(0, 0, 0, reason, live)  # kv_total 0: unknown
        u, t = self.usage, self.timings
        prompt = _int(u.get("prompt_tokens"))
        details = u.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        if "prompt_n" in t:  # llama.cpp's server: prompt_n is what it evaluated, cache_n what it reused
            cached = _int(t.get("cache_n"))
            prompt = prompt or _int(t.get("prompt_n")) + cached
        evaluated = _int(t["prompt_n"]) if "prompt_n" in t else max(0, prompt - cached)
        prefill_ms = _float(t.get("prompt_ms")) or snap.prefill_ms
        prefill_tps = _float(t.get("prompt_per_second")) or (evaluated / prefill_ms * 1000 if prefill_ms else 0.0)
        completion = _int(u.get("completion_tokens")) or snap.completion_tokens
        decode_tps = snap.decode_tps
        times = self.clock.token_times
        if completion > len(times) > 1 and times[-1] > times[0]:
            # A server that sends several tokens per chunk: rate the tokens usage counts, not the chunks.
            decode_tps = (completion - 1) / (times[-1] - times[0])
        out = replace(
            snap, prompt_tokens=prompt, cached_tokens=cached, evaluated_tokens=evaluated,
            completion_tokens=completion, prefill_ms=prefill_ms, prefill_tps=prefill_tps,
            decode_tps=_float(t.get("predicted_per_second")) or decode_tps,
        )
        cdetails = u.get("completion_tokens_details")
        if isinstance(cdetails, dict) and "reasoning_tokens" in cdetails:
            out = replace(out, reasoning_tokens=_int(cdetails["reasoning_tokens"]))
        return out

    def _finished(self, reason: FinishReason) -> Finished:
        return Finished(reason, "".join(self.answer), self._snapshot(reason), "".join(self.thinking),
                        tool_calls=tuple(self.calls.calls), malformed_calls=tuple(self.calls.malformed))

    def _bad(self, message: str) -> BadResponse:
        return BadResponse(self.base, message, 0, "".join(self.answer), "".join(self.thinking))


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _float(v: object) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else 0.0
