"""A huge thinking is folded too (issue 33): its section holds at most SHOWN characters, stored or
streamed, "Show all" opens the whole of it, and the message's thinking is always every character."""

from __future__ import annotations

import pytest

from prefill.ui.chat.transcript.thinking_section import SHOWN
from tests.ui.chat.test_message_fold import _widget

LINE = "thinking on one endless line " * 140_000  # about 4 MB, no line break


@pytest.mark.parametrize("how", ["stored", "streamed"])
def test_a_huge_thinking_shows_a_bounded_part_and_keeps_it_all(qtbot, how: str) -> None:
    w = _widget(qtbot)
    section = w.thinking
    if how == "stored":
        section.set_text(LINE)
    else:
        for i in range(0, len(LINE), 64 * 1024):
            section.append(LINE[i:i + 64 * 1024])
    assert section.body.document().characterCount() <= SHOWN + 1  # the section's layout is bounded
    assert section.text() == LINE  # nothing lost
    button = section.show_all_button
    assert button.isVisible() and f"{len(LINE) - SHOWN:,} more characters" in button.text()
    button.click()
    viewer = section.viewer
    assert viewer is not None and viewer.text == LINE
    viewer.close()


def test_a_short_thinking_is_shown_whole_without_show_all(qtbot) -> None:
    w = _widget(qtbot)
    w.thinking.append("Let me think.")
    w.thinking.append(" Paris.")
    assert w.thinking.body.toPlainText() == w.thinking.text() == "Let me think. Paris."
    assert not w.thinking.show_all_button.isVisible()
