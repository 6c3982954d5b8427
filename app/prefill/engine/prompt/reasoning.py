"""Split a reasoning model's stream into its thinking and its answer, as the text arrives.

Two families of syntax are read:
- a pair of tags around the thinking: `<think>…</think>` (Qwen3, QwQ, DeepSeek-R1 and its
  distills, SmolLM3, GLM, Granite…), `<seed:think>`, `<mm:think>`, `[THINK]…[/THINK]`,
  `<|START_THINKING|>…<|END_THINKING|>`, Gemma 4's `<|channel>thought…<channel|>`;
- gpt-oss's channels: `<|channel|>analysis<|message|>…` is thinking,
  `<|start|>assistant<|channel|>final<|message|>…` the answer; headers are dropped, except a
  call's (`commentary to=functions.NAME`), which goes on with the answer for the tool-call parser.

A tag may arrive split across tokens: text that could be the start of a tag is held back
until it is known not to be, so a tag never reaches either side. A generation prompt that
already opened the thinking (`…<think>\n`) starts the parser inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

THINK_PAIRS = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<mm:think>", "</mm:think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel>thought", "<channel|>"),
)
CHANNEL, MESSAGE, START = "<|channel|>", "<|message|>", "<|start|>"
CHANNEL_MARKERS = (CHANNEL, MESSAGE, START)

REASONING, ANSWER = "reasoning", "answer"
Piece = tuple[str, str]  # (REASONING or ANSWER, text)


@dataclass(frozen=True)
class ReasoningSyntax:
    """The reasoning markers a model uses: tag pairs and/or gpt-oss channels."""

    pairs: tuple[tuple[str, str], ...] = ()
    channels: bool = False

    @property
    def markers(self) -> tuple[str, ...]:
        tags = tuple(t for pair in self.pairs for t in pair)
        return tags + (CHANNEL_MARKERS if self.channels else ())

    def __bool__(self) -> bool:
        return bool(self.pairs) or self.channels


def detect_syntax(template_source: str, is_single_token: Callable[[str], bool]) -> ReasoningSyntax:
    """The syntax a model uses: the pairs its template writes or its vocabulary has as tokens."""
    pairs = tuple(
        (o, c) for o, c in THINK_PAIRS
        if c in template_source or (is_single_token(o) and is_single_token(c))
    )
    channels = all(m in template_source or is_single_token(m) for m in CHANNEL_MARKERS)
    return ReasoningSyntax(pairs, channels)


def opened_in_prompt(syntax: ReasoningSyntax, prompt: str) -> tuple[str, str] | None:
    """The pair whose opening tag the prompt leaves open (the template started the thinking)."""
    for o, c in syntax.pairs:
        i = prompt.rfind(o)
        if i >= 0 and prompt.rfind(c) < i:
            return (o, c)
    return None


def _held_prefix(buf: str, markers: Iterable[str]) -> int:
    """Length of the longest suffix of `buf` that is a proper prefix of some marker."""
    keep = 0
    for m in markers:
        for k in range(min(len(m) - 1, len(buf)), keep, -1):
            if m.startswith(buf[-k:]):
                keep = k
                break
    return keep


class ReasoningParser:
    """Feed decoded text; get (kind, text) pieces with every marker removed."""

    def __init__(self, syntax: ReasoningSyntax, opened: tuple[str, str] | None = None):
        self.syntax = syntax
        self.markers = syntax.markers
        self.close: str | None = opened[1] if opened else None  # inside a tag pair
        self.kind = REASONING if opened else ANSWER
        self.header: str | None = None  # gpt-oss: collecting a channel header until <|message|>
        self.header_open = ""  # the marker that opened it
        self.passed = ""  # a call's header, to go on as answer text
        self.held = ""
        self.started = {REASONING: False, ANSWER: False}  # leading whitespace is dropped

    @property
    def in_reasoning(self) -> bool:
        return self.kind == REASONING

    def feed(self, text: str) -> list[Piece]:
        if not self.syntax:
            return self._emit(ANSWER, text)
        buf = self.held + text
        out: list[Piece] = []
        while buf:
            hit = self._next_marker(buf)
            if hit is None:
                keep = _held_prefix(buf, self.markers)
                body, self.held = buf[: len(buf) - keep], buf[len(buf) - keep :]
                out += self._body(body)
                return out
            i, marker = hit
            out += self._body(buf[:i])
            buf = buf[i + len(marker) :]
            self._on_marker(marker)
            if self.passed:
                out += self._emit(ANSWER, self.passed)
                self.passed = ""
        self.held = ""
        return out

    def flush(self) -> list[Piece]:
        """The end of the stream: held text was not a marker after all."""
        rest, self.held = self.held, ""
        return self._body(rest)

    # --- internals -----------------------------------------------------------------
    def _candidates(self) -> tuple[str, ...]:
        if self.header is not None:
            return (MESSAGE,)
        if self.close is not None:
            return (self.close,) + ((CHANNEL, START) if self.syntax.channels else ())
        opens = tuple(o for o, _ in self.syntax.pairs)
        return opens + ((CHANNEL, START) if self.syntax.channels else ())

    def _next_marker(self, buf: str) -> tuple[int, str] | None:
        best: tuple[int, str] | None = None
        for m in self._candidates():
            i = buf.find(m)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, m)
        return best

    def _on_marker(self, marker: str) -> None:
        if marker == MESSAGE:
            channel = (self.header or "").split(CHANNEL)[-1].strip()  # "assistant<|channel|>analysis"
            if " to=" in f" {self.header}":  # a tool call: its recipient names the function
                self.passed = f"{self.header_open}{self.header}{MESSAGE}"
            self.header = None
            self.kind = REASONING if channel.startswith("analysis") and not self.passed else ANSWER
        elif marker in (CHANNEL, START):
            if self.header is None:
                self.header, self.header_open = "", marker
            else:  # <|start|>assistant<|channel|>…: one header
                self.header += marker
            self.close = None
        elif marker == self.close:
            self.close = None
            self.kind = ANSWER
        else:
            self.close = dict(self.syntax.pairs)[marker]
            self.kind = REASONING

    def _body(self, text: str) -> list[Piece]:
        if not text:
            return []
        if self.header is not None:
            self.header += text
            return []
        return self._emit(self.kind, text)

    def _emit(self, kind: str, text: str) -> list[Piece]:
        if not self.started[kind]:
            text = text.lstrip()
            if not text:
                return []
            self.started[kind] = True
        return [(kind, text)]
