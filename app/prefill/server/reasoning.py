"""A model's reasoning told apart from its answer, for `reasoning_content` (as llama.cpp's
server sends it), by the engine's own parser (`engine.reasoning`)."""

from __future__ import annotations

from typing import Protocol

from prefill.engine.reasoning import ANSWER, ReasoningParser, ReasoningSyntax, opened_in_prompt


class AnswerSplitter(Protocol):
    def feed(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of a streamed piece; either may be empty."""
        ...

    def flush(self) -> tuple[str, str]:
        """Whatever was held back, at the end of the answer."""
        ...


class ContentOnly:
    """Raw completions: the whole text is the answer."""

    def feed(self, text: str) -> tuple[str, str]:
        return "", text

    def flush(self) -> tuple[str, str]:
        return "", ""


class ParsedSplitter:
    """The engine's streaming parser, giving (reasoning, content) per piece."""

    def __init__(self, syntax: ReasoningSyntax, prompt_text: str):
        self.parser = ReasoningParser(syntax, opened_in_prompt(syntax, prompt_text))

    @staticmethod
    def _join(pieces: list[tuple[str, str]]) -> tuple[str, str]:
        return ("".join(t for k, t in pieces if k != ANSWER), "".join(t for k, t in pieces if k == ANSWER))

    def feed(self, text: str) -> tuple[str, str]:
        return self._join(self.parser.feed(text))

    def flush(self) -> tuple[str, str]:
        return self._join(self.parser.flush())


def make_splitter(syntax: ReasoningSyntax | None, prompt_text: str = "") -> AnswerSplitter:
    """The splitter for one request: chat requests to a model with reasoning markers get the parser."""
    return ParsedSplitter(syntax, prompt_text) if syntax else ContentOnly()
