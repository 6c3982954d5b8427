"""A list whose items carry a line break or a paragraph of their own stays one list: item 1's paragraph
is indented in item 1, and items 2 and 3 follow it at its level (they used to render as a sub-list
of item 1: a new list after a paragraph flush left), rendered at once or streamed."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextDocument

from prefill.ui.markdown.rich_text import render_markdown, split_blocks
from prefill.ui.markdown.stream import MarkdownStream

NUMBERED = (
    "Steps:\n\n"
    "1. Install the package.\n"
    "   It takes a minute.\n\n"
    "   It needs Python 3.11 or later.\n\n"
    "2. Import it.\n"
    "3. Call it.\n\n"
    "Done."
)
BULLETED = (
    "Steps:\n\n"
    "- Install the package.  \n"
    "  It takes a minute.\n\n"
    "  It needs Python 3.11 or later.\n"
    "- Import it.\n\n"
    "- Call it.\n\n"
    "Done."
)
LOOSE = "Steps:\n\n1. Install the package.\n\n2. Import it.\n\n3. Call it.\n\nDone."


def _one_shot(text: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(render_markdown(text))
    return doc


def _streamed(text: str) -> QTextDocument:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    for i in range(0, len(text), 3):
        stream.append(text[i : i + 3])
    stream.finish()
    return doc


def _blocks(doc: QTextDocument) -> list[tuple[str, int | None, int | None, str]]:
    """Each block: its text, its list (the list's object index, None outside one), the list's level
    and the item's marker."""
    out = []
    block = doc.begin()
    while block.isValid():
        lst = block.textList()
        out.append((block.text(), lst.objectIndex() if lst else None, lst.format().indent() if lst else None,
                    lst.itemText(block) if lst else ""))
        block = block.next()
    return out


@pytest.mark.parametrize("render", [_one_shot, _streamed], ids=["at once", "streamed"])
@pytest.mark.parametrize(("text", "numbered"), [(NUMBERED, True), (BULLETED, False), (LOOSE, True)],
                         ids=["numbered", "bulleted", "loose"])
def test_items_after_a_paragraph_in_item_1_stay_in_its_list(qapp, render, text: str, numbered: bool) -> None:
    blocks = _blocks(render(text))
    outside = [b[0] for b in blocks if b[1] is None]
    items = [b for b in blocks if b[1] is not None]
    assert outside == ["Steps:", "Done."]  # no paragraph of an item left flush left, between its items
    assert len(items) == 3
    assert len({b[1] for b in items}) == 1  # one list: items 2 and 3 are not a list of their own
    assert {b[2] for b in items} == {1}  # all at the first level: no sub-list
    assert [b[3] for b in items] == (["1.", "2.", "3."] if numbered else ["."] * 3)  # Qt's marker for a bullet
    first = items[0][0]
    assert first.startswith("Install the package.")
    if text is not LOOSE:
        # Item 1's line break and its own paragraph are in item 1, a blank line before the paragraph.
        assert "\u2028It takes a minute.\u2028\u2028It needs Python 3.11 or later." in first
    assert [b[0] for b in items[1:]] == ["Import it.", "Call it."]


def test_a_list_still_ends_at_a_blank_line_before_text_that_is_not_its_own(qapp) -> None:
    assert split_blocks("- a\n- b\n\nAfter the list.\n\n1. x\n\n## Heading\n\n- c\n\n```\ncode\n```") == [
        "- a\n- b", "After the list.", "1. x", "## Heading", "- c", "```\ncode\n```"]
    # An indented line after a blank one is a paragraph of the item above; another item goes on with the list.
    assert split_blocks("1. a\n\n   more of a\n\n2. b\n\n\nText.") == ["1. a\n\n   more of a\n\n2. b", "Text."]
