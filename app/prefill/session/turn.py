"""A conversation's typed values (session/conversation.py holds them): what was said, a compaction's
summary, where an answer's words come from, and the turn in flight.

Qt-free. A chat is a list of `Item`s: `Said` (a Message: the user's, with its images; an assistant's,
with its tool calls; a tool's result; and, on an answer, its `sources`) and `Compacted` (the model's
summary of the turns before it). The `Turn` is one answer being made, from its request to its end: the
window's controller and the terminal read "busy", the answer so far and the calls from it alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prefill.engine.events import Finished, Token
from prefill.engine.message import Message
from prefill.engine.prompt.compaction import Summary
from prefill.engine.request import ChatRequest
from prefill.session.tool_loop import LoopEvent, LoopFinished, RoundStarted, ToolCallDone, ToolCallStarted

TurnState = Literal["waiting", "answering", "tools", "done", "cancelled", "failed"]
RUNNING: frozenset[TurnState] = frozenset({"waiting", "answering", "tools"})


@dataclass(frozen=True)
class Source:
    """Where words of an answer come from (a document and the place in it): a citation. Nothing makes
    them yet; an answer's `Said.sources` and a turn's `Turn.sources` are where they go.

    Attributes:
        title: What the person sees (a file's or a page's name).
        location: Where in it (a path, a URL, a page or a line range).
        quote: The passage the answer rests on.
    """

    title: str
    location: str = ""
    quote: str = ""


@dataclass(frozen=True)
class Said:
    """A message of the chat: a user's (with its images), an assistant's (with its tool calls and,
    for an answer, the sources it cites) or a tool's result."""

    message: Message
    sources: tuple[Source, ...] = ()

    @property
    def role(self) -> str:
        return self.message.role


@dataclass(frozen=True)
class Compacted:
    """The model's summary of every turn before it: the model reads it under the system prompt in their
    place (`model_view`); the turns stay in the chat. `summary` holds what the compaction did (None
    for a summary read back without its figures, or written by a person)."""

    text: str
    summary: Summary | None = None

    @property
    def role(self) -> str:
        return "summary"


Item = Said | Compacted


@dataclass
class Turn:
    """One answer in the making: its request, its answer so far, its tool calls, and its state.

    Whoever drives it (`Conversation.run`, or the window's controller from the engine worker's
    signals) hands it each event (`take`) and streamed text (`grow`); "busy" is `running`.

    Attributes:
        request: What the model is asked (the chat as the model reads it, ending with the question).
        question: The user message this turn answers (None: the chat as it stands, as Retry or
            Regenerate ask it).
        text, reasoning: The answer so far (the last round's once it ends).
        calls: The tool calls of the turn that ended, run or not, in order.
        state: waiting (nothing streamed yet), answering, tools (a call is asked or runs), then done,
            cancelled (Stop) or failed (the backend raised: `error`).
        finished: The last round's Finished, once it came.
        end: The loop's end (the messages it kept), once it came.
        sources: What the answer cites (nothing fills it yet).
    """

    request: ChatRequest
    question: Message | None = None
    text: str = ""
    reasoning: str = ""
    calls: list[ToolCallDone] = field(default_factory=list)
    state: TurnState = "waiting"
    finished: Finished | None = None
    end: LoopFinished | None = None
    error: str = ""
    sources: tuple[Source, ...] = ()

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    def grow(self, reasoning: str, text: str) -> None:
        """Streamed thinking and text, appended to the answer so far."""
        if reasoning or text:
            self.reasoning += reasoning
            self.text += text
            if self.state == "waiting":
                self.state = "answering"

    def take(self, ev: LoopEvent) -> None:
        """What one event of the tool loop changes."""
        if isinstance(ev, Token):
            self.grow(ev.text if ev.reasoning else "", "" if ev.reasoning else ev.text)
        elif isinstance(ev, RoundStarted):
            if ev.n > 1:  # the answer of the round before ended in calls: a new one streams
                self.text = self.reasoning = ""
            self.state = "answering"
        elif isinstance(ev, ToolCallStarted):
            self.state = "tools"
        elif isinstance(ev, ToolCallDone):
            self.calls.append(ev)
        elif isinstance(ev, Finished):
            self.finish(ev)
        elif isinstance(ev, LoopFinished):
            self.end = ev
            self.finish(ev.finished)
            self.state = "cancelled" if ev.reason == "cancelled" else "done"

    def finish(self, f: Finished) -> None:
        """The (last) round's end: its answer stands as it ended."""
        self.finished, self.text, self.reasoning = f, f.text, f.reasoning
        self.state = "cancelled" if f.reason == "cancelled" else "tools" if f.tool_calls else "done"

    def fail(self, error: str) -> None:
        self.state, self.error = "failed", error

    def new_messages(self) -> tuple[Message, ...]:
        """What the turn adds to the chat once it ended: each round's answer (with its calls) and the
        calls' results (nothing before its end)."""
        return self.end.messages[len(self.request.messages):] if self.end is not None else ()
