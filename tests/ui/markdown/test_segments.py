"""SegmentRouter: a streaming answer cut into prose and code segments, the same however it is chunked."""

from __future__ import annotations

import random

import pytest

from prefill.ui.markdown.rich_text import opening_fence, split_blocks
from prefill.ui.markdown.segments import SegmentRouter
from tests.ui.markdown.test_stream import sample_answer

CASES = [
    "Here:\n\n```python\nx = 1\n```\n\nDone.",
    "```\na\n```\n```js\nb\n```\n\ntext",
    "  ```py\ncode\n  ```\nafter",
    "`inline` first\n``` not`a fence\n~~~\ntilde ``` inside\n~~~~\nend",
    "text\n```",
    "a\n\n\n   \n```\nx\n",
    "\n\n```\n```\n\n\n",
    "",
]


def route(text: str, sizes: list[int] | None = None) -> list[tuple[bool, str]]:
    """Each segment's kind (code?) and text, from ``text`` fed in pieces of these sizes (else at once).

    Segment 0 (prose) is always there, as in the message.
    """
    router, segments = SegmentRouter(), [(False, "")]
    pieces, at = [], 0
    for size in sizes or [len(text)]:
        pieces += router.feed(text[at : at + size])
        at += size
    pieces += router.feed(text[at:]) + router.close()
    for p in pieces:
        if p.index == len(segments):
            segments.append((p.code, p.text))
        else:
            assert p.index == len(segments) - 1 and segments[-1][0] == p.code
            segments[-1] = (p.code, segments[-1][1] + p.text)
    return segments


@pytest.mark.parametrize("text", [*CASES, sample_answer(4000)])
def test_the_cut_does_not_depend_on_the_chunks(text: str) -> None:
    whole = route(text)
    rnd = random.Random(7)
    for _ in range(50):
        sizes = [rnd.randint(1, 9) for _ in range(len(text))]
        assert route(text, sizes) == whole
    assert route(text, [1] * len(text)) == whole


@pytest.mark.parametrize("text", [*CASES, sample_answer(4000)])
def test_code_segments_are_the_splitters_fenced_blocks(text: str) -> None:
    fenced = [b for b in split_blocks(text) if opening_fence(b.split("\n")[0])]
    code = [t for is_code, t in route(text) if is_code]
    assert [c.rstrip("\n") for c in code] == fenced
    # Nothing is lost but blank text between blocks.
    assert "".join(t for _, t in route(text)).split() == text.split()


def test_prose_code_prose() -> None:
    assert route("```\nx\n```\n")[0] == (False, "")
    assert route("Here:\n\n```python\nx = 1\n```\n\nDone.") == [
        (False, "Here:\n\n"), (True, "```python\nx = 1\n```\n"), (False, "\nDone.")]


def test_an_answer_that_opens_with_code_leaves_segment_0_empty() -> None:
    router = SegmentRouter()
    pieces = router.feed("```\nx\n```\nafter")
    assert [(p.index, p.code) for p in pieces] == [(1, True), (2, False)]


def test_a_fence_line_is_held_back_until_it_ends_and_other_text_is_not() -> None:
    router = SegmentRouter()
    assert [p.text for p in router.feed("Some words")] == ["Some words"]  # shown at once
    assert [p.text for p in router.feed("\n``")] == ["\n"]  # what may become a fence waits
    assert router.feed("`py") == []
    pieces = router.feed("thon\nx = 1")
    assert [(p.index, p.code, p.text) for p in pieces] == [(1, True, "```python\nx = 1")]
    assert [(p.index, p.code, p.text) for p in router.feed("\n```\nend")] == [(1, True, "\n```\n"), (2, False, "end")]
