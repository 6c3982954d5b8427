"""One answer's text as it streams: Token events split into thinking and answer, with the counts
the figures need (thinking tokens, the time of the first answer token).

Made by the chat module (`model_chat.ModelChat.reader`) for every path: the chat engine and the
window's slot take Token events, the HTTP server takes (reasoning, content) pairs. The parser
(`reasoning.ReasoningParser`) finds the markers, this keeps the tally.
"""

from __future__ import annotations

from prefill.engine.events import Token
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt.reasoning import ANSWER, Piece, ReasoningParser


class AnswerSplit:
    """Splits one answer's text; counts into `clock` (`reasoning_tokens`, `t_first_answer`) when given.
    Without a parser the text is the answer, as written."""

    def __init__(self, parser: ReasoningParser | None, clock: RequestClock | None = None):
        self.parser = parser
        self.clock = clock or RequestClock()
        self.answer: list[str] = []
        self.thinking: list[str] = []

    def _parse(self, text: str) -> list[Piece]:
        return self.parser.feed(text) if self.parser is not None else [(ANSWER, text)]

    def token(self, text: str, n: int, now: float) -> list[Token]:
        """The events for the text of the `n`-th sampled token, which arrived at `now`. A token that
        gives no answer text while the parser is (or was) inside the thinking counts as thinking."""
        was_thinking = self.parser is not None and self.parser.in_reasoning
        out = self._events(self._parse(text), n) if text else []
        gave_answer = any(not t.reasoning for t in out)
        if gave_answer and not self.clock.t_first_answer:
            self.clock.t_first_answer = now
        if not gave_answer and (was_thinking or (self.parser is not None and self.parser.in_reasoning)):
            self.clock.reasoning_tokens += 1
        return out

    def end(self, tail: str, n: int) -> list[Token]:
        """The answer is over: `tail` (text held back for a stop string) and what the parser held."""
        out = self._events(self._parse(tail), n) if tail else []
        return out + (self._events(self.parser.flush(), n) if self.parser is not None else [])

    def split(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of streamed text that may hold several tokens (the server's chunks)."""
        return _joined(self._events(self._parse(text), 0) if text else [])

    def finish(self, tail: str = "") -> tuple[str, str]:
        """(reasoning, content) of the end: `tail` and what the parser held back."""
        return _joined(self.end(tail, 0))

    @property
    def answer_text(self) -> str:
        return "".join(self.answer)

    @property
    def thinking_text(self) -> str:
        return "".join(self.thinking).strip()

    def _events(self, pieces: list[Piece], n: int) -> list[Token]:
        out = []
        for kind, text in pieces:
            (self.answer if kind == ANSWER else self.thinking).append(text)
            out.append(Token(text, n, kind != ANSWER))
        return out


def _joined(tokens: list[Token]) -> tuple[str, str]:
    return "".join(t.text for t in tokens if t.reasoning), "".join(t.text for t in tokens if not t.reasoning)
