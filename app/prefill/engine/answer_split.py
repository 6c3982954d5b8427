"""One answer's text as it streams: Token events split into thinking and answer, with the counts
the figures need (thinking tokens, the time of the first answer token).

The chat engine and the window's slot of the server both turn sampled text into events this way;
the parser (`reasoning.ReasoningParser`) finds the markers, this keeps the tally.
"""

from __future__ import annotations

from prefill.engine.events import Token
from prefill.engine.metrics import RequestClock
from prefill.engine.reasoning import ANSWER, Piece, ReasoningParser


class AnswerSplit:
    """Splits one answer's text; counts into `clock` (`reasoning_tokens`, `t_first_answer`)."""

    def __init__(self, parser: ReasoningParser, clock: RequestClock):
        self.parser = parser
        self.clock = clock
        self.answer: list[str] = []
        self.thinking: list[str] = []

    def token(self, text: str, n: int, now: float) -> list[Token]:
        """The events for the text of the `n`-th sampled token, which arrived at `now`. A token that
        gives no answer text while the parser is (or was) inside the thinking counts as thinking."""
        was_thinking = self.parser.in_reasoning
        out = self._events(self.parser.feed(text), n) if text else []
        gave_answer = any(not t.reasoning for t in out)
        if gave_answer and not self.clock.t_first_answer:
            self.clock.t_first_answer = now
        if not gave_answer and (was_thinking or self.parser.in_reasoning):
            self.clock.reasoning_tokens += 1
        return out

    def end(self, tail: str, n: int) -> list[Token]:
        """The answer is over: `tail` (text held back for a stop string) and what the parser held."""
        out = self._events(self.parser.feed(tail), n) if tail else []
        return out + self._events(self.parser.flush(), n)

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
