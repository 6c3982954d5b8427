"""The tool loop: the model answers, the tools it calls run, their results go back, and so on.

Qt-free and shared by the terminal and the window's engine worker; it runs on whatever thread
calls it (never the GUI thread: it waits on the model, on the person approving a call, and on
the tool). One turn is a few rounds. Each round streams the model on the conversation so far;
when it ends asking for calls, each call is approved (once, always for that tool, or denied),
run, and its result appended as a `tool` message after an assistant message carrying the
calls. The next round then streams the grown conversation, whose prompt only grows, so the
backend reuses the previous round's KV cache as its prefix.

Every call the model wrote gets a result, run or not (denied, stopped, past the round limit,
a tool the request did not offer), so the conversation stays well-formed for any template or
remote API (OpenAI's refuses an assistant call without its tool message).

A call is for the tool of that name among the request's `tools`; a name the request did not offer
is refused, never run. "Always allow" is kept by the tool's key: with a runner that knows its
tools by more than their names (`KeyedRunner`, such as the MCP client's), the key is looked up once
per call (for MCP: the server's entry in mcp.json and the tool's own name), the call is approved
as that tool and run as that tool, so an approval never passes to another tool that comes to
carry the name; with a plain runner the key is the name.

The loop stops when the model answers without calls, after `max_rounds` rounds of calls (their
next calls are not run; a worded note says so), when the results outgrow the context (a note
too), or when `cancel` is set (the stream ends after its current token; a running tool is told
through the same event).

It measures where a turn's time goes, per round: in the model (stream start to Finished), in
the tools, waiting on the person, and Prefill's own overhead between rounds (from the round's
Finished to the next stream's start, less the tools' and the approvals' time: building the
messages, and whatever the caller does with the events it is handed meanwhile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Hashable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

from prefill.engine.chat_backend import Event
from prefill.engine.errors import ContextOverflow
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest

DEFAULT_MAX_ROUNDS = 8


class Decision(Enum):
    """What the person said to one call."""

    ALLOW_ONCE = "allow_once"
    ALWAYS_ALLOW = "always_allow"  # this call, and every later call of the same tool, for the approvals' owner
    DENY = "deny"


class ToolOutcome(Protocol):
    """What `run_tool` hands back (`prefill.mcp_tools.results.ToolResult` is one)."""

    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...


Streamer = Callable[[ChatRequest, threading.Event | None], Iterator[Event]]
ToolRunner = Callable[[ToolCall, threading.Event | None], ToolOutcome]
Approver = Callable[[ToolCall], Decision]


@runtime_checkable
class KeyedRunner(Protocol):
    """A runner that knows which tool a name stands for (the MCP client's `McpToolRunner` does)."""

    def __call__(self, call: ToolCall, cancel: threading.Event | None) -> ToolOutcome: ...

    def tool_key(self, name: str) -> Hashable | None:
        """Which tool `name` stands for now (None: none); approvals are kept by it."""
        ...

    def run_keyed(self, key: Hashable, call: ToolCall, cancel: threading.Event | None) -> ToolOutcome:
        """Run `call` as the tool `key` names (refused, as a result, if that tool is gone)."""
        ...


class ToolApprovals:
    """The tools the person said to always allow, by key (see `KeyedRunner`; the name for a plain
    runner). Kept by the loop's owner (the terminal's chat, the window's session) across turns, so
    "always" outlives one turn; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._always: set[Hashable] = set()

    def always(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._always

    def allow_always(self, key: Hashable) -> None:
        with self._lock:
            self._always.add(key)

    def forget(self) -> None:
        """Ask again for every tool (a new chat, or the tool list changed)."""
        with self._lock:
            self._always.clear()

    def keys(self) -> frozenset[Hashable]:
        with self._lock:
            return frozenset(self._always)


@dataclass(frozen=True)
class RoundStarted:
    """Round `n` (from 1) streams the model now.

    Attributes:
        n: The round.
        overhead_ms: Prefill's own time since the previous round's Finished, less the tools' and
            the approvals' time; None for the first round.
    """

    n: int
    overhead_ms: float | None = None


@dataclass(frozen=True)
class ToolCallStarted:
    """An approved call of round `round` runs now."""

    call: ToolCall
    round: int


@dataclass(frozen=True)
class ToolCallDone:
    """One call's end, run or not; its `text` went back to the model as a `tool` message.

    Attributes:
        call: The call the model wrote.
        text: The result, or why there is none (an error, a denial, not run), as the model reads it.
        is_error: The tool failed (a stopped tool says so), or the call was denied or not run.
        elapsed_s: Time in the tool (0 when it did not run).
        denied: The person said no.
        stopped: Stop was pressed while it ran (the tool was told; its text says so).
        not_run: It never ran: Stop, the round limit, an answer that did not end for its calls, or a
            tool the request did not offer (or no longer running).
        approval_s: Time waiting on the person (0 for a tool always allowed).
        round: The round whose answer made the call.
    """

    call: ToolCall
    text: str
    is_error: bool
    elapsed_s: float
    denied: bool = False
    stopped: bool = False
    not_run: bool = False
    approval_s: float = 0.0
    round: int = 0


@dataclass(frozen=True)
class RoundTiming:
    """Where one round's time went, in seconds, and how much of its prompt was reused.

    Attributes:
        n: The round.
        model_s: From the stream's start to its Finished.
        tools_s: In the tools its answer called.
        approval_s: Waiting on the person.
        overhead_s: Prefill's own time before this round (see `RoundStarted`); None for the first.
        prompt_tokens, cached_tokens, evaluated_tokens: Its PrefillDone's (0 when none came).
    """

    n: int
    model_s: float
    tools_s: float = 0.0
    approval_s: float = 0.0
    overhead_s: float | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    evaluated_tokens: int = 0


@dataclass(frozen=True)
class LoopFinished:
    """The turn is over.

    Attributes:
        reason: "done" (the model answered without calls: see `finished.reason`), "max_rounds"
            (it still called after `max_rounds` rounds), "context_full" (a later round's prompt,
            grown by the results, no longer fits the context), or "cancelled" (Stop).
        finished: The last round's Finished (its text is the answer the person sees).
        messages: The conversation grown by the turn: the request's messages, then each round's
            assistant message (with its calls) and the calls' `tool` results. An answer stopped
            before its first word adds nothing.
        calls: Every call of the turn, in order.
        timings: One per round.
        note: Why it stopped, in words, when that was not the model's own choice ("" when done).
    """

    reason: str
    finished: Finished
    messages: tuple[Message, ...]
    calls: tuple[ToolCallDone, ...] = ()
    timings: tuple[RoundTiming, ...] = ()
    note: str = ""

    @property
    def rounds(self) -> int:
        return len(self.timings)

    @property
    def tool_rounds(self) -> int:
        """The rounds whose calls were answered (run or denied): what `max_rounds` bounds."""
        return len({c.round for c in self.calls if not c.not_run})

    @property
    def model_s(self) -> float:
        return sum(t.model_s for t in self.timings)

    @property
    def tools_s(self) -> float:
        return sum(t.tools_s for t in self.timings)

    @property
    def overheads_s(self) -> tuple[float, ...]:
        """Prefill's own overhead before each round after the first."""
        return tuple(t.overhead_s for t in self.timings if t.overhead_s is not None)


LoopEvent = Event | RoundStarted | ToolCallStarted | ToolCallDone | LoopFinished


def denied_text(call: ToolCall) -> str:
    return f"The user denied this call: {call.name} was not run."


def not_run_text(why: str) -> str:
    return f"Not run: {why}."


def not_offered_text(call: ToolCall) -> str:
    return f"Not run: '{call.name}' is not one of the tools offered here. Use one of the tools offered."


def rounds_note(max_rounds: int) -> str:
    rounds = "round" if max_rounds == 1 else "rounds"
    return f"stopped after {max_rounds} tool {rounds}: the model asked for more calls, which were not run"


_NOT_RUN = {
    "cancelled": "the user stopped the answer",
    "length": "the answer reached its token limit",
    "context_full": "the context was full",
    "error": "the answer failed",
}


def run_tool_loop(
    stream: Streamer, request: ChatRequest, run_tool: ToolRunner, approve: Approver,
    max_rounds: int = DEFAULT_MAX_ROUNDS, cancel: threading.Event | None = None,
    approvals: ToolApprovals | None = None,
) -> Iterator[LoopEvent]:
    """Answer `request`, running the tools the model calls, until it answers without calls.

    Args:
        stream: What answers a request (`ChatSession.stream`, a backend's `stream`).
        request: The turn: its messages end with the user's; its `tools` are offered every round.
        run_tool: Runs one call; it should hand back an error result rather than raise, and end
            soon once `cancel` is set (the MCP client's `McpToolRunner` does both, and is a `KeyedRunner`).
        approve: Asked once per call not always allowed; blocks until the person says (a window
            answers DENY when Stop is pressed meanwhile).
        max_rounds: Rounds of calls to run; the calls of the round after the last are not run.
        cancel: Stop: the stream ends after its current token, a running tool is told, and calls
            not yet run are not.
        approvals: The tools always allowed, kept by the caller across turns (a new set if None).
            Only the tools in `request.tools` run; a call to any other is refused as its result.

    Yields:
        RoundStarted, then the backend's events as they come (PrefillDone, Token…, ToolCalled,
        MetricsSnapshot…, Finished), then per call (ToolCallStarted when it runs) ToolCallDone;
        the next round; LoopFinished last.

    Raises:
        Whatever the backend raises (TemplateError, RemoteError…; ContextOverflow in the first
        round: in a later one the turn ends with what it has, "context_full").
    """
    approvals = approvals if approvals is not None else ToolApprovals()
    offered = frozenset(t.name for t in request.tools)
    messages = list(request.messages)
    calls: list[ToolCallDone] = []
    timings: list[RoundTiming] = []
    previous: Finished | None = None  # the previous round's end
    ended_at: float | None = None  # and when it came
    held_s = 0.0  # of the time since, spent in tools and on approvals
    n = 0
    while True:
        n += 1
        began = time.perf_counter()
        overhead_s = None if ended_at is None else max(0.0, began - ended_at - held_s)
        yield RoundStarted(n, None if overhead_s is None else overhead_s * 1000)
        began = time.perf_counter()
        prefill: PrefillDone | None = None
        end: Finished | None = None
        events = stream(request.with_messages(messages), cancel)
        try:
            for ev in events:
                if isinstance(ev, PrefillDone):
                    prefill = ev
                elif isinstance(ev, Finished):
                    end = ev
                    ended_at = time.perf_counter()
                yield ev
        except ContextOverflow as e:
            if previous is None:  # the person's own turn does not fit: theirs to shorten, as without tools
                raise
            note = f"stopped after {n - 1} tool {'round' if n == 2 else 'rounds'}: with the tools' results " \
                   f"the conversation no longer fits the context ({e})"
            yield LoopFinished("context_full", previous, tuple(messages), tuple(calls), tuple(timings), note)
            return
        finally:
            close = getattr(events, "close", None)
            if close is not None:  # a consumer that stops early frees the backend now, not at collection
                close()
        if end is None or ended_at is None:
            raise RuntimeError("the backend's stream ended without its Finished event")
        previous = end
        model_s = ended_at - began
        round_calls = end.tool_calls
        if end.reason != "cancelled" or end.text or end.reasoning or round_calls:
            messages.append(Message("assistant", end.text, end.reasoning, tool_calls=round_calls))

        stop = ""  # why the loop ends after this round: "", "cancelled" or "max_rounds"
        why_not = ""  # why this round's calls are not run
        if end.reason == "cancelled" or (cancel is not None and cancel.is_set()):
            stop, why_not = "cancelled", _NOT_RUN["cancelled"]
        elif end.reason != "tool_calls":
            why_not = _NOT_RUN.get(end.reason, f"the answer ended ({end.reason})")
        elif n > max_rounds:
            stop, why_not = "max_rounds", f"Prefill stops after {max_rounds} tool rounds in one turn"
        tools_s = approval_s = 0.0
        for call in round_calls:
            if why_not:
                done = ToolCallDone(call, not_run_text(why_not), True, 0.0, not_run=True, round=n)
            else:
                done = yield from _one_call(call, n, run_tool, approve, approvals, cancel, offered)
                if done.stopped or (done.not_run and cancel is not None and cancel.is_set()):
                    stop, why_not = "cancelled", _NOT_RUN["cancelled"]
            tools_s += done.elapsed_s
            approval_s += done.approval_s
            messages.append(Message("tool", done.text, tool_call_id=call.id, name=call.name))
            calls.append(done)
            yield done
        held_s = tools_s + approval_s
        timings.append(RoundTiming(
            n, model_s, tools_s, approval_s, overhead_s, prefill.prompt_tokens if prefill else 0,
            prefill.cached_tokens if prefill else 0, prefill.evaluated_tokens if prefill else 0))
        if not stop and (end.reason != "tool_calls" or not round_calls):
            stop = "cancelled" if end.reason == "cancelled" else "done"
        if stop:
            note = rounds_note(max_rounds) if stop == "max_rounds" else ""
            yield LoopFinished(stop, end, tuple(messages), tuple(calls), tuple(timings), note)
            return


def _one_call(
    call: ToolCall, n: int, run_tool: ToolRunner, approve: Approver, approvals: ToolApprovals,
    cancel: threading.Event | None, offered: frozenset[str],
) -> Generator[LoopEvent, None, ToolCallDone]:
    """Approve and run one call; yields ToolCallStarted when it runs; returns its ToolCallDone."""
    if call.name not in offered:
        return ToolCallDone(call, not_offered_text(call), True, 0.0, not_run=True, round=n)
    keyed = run_tool if isinstance(run_tool, KeyedRunner) else None
    key = keyed.tool_key(call.name) if keyed is not None else call.name
    if key is None:  # offered, but its server has stopped since
        return ToolCallDone(call, not_run_text(f"'{call.name}' is no longer running"), True, 0.0, not_run=True,
                            round=n)
    approval_s = 0.0
    if approvals.always(key):
        decision = Decision.ALLOW_ONCE
    else:
        asked = time.perf_counter()
        decision = approve(call)
        approval_s = time.perf_counter() - asked
        if decision is Decision.ALWAYS_ALLOW:
            approvals.allow_always(key)
    if cancel is not None and cancel.is_set():  # Stop while the person was asked
        return ToolCallDone(call, not_run_text(_NOT_RUN["cancelled"]), True, 0.0, not_run=True,
                            approval_s=approval_s, round=n)
    if decision is Decision.DENY:
        return ToolCallDone(call, denied_text(call), True, 0.0, denied=True, approval_s=approval_s, round=n)
    yield ToolCallStarted(call, n)
    t0 = time.perf_counter()
    result = keyed.run_keyed(key, call, cancel) if keyed is not None else run_tool(call, cancel)
    elapsed = time.perf_counter() - t0
    stopped = cancel is not None and cancel.is_set()  # the tool was told; what it gave stands
    return ToolCallDone(call, result.text, result.is_error, elapsed, stopped=stopped,
                        approval_s=approval_s, round=n)
