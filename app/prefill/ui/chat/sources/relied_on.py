"""Which words of a passage an answer relied on, for the passage view to highlight.

An answer cites a source by its number ([2]) after the sentence that uses it. The words of that
sentence (those that say something: longer than two letters and not among the commonest, or any
number) are looked for in each sentence of the passage; the passage's sentences that share the most
with it are what the answer relied on. Where none shares enough (the answer put the passage in its
own words), the passage as a whole is what it cites, and the view says so.

Qt-free and linear in the passage and in the answer's sentences that cite it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prefill.documents.sources import MARK, mark_numbers, without_code

_MARK_BODY = re.compile(r"\d{1,3}(?:\s*,\s*\d{1,3})*")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
_WORD = re.compile(r"\w+")
_COMMON = frozenset(
    "the and for are but not you all any can had her was one our out has his how its may new now old see "
    "two who did get let put say she too use that with have this will your from they been were which their "
    "there what about would these other into than then them some could when also more most such only over "
    "very just each where after before while because being does like many much should those through".split())
CLAIM_CHARS = 600  # of the answer before a mark, at most: the sentence it ends
MAX_CLAIMS = 50  # sentences read per source (an answer may repeat a mark without end)


@dataclass(frozen=True)
class Reliance:
    """What the view highlights in a passage.

    Attributes:
        spans: (start, end) of each part of the passage the answer relied on, in order.
        whole: True when no part could be told apart: the passage is highlighted as a block.
    """

    spans: tuple[tuple[int, int], ...]
    whole: bool


def words(text: str) -> set[str]:
    """The words of `text` that say something: numbers, and words of three letters or more, not the commonest."""
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        if w.isdigit() or (len(w) > 2 and w not in _COMMON):
            out.add(w)
    return out


def claims(answer: str, n: int) -> list[str]:
    """The sentences of `answer` that cite source `n` (each the text before a mark back to the sentence's
    start; a mark that opens its sentence cites the sentence before it)."""
    text = without_code(answer)
    out: list[str] = []
    for m in MARK.finditer(text):  # the marks as the sources themselves are told apart
        if n not in mark_numbers(m):
            continue
        before = _without_marks(text[max(0, m.start() - CLAIM_CHARS):m.start()])
        ends = [e.end() for e in _SENTENCE_END.finditer(before)]
        if ends and ends[-1] == len(before):
            ends.pop()  # the mark follows its sentence's full stop: that sentence is the claim
        claim = before[ends[-1] if ends else 0:].strip()
        if claim:
            out.append(claim)
            if len(out) == MAX_CLAIMS:
                break
    return out


def _without_marks(text: str) -> str:
    """`text` without the marks it ends with ("… tall [2]" before "[1]"), and its spaces at the end."""
    text = text.rstrip()
    while text.endswith("]"):
        at = text.rfind("[")
        if at < 0 or _MARK_BODY.fullmatch(text, at + 1, len(text) - 1) is None:
            break
        text = text[:at].rstrip()
    return text


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, its spaces around left out."""
    out: list[tuple[int, int]] = []
    at = 0
    for end in [*(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]:
        piece = text[at:end]
        start, stop = at + len(piece) - len(piece.lstrip()), at + len(piece.rstrip())
        if stop > start:
            out.append((start, stop))
        at = end
    return out


def relied_on(passage: str, answer: str, n: int) -> Reliance:
    """The parts of `passage` (source `n`) that `answer` relied on; the whole passage where they cannot
    be told apart."""
    whole = Reliance(((0, len(passage)),) if passage else (), True)
    claim: set[str] = set()
    for c in claims(answer, n):
        claim |= words(c)
    if not claim or not passage:
        return whole
    scored: list[tuple[int, int, int]] = []
    for start, end in sentences(passage):
        shared = len(words(passage[start:end]) & claim)
        if shared:
            scored.append((shared, start, end))
    if not scored:
        return whole
    best = max(s for s, _, _ in scored)
    needed = max(2 if len(claim) >= 3 else 1, (best + 1) // 2)
    spans = tuple((a, b) for s, a, b in scored if s >= needed)
    return Reliance(spans, False) if spans else whole
