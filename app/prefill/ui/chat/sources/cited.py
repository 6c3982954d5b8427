"""An answer's sources as the window shows them and the history keeps them.

An answer's sources (`Turn.sources`, from the documents attached to its chat) are kept with its
message, in its figures under "sources" (as its tool calls are under "tool_calls"), so the history,
its JSON export and its import carry them with no change of format; an export made before sources
has none and imports as it did. Each is kept as {"n", "title", "file", "page", "location", "score",
"text"}; a passage longer than STORED_TEXT_CHARS keeps the part around what the answer relied on
("offset": the characters left out before it, "length": the whole passage's).

What a history file holds is checked when it is read back (`stored_sources`), as a reopened answer's
tool calls are: an entry that is not a source is skipped, text is text, a number a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from prefill.session.documents import DocumentSource
from prefill.session.turn import Source
from prefill.ui.chat.sources.relied_on import relied_on

SOURCES_KEY = "sources"  # the key of an answer's figures that holds them
STORED_TEXT_CHARS = 20_000  # of one passage (a document read whole can be long)
MAX_SOURCES = 200  # read back from one answer
_LINE_CHARS = 4_096  # a title, a path, a location
MAX_NUMBER = 999  # a mark has at most three digits


@dataclass(frozen=True)
class CitedSource(DocumentSource):
    """A source as an answer's row shows it (`DocumentSource`, with where its kept text starts).

    Attributes:
        offset: Characters of the passage left out before `quote` (a long passage keeps a part).
        length: The whole passage's characters (0: `quote` is all of it).
    """

    offset: int = 0
    length: int = 0

    @property
    def name(self) -> str:
        """The file's name, as a person reads it (its folders left out), else the title."""
        name = PurePath(self.file.replace("\\", "/")).name if self.file else ""
        return name or self.title or "a source"

    @property
    def place(self) -> str:
        """"report.pdf, page 3" (the page where there is one)."""
        return self.name + (f", page {self.page}" if self.page is not None else "")

    @property
    def cut(self) -> bool:
        """Whether `quote` is a part of a longer passage."""
        return self.length > len(self.quote)


def number_of(source: Source, at: int) -> int:
    """The number a source is cited by: its own (a document's), else its place (from 1)."""
    n = getattr(source, "n", 0)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else at + 1


def sources_figure(sources: Sequence[Source], answer: str) -> list[dict[str, Any]]:
    """The answer's sources as its figures keep them (a long passage: the part `answer` relied on)."""
    out: list[dict[str, Any]] = []
    for i, s in enumerate(sources):
        n = number_of(s, i)
        text, offset = s.quote, 0
        if len(text) > STORED_TEXT_CHARS:
            spans = relied_on(text, answer, n).spans
            first = spans[0][0] if spans else 0
            offset = max(0, min(first - STORED_TEXT_CHARS // 4, len(text) - STORED_TEXT_CHARS))
            text = text[offset:offset + STORED_TEXT_CHARS]
        page = getattr(s, "page", None)
        score = getattr(s, "score", 0.0)
        entry: dict[str, Any] = {
            "n": n, "title": s.title, "file": str(getattr(s, "file", "") or ""), "location": s.location,
            "page": page if isinstance(page, int) and not isinstance(page, bool) else None,
            "score": float(score) if isinstance(score, int | float) and math.isfinite(score) else 0.0,
            "text": text,
        }
        if text != s.quote:
            entry |= {"offset": offset, "length": len(s.quote)}
        out.append(entry)
    return out


def stored_sources(value: Any) -> tuple[CitedSource, ...]:
    """The sources an answer's figures hold (whatever the file holds: checked here; a bad entry is
    skipped, a number given twice kept once)."""
    if not isinstance(value, list):
        return ()
    out: list[CitedSource] = []
    seen: set[int] = set()
    for e in value[:MAX_SOURCES]:
        if not isinstance(e, dict):
            continue
        n = _whole(e.get("n"))
        text = e.get("text")
        if n is None or not 1 <= n <= MAX_NUMBER or n in seen or not isinstance(text, str):
            continue
        page = _whole(e.get("page"))
        score = e.get("score")
        offset = _whole(e.get("offset")) or 0
        length = _whole(e.get("length")) or 0
        seen.add(n)
        out.append(CitedSource(
            _line(e.get("title")), _line(e.get("location")), text[:STORED_TEXT_CHARS], n, _line(e.get("file")),
            page if page is not None and page > 0 else None,
            float(score) if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
            else 0.0,
            max(0, offset), max(0, length)))
    return tuple(out)


def cited_sources(sources: Sequence[Source], answer: str) -> tuple[CitedSource, ...]:
    """A turn's sources as its row shows them: what the history will give back when the chat reopens."""
    return stored_sources(sources_figure(sources, answer))


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _line(value: Any) -> str:
    return value[:_LINE_CHARS] if isinstance(value, str) else ""
