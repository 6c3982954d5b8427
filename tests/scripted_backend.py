"""A `ChatBackend` that answers from a script: the fast tier's stand-in for a model.

It streams what the real backends stream (`prefill.engine.chat_backend`): PrefillDone, Token… (the
thinking first, marked `reasoning`), a MetricsSnapshot every `metrics_every` tokens, a ToolCalled per
scripted call, then Finished, and answers each capability of `prefill.session.capabilities` with None;
it counts tokens by a rule a test can do by hand, honours `cancel` after every token, stops at
`sampling.max_tokens` ("length"), and raises or fails where the script says. No Qt, no llama.cpp: a
session, tool-loop or terminal test that uses it runs in milliseconds.

Kept in tests/, not in the app: the app has no use for a model that answers from a script, and one
shipped there would be a backend no real user path exercises.

The token rule: a text is one token per word with the spaces after it (`re.findall(r"\\S+\\s*|\\s+")`);
a request's prompt is, per message, its role and its content's tokens, then "<assistant>"
(`prompt_tokens`). The KV cache holds the previous request's prompt and answer (its thinking dropped, as
templates drop it): `cached_tokens` is how much of the new prompt starts with it, a real cache's prefix.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prefill.engine.chat_backend import Event
from prefill.engine.errors import EngineBusy
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token, ToolCalled
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest

if TYPE_CHECKING:
    from prefill.session.capabilities import Endpoint, KeepsCacheOnDisk, RunsLocally, SeesImages, Speculates

_TOKEN = re.compile(r"\S+\s*|\s+")


def tokens(text: str) -> list[str]:
    """`text` cut as the scripted model counts it: a word with the spaces after it is one token."""
    return _TOKEN.findall(text)


def prompt_tokens(messages: Sequence[Message]) -> list[str]:
    """A prompt as the scripted model reads it: per message, a role marker and the content's tokens,
    then the marker that opens its answer."""
    out: list[str] = []
    for m in messages:
        out.append(f"<{m.role}>")
        out.extend(tokens(m.content))
    return [*out, "<assistant>"]


@dataclass(frozen=True)
class Answer:
    """One scripted answer.

    Attributes:
        text: the answer, streamed a token at a time (see `tokens`).
        thinking: streamed before it, as reasoning tokens.
        tool_calls: called after the text (Finished's reason is then "tool_calls").
        raises: raised by the stream instead of answering (before PrefillDone: ContextOverflow,
            TemplateError…), or after `fail_after` tokens when that is set.
        fail_after: with `raises`, the tokens streamed first; with `error`, where the answer breaks off.
        error: ends the answer with Finished("error", error=…) after `fail_after` tokens.
        reason: the finish reason when it ends on its own ("stop" by default; "tool_calls" with calls).
    """

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    raises: BaseException | None = None
    fail_after: int | None = None
    error: str = ""
    reason: str = ""


def tool_call(name: str, arguments: str = "{}", id: str = "") -> ToolCall:
    """A tool call for a script (ids default to the name)."""
    return ToolCall(id or f"call_{name}", name, arguments)


@dataclass
class ScriptedBackend:
    """Answers each request with the next scripted `Answer` (a plain string is an answer's text).

    Attributes:
        answers: what it answers, in order; past the last it answers `fallback`.
        token_delay_s: time each token takes (0: none), for the tests of what streams meanwhile.
        metrics_every: a MetricsSnapshot after every this many tokens.
        n_ctx: the context it reports in `kv_snapshot`.
        requests: every request it was asked, in order.
        pause_after: when set, the stream stops after this many tokens of each answer, sets `paused`,
            and waits until `resume` or the cancel event is set (a test then acts mid-answer, with no
            timing to guess).
        counts_tokens: False: `count_tokens` says None, as a remote endpoint's does (it writes the
            prompt itself); the stream's figures still count.
    """

    answers: list[Answer | str] = field(default_factory=list)
    fallback: Answer = field(default_factory=lambda: Answer("OK."))
    token_delay_s: float = 0.0
    metrics_every: int = 8
    n_ctx: int = 4096
    pause_after: int | None = None
    counts_tokens: bool = True
    requests: list[ChatRequest] = field(default_factory=list)
    paused: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)
    closed: bool = False
    _cache: list[str] = field(default_factory=list)
    _busy: threading.Lock = field(default_factory=threading.Lock)

    # --- ChatBackend ------------------------------------------------------------------------------
    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """PrefillDone, Token…, MetricsSnapshot…, ToolCalled…, Finished; refused with EngineBusy while
        another stream runs (as every backend's one lock does)."""
        if not self._busy.acquire(blocking=False):
            raise EngineBusy("the engine is still answering another request")
        try:
            yield from self._answer(request, cancel)
        finally:
            self._busy.release()

    def count_tokens(self, request: ChatRequest) -> int | None:
        return len(prompt_tokens(request.messages)) if self.counts_tokens else None

    def kv_snapshot(self) -> MetricsSnapshot:
        return MetricsSnapshot(kv_used=len(self._cache), kv_total=self.n_ctx)

    def close(self) -> None:
        self.closed = True

    @property
    def local(self) -> RunsLocally | None:
        return None

    @property
    def speculates(self) -> Speculates | None:
        return None

    @property
    def sees_images(self) -> SeesImages | None:
        return None

    @property
    def disk_cache(self) -> KeepsCacheOnDisk | None:
        return None

    @property
    def endpoint(self) -> Endpoint | None:
        return None

    # --- the script -------------------------------------------------------------------------------
    def _next(self) -> Answer:
        if not self.answers:
            return self.fallback
        a = self.answers.pop(0)
        return Answer(a) if isinstance(a, str) else a

    def _answer(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        self.requests.append(request)
        answer = self._next()
        if answer.raises is not None and answer.fail_after is None:
            raise answer.raises
        began = time.perf_counter()
        prompt = prompt_tokens(request.messages)
        cached = 0
        while cached < min(len(prompt), len(self._cache)) and prompt[cached] == self._cache[cached]:
            cached += 1
        yield PrefillDone(len(prompt), cached, len(prompt) - cached, 0.0)
        steps = [(t, True) for t in tokens(answer.thinking)] + [(t, False) for t in tokens(answer.text)]
        text: list[str] = []
        thought: list[str] = []
        n = 0
        reason = answer.reason or ("tool_calls" if answer.tool_calls else "stop")
        error = ""
        for piece, reasoning in steps:
            if cancel is not None and cancel.is_set():
                reason = "cancelled"
                break
            if n >= request.sampling.max_tokens:
                reason = "length"
                break
            if answer.fail_after is not None and n >= answer.fail_after:
                if answer.raises is not None:
                    raise answer.raises
                reason, error = "error", answer.error
                break
            if self.token_delay_s:
                time.sleep(self.token_delay_s)
            n += 1
            (thought if reasoning else text).append(piece)
            yield Token(piece, n, reasoning)
            if n % self.metrics_every == 0:
                yield self._metrics(len(prompt), cached, n, len(thought), began)
            if self.pause_after is not None and n == self.pause_after:
                self.paused.set()
                while not self.resume.wait(0.01):
                    if cancel is not None and cancel.is_set():
                        break
        else:
            if steps and n >= request.sampling.max_tokens:  # a model that wrote its last allowed token
                reason = "length"  # never writes the end of its answer
            elif answer.error:
                reason, error = "error", answer.error
        calls = answer.tool_calls if reason == "tool_calls" else ()
        for c in calls:
            yield ToolCalled(c, n)
        self._cache = prompt + text
        metrics = self._metrics(len(prompt), cached, n, len(thought), began, reason)
        yield Finished(reason, "".join(text), metrics, "".join(thought), error, calls)

    def _metrics(self, prompt: int, cached: int, n: int, thought: int, began: float,
                 reason: str = "") -> MetricsSnapshot:
        return MetricsSnapshot(
            prompt_tokens=prompt, cached_tokens=cached, evaluated_tokens=prompt - cached, completion_tokens=n,
            reasoning_tokens=thought, ttft_ms=(time.perf_counter() - began) * 1000, kv_used=prompt + n,
            kv_total=self.n_ctx, finish_reason=reason,
        )
