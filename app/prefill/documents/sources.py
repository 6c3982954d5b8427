"""Passages as the numbered sources a prompt carries, and the citations an answer may make of them.

The model reads the sources under `CITATION_RULE`: "[1] report.pdf, page 3" then the passage, for each.
`cited` reads the answer's marks back: `[2]`, `[1, 3]` or `[1][3]`, outside code, each pointing at a
source given; a mark that points at no source given is never a source (`stray_marks` lists them, for a
window that shows them as plain text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from prefill.documents.search import Passage

CITATION_RULE = (
    "Answer from the numbered sources below. After each sentence that uses a source, cite it by its number in "
    "square brackets, as [1] or [1][3]. Cite only the numbers listed. If the sources do not answer the question, "
    "say so instead of guessing."
)

# A mark: [n] or [n, m, …], not right after a letter or digit (a[1] is an index, not a citation).
MARK = re.compile(r"(?<![\w\]\[])\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]|(?<=\])\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)


@dataclass(frozen=True)
class NumberedSource:
    """A passage as the prompt numbers it.

    Attributes:
        n: Its number (1-based), as the model cites it.
        title: What a person sees: the file's name.
        location: Where in it: the path, with the page where there is one ("/x/report.pdf, page 3").
        quote: The passage's words.
        file, page, start, end: The file, its page (None without pages) and the passage's characters in it.
        score: Its search score.
    """

    n: int
    title: str
    location: str
    quote: str
    file: str
    page: int | None
    start: int
    end: int
    score: float

    @property
    def label(self) -> str:
        """How the prompt heads it: "[3] report.pdf, page 2"."""
        return f"[{self.n}] {self.title}" + (f", page {self.page}" if self.page is not None else "")


def number_passages(passages: Sequence[Passage], count_tokens: Callable[[str], int] | None = None,
                    budget: int | None = None, first: int = 1) -> list[NumberedSource]:
    """The passages numbered from `first` in their order, each once; with a `budget` (tokens, by
    `count_tokens`), only as many as fit whole, in order, such that `sources_block` of them (the citing
    rule, the labels and the blank lines between included) takes at most `budget` tokens.

    The passages are fitted one by one by the sum of their parts' counts, and the block is then counted
    whole, dropping the last passage while it is over: a tokenizer may count a text's parts otherwise
    than the text (words that join at a seam), so only the block's own count is trusted."""
    out: list[NumberedSource] = []
    seen: set[int] = set()
    count = count_tokens if budget is not None else None
    used = count(CITATION_RULE + "\n\n") if count is not None else 0
    for p in passages:
        if p.chunk_id in seen:
            continue
        n = first + len(out)
        src = NumberedSource(n, Path(p.file).name, p.file + (f", page {p.page}" if p.page is not None else ""),
                             p.text, p.file, p.page, p.start, p.end, p.score)
        if count is not None and budget is not None:
            cost = count(src.label + "\n" + src.quote + "\n\n")
            if used + cost > budget:
                break
            used += cost
        seen.add(p.chunk_id)
        out.append(src)
    if count is not None and budget is not None:
        while out and count(sources_block(out)) > budget:
            out.pop()
    return out


def sources_block(sources: Sequence[NumberedSource]) -> str:
    """The text the prompt carries: the rule, then each source under its label."""
    if not sources:
        return ""
    return CITATION_RULE + "\n\n" + "\n\n".join(f"{s.label}\n{s.quote}" for s in sources)


def without_code(answer: str) -> str:
    """`answer` with its code (fenced blocks, inline spans) blanked, same length: a[1] in code is no mark."""
    return CODE.sub(lambda m: " " * len(m.group(0)), answer)


def mark_numbers(mark: re.Match[str]) -> list[int]:
    """The numbers a `MARK` match cites."""
    return [int(x) for x in (mark.group(1) or mark.group(2)).split(",")]


def _marks(answer: str) -> list[int]:
    out: list[int] = []
    for m in MARK.finditer(without_code(answer)):
        out.extend(mark_numbers(m))
    return out


def cited(answer: str, sources: Sequence[NumberedSource]) -> list[NumberedSource]:
    """The sources the answer cites, in the order it first cites them, each once; a mark that points at
    no source given is left out."""
    by_n = {s.n: s for s in sources}
    out: list[NumberedSource] = []
    for n in _marks(answer):
        s = by_n.get(n)
        if s is not None and s not in out:
            out.append(s)
    return out


def stray_marks(answer: str, sources: Sequence[NumberedSource]) -> list[int]:
    """The numbers the answer writes as marks that point at no source given (each once, in order)."""
    known = {s.n for s in sources}
    return list(dict.fromkeys(n for n in _marks(answer) if n not in known))
