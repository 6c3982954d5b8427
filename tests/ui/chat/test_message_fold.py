"""A huge message is folded (issue 33): its widget renders a bounded part of it, stored or streamed;
"Show all" opens the whole text in a plain-text viewer; Copy copies every character.

Before, a 10,000-row table of 64 columns went into the message's documents whole (12.5 s to insert,
7 s to lay out, +2.1 GB) and so did a 4 MB line (0.9 s + 4.5 s, +2 GB). The bounds here are counts
(characters and blocks in the documents), not times: the times are benchmarks/markdown_hostile_bench.py's.
"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication, QTextTable
from PySide6.QtWidgets import QPlainTextEdit

from prefill.ui.chat.transcript.message_widget import MessageWidget

SHOWN_BOUND = 40_000  # characters in a message's documents, whatever its length
BLOCK_BOUND = 2_000  # blocks (paragraphs, table cells, lines) in them


def _table(rows: int = 10_000, cols: int = 64) -> str:
    head = "|" + "|".join(f"c{c}" for c in range(cols)) + "|\n"
    rule = "|" + "|".join("-" for _ in range(cols)) + "|\n"
    return head + rule + "".join("|" + "|".join(str((r + c) % 10) for c in range(cols)) + "|\n" for r in range(rows))


def _line(size: int = 4_000_000) -> str:
    unit = "a long line of words without any break "
    return (unit * (size // len(unit) + 1))[:size]


HUGE = {"table": _table(), "line": _line()}


def _widget(qtbot) -> MessageWidget:
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.resize(700, 500)
    w.show()
    return w


def _shown(w: MessageWidget) -> tuple[int, int]:
    """Characters and blocks in the message's documents."""
    docs = [s.document() for s in w.body.segments]
    return sum(d.characterCount() for d in docs), sum(d.blockCount() for d in docs)


def _show_all_gives_the_whole_text(qtbot, w: MessageWidget, text: str) -> None:
    from prefill.ui.chat.transcript.full_text import VIEW_LINE

    bar = w.body.fold_bar
    assert bar is not None and bar.isVisible()
    assert f"{len(text) - w.body._fold.shown:,} more characters" in bar.label.text()
    bar.button.click()
    viewer = w.viewer
    assert viewer is not None and isinstance(viewer.view, QPlainTextEdit)
    qtbot.waitUntil(lambda: viewer.is_loaded, timeout=60_000)
    shown = viewer.view.toPlainText()
    # Every character, in order; a line longer than VIEW_LINE is broken for display only.
    assert shown.replace("\n", "") == text.replace("\n", "")
    assert max(map(len, shown.split("\n"))) <= VIEW_LINE
    viewer.copy_all()
    assert QGuiApplication.clipboard().text() == text
    viewer.close()


@pytest.mark.parametrize("name", list(HUGE))
def test_a_huge_stored_message_is_folded_and_shown_whole_on_request(qtbot, name: str) -> None:
    text = HUGE[name]
    w = _widget(qtbot)
    w.set_content(text)  # a chat opened from the history, or an imported one
    qtbot.waitUntil(lambda: not w.body.rendering)
    chars, blocks = _shown(w)
    assert chars < SHOWN_BOUND and blocks < BLOCK_BOUND, (chars, blocks)
    assert w.body.folded == len(text) - w.body._fold.shown > len(text) - SHOWN_BOUND
    if name == "table":
        frames = [f for s in w.body.segments for f in s.document().rootFrame().childFrames()]
        tables = [f for f in frames if isinstance(f, QTextTable)]
        assert tables and tables[0].columns() == 64 and tables[0].rows() > 1  # the first rows, as a table
    w.copy_text()
    assert QGuiApplication.clipboard().text() == text  # Copy gives the whole text
    assert w.text() == text
    _show_all_gives_the_whole_text(qtbot, w, text)


@pytest.mark.parametrize("name", list(HUGE))
def test_a_huge_streamed_message_stays_bounded_and_shows_what_stored_shows(qtbot, name: str) -> None:
    text = HUGE[name]
    w = _widget(qtbot)
    w.set_streaming(True)
    for at in range(0, len(text), 32 * 1024):  # 32 KB a flush
        w.append(text[at : at + 32 * 1024])
        chars, blocks = _shown(w)
        assert chars < SHOWN_BOUND and blocks < BLOCK_BOUND, (at, chars, blocks)
    w.set_streaming(False)
    w.finish()
    stored = _widget(qtbot)
    stored.set_content(text)
    qtbot.waitUntil(lambda: not stored.body.rendering)
    assert [s.toPlainText() for s in w.body.segments] == [s.toPlainText() for s in stored.body.segments]
    assert w.text() == text
    _show_all_gives_the_whole_text(qtbot, w, text)


def test_a_long_stored_message_renders_a_slice_per_turn_of_the_event_loop(qtbot) -> None:
    """Counted, not timed: what one turn of the event loop puts in the documents is a slice, not the
    whole shown part (a long markdown answer cost its whole render in one go before)."""
    from prefill.ui.chat.transcript.message_segments import (
        SLICE_COST,  # here: the module's other tests run on older code
    )

    para = "Some **bold** prose with `code` and a [link](https://example.com), then more words.\n\n"
    text = para * 20_000  # 1.7 MB of paragraphs
    w = _widget(qtbot)
    w.set_content(text)
    first, _ = _shown(w)
    assert w.body.rendering and first < 3 * SLICE_COST  # the first slice only, now
    sizes = [first]
    qtbot.waitUntil(lambda: sizes.append(_shown(w)[0]) or not w.body.rendering)
    steps = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
    assert max(steps) < 3 * SLICE_COST  # each later turn a slice more
    assert SLICE_COST < sizes[-1] < SHOWN_BOUND and w.body.folded
    assert w.text() == text


def test_a_message_within_the_budget_is_not_folded(qtbot) -> None:
    w = _widget(qtbot)
    text = _table(rows=8, cols=4) + "\n" + "Some prose. " * 500
    w.set_content(text)
    assert w.body.folded == 0 and w.body.fold_bar is None
    assert "Some prose." in w.body.segments[-1].toPlainText()[-20:]
    w.set_content(HUGE["line"])  # folds; then a short text again: the bar goes
    assert w.body.fold_bar is not None and w.body.fold_bar.isVisible()
    w.set_content("short")
    assert w.body.folded == 0 and not w.body.fold_bar.isVisible()
    assert w.browser.toPlainText() == "short"
