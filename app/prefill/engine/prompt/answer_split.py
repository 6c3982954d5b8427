"""One answer's text as it streams: Token events split into thinking and answer, with the counts
the figures need (thinking tokens, the time of the first answer token), and, when the model was
offered tools, the calls it writes in its answer taken out as ToolCalled events.

Made by the chat module (`model_chat.ModelChat.reader`) for every path: the chat engine and the
window's slot take Token events, the HTTP server takes (reasoning, content) pairs. The parser
(`reasoning.ReasoningParser`) finds the markers, this keeps the tally.
"""

from __future__ import annotations

from dataclasses import replace

from prefill.engine.events import Finished, FinishReason, MetricsSnapshot, Token, ToolCalled
from prefill.engine.message import ToolCall
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt.reasoning import ANSWER, Piece, ReasoningParser
from prefill.engine.prompt.tool_calls import MalformedCall, ToolCallParser

Out = Token | ToolCalled
CUT: tuple[FinishReason, ...] = ("length", "context_full", "cancelled")  # an answer that did not end itself


class AnswerSplit:
    """Splits one answer's text; counts into `clock` (`reasoning_tokens`, `t_first_answer`) when given.
    Without a parser the text is the answer, as written."""

    def __init__(self, parser: ReasoningParser | None, clock: RequestClock | None = None,
                 calls: ToolCallParser | None = None, most_calls: int | None = None):
        self.parser = parser
        self.clock = clock or RequestClock()
        self.calls_parser = calls  # the answer's tool calls, when tools were offered
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.malformed: list[MalformedCall] = []
        self._handed = 0  # of `calls`, given out by new_calls()
        self._seen = 0  # the number of the last token given to `token`
        self.most_calls = most_calls  # calls kept (None: all); the rest are dropped (parallel_tool_calls off)

    def _parse(self, text: str) -> list[Piece]:
        return self.parser.feed(text) if self.parser is not None else [(ANSWER, text)]

    def token(self, text: str, n: int, now: float) -> list[Out]:
        """The events for the text up to the `n`-th sampled token, which arrived at `now` (text held
        back for a stop string comes with a later token's). Tokens that give no answer text while the
        parser is (or was) inside the thinking count as thinking."""
        was_thinking = self.parser is not None and self.parser.in_reasoning
        out = self._events(self._parse(text), n) if text else []
        gave_answer = any(isinstance(t, ToolCalled) or not t.reasoning for t in out)
        if gave_answer and not self.clock.t_first_answer:
            self.clock.t_first_answer = now
        tokens, self._seen = max(1, n - self._seen), max(n, self._seen)  # text held for a stop string comes late, whole
        if not gave_answer and (was_thinking or (self.parser is not None and self.parser.in_reasoning)):
            self.clock.reasoning_tokens += tokens
        return out

    def end(self, tail: str, n: int, reason: FinishReason = "stop") -> list[Out]:
        """The answer is over (for `reason`): `tail` (text held back for a stop string) and what the
        parsers held. A call the answer was cut off in (its length, the context, a stop) is dropped:
        none of its markup reaches the text."""
        out = self._events(self._parse(tail), n) if tail else []
        out += self._events(self.parser.flush(), n) if self.parser is not None else []
        if self.calls_parser is not None:
            items = self.calls_parser.finish()
            if reason in CUT:  # the call it was writing, or the start of its marker, goes
                items = [i for i in items if not isinstance(i, MalformedCall)]
                if items and isinstance(items[-1], str):
                    items[-1] = _without_opening(items[-1], self.calls_parser.markers)
            out += self._answer_items(items, n)
        return out

    def finished(self, reason: FinishReason, metrics: MetricsSnapshot) -> Finished:
        """The end event: the answer, the thinking apart, the calls made. An answer that ended by
        itself after making calls ends for them ("tool_calls")."""
        if reason != self.final_reason(reason):
            reason = self.final_reason(reason)
            metrics = replace(metrics, finish_reason=reason) if metrics.finish_reason else metrics
        return Finished(reason, self.answer_text, metrics, self.thinking_text, tool_calls=tuple(self.calls),
                        malformed_calls=tuple(m.reason for m in self.malformed))

    def final_reason(self, reason: FinishReason) -> FinishReason:
        """"tool_calls" for an answer that ended by itself after making calls, else `reason`."""
        return "tool_calls" if self.calls and reason == "stop" else reason

    def new_calls(self) -> list[ToolCall]:
        """The calls made since the last look (the server streams them as they come)."""
        out, self._handed = self.calls[self._handed:], len(self.calls)
        return out

    def split(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of streamed text that may hold several tokens (the server's chunks)."""
        if self.parser is None and self.calls_parser is None:  # all answer: nothing to look for (every token
            if text:  # of a plain stream comes here, on the thread between two decodes)
                self.answer.append(text)
            return "", text
        return _joined(self._events(self._parse(text), 0) if text else [])

    def finish(self, tail: str = "", reason: FinishReason = "stop") -> tuple[str, str]:
        """(reasoning, content) of the end (for `reason`): `tail` and what the parser held back."""
        return _joined(self.end(tail, 0, reason))

    @property
    def answer_text(self) -> str:
        return "".join(self.answer)

    @property
    def thinking_text(self) -> str:
        return "".join(self.thinking).strip()

    def _events(self, pieces: list[Piece], n: int) -> list[Out]:
        out: list[Out] = []
        for kind, text in pieces:
            if kind == ANSWER and self.calls_parser is not None:
                out += self._answer_items(self.calls_parser.feed(text), n)
                continue
            (self.answer if kind == ANSWER else self.thinking).append(text)
            out.append(Token(text, n, kind != ANSWER))
        return out

    def _answer_items(self, items: list[str | ToolCall | MalformedCall], n: int) -> list[Out]:
        out: list[Out] = []
        for item in items:
            if isinstance(item, ToolCall):
                if self.most_calls is None or len(self.calls) < self.most_calls:
                    self.calls.append(item)
                    out.append(ToolCalled(item, n))
                continue
            if isinstance(item, MalformedCall):  # kept as text, and reported
                self.malformed.append(item)
                item = item.text
            if item:
                self.answer.append(item)
                out.append(Token(item, n))
        return out


def _without_opening(text: str, markers: tuple[str, ...]) -> str:
    """`text` without the start of a call's marker it ends in (held back until the answer was cut)."""
    tail = text.rstrip()
    cut = max((k for m in markers for k in range(1, min(len(m), len(tail)) + 1) if m.startswith(tail[-k:])),
              default=0)
    return tail[: len(tail) - cut] if cut else text


def _joined(events: list[Out]) -> tuple[str, str]:
    tokens = [t for t in events if type(t) is Token]
    return "".join(t.text for t in tokens if t.reasoning), "".join(t.text for t in tokens if not t.reasoning)
