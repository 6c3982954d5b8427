"""Where a model's reasoning is told apart from its answer, for `reasoning_content`.

INTEGRATION POINT: the engine's reasoning parser (the lead's, in progress) plugs in
here. `make_splitter` returns, per request, an object that takes the answer's text
as it streams and returns the part of each piece that is reasoning and the part
that is the answer; llama.cpp's server sends the first as `reasoning_content`.
Until the engine's parser lands, everything is answer (`ContentOnly`).
"""

from __future__ import annotations

from typing import Protocol


class AnswerSplitter(Protocol):
    def feed(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of a streamed piece; either may be empty."""
        ...

    def flush(self) -> tuple[str, str]:
        """Whatever was held back, at the end of the answer."""
        ...


class ContentOnly:
    """No reasoning format known: the whole text is the answer."""

    def feed(self, text: str) -> tuple[str, str]:
        return "", text

    def flush(self) -> tuple[str, str]:
        return "", ""


def make_splitter(chat_template: str | None) -> AnswerSplitter:
    """The splitter for a model with this chat template (INTEGRATION POINT, see the module doc)."""
    return ContentOnly()
