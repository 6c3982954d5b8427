"""The chat list's search marks the words it found in each result, painted as plain text: a title is
text from outside, so `<b>x</b>` is shown and marked as those eight characters, never as markup."""

from __future__ import annotations

from PySide6.QtGui import QColor

from prefill.store import SearchHit
from prefill.ui.history.conversation_list import ConversationList, match_spans, pieces
from prefill.ui.widgets.colours import LIGHT

HOSTILE = "<b>x</b> and <img src='/dev/zero'>"


def list_of(qtbot) -> ConversationList:
    chats = ConversationList()
    qtbot.addWidget(chats)
    chats.resize(320, 400)
    chats.show()
    return chats


def marker_pixels(chats: ConversationList) -> int:
    image = chats.list.viewport().grab().toImage()
    marker = QColor(LIGHT.search_match).rgb()
    return sum(1 for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)
               if image.pixelColor(x, y).rgb() == marker)


def test_the_search_highlight_uses_plain_text_for_a_hostile_title(qtbot) -> None:
    chats = list_of(qtbot)
    hit = SearchHit(7, 12, "an x in the words")  # a message of the chat whose title is hostile
    chats.search.setText("b")
    chats.set_search_results([hit], {7: HOSTILE}, None)
    assert chats.list.item(0).text() == f"{HOSTILE}\n  an x in the words"  # the title as written
    assert chats.matches(0) == ["b", "b"]  # the b of <b> and of </b>: characters, not a tag
    chats.search.setText("x")
    chats.set_search_results([hit], {7: HOSTILE}, None)
    assert chats.matches(0) == ["x", "x"]  # in the title and in the excerpt
    assert marker_pixels(chats) > 0  # painted on the marker's colour


def test_a_message_hit_marks_its_excerpt_and_the_plain_list_marks_nothing(qtbot) -> None:
    from prefill.store import ConversationRecord

    chats = list_of(qtbot)
    chats.search.setText("okapi zebra")
    chats.set_search_results([SearchHit(3, 11, "…the Okapi is a relative of the giraffe, not the zebra…")],
                             {3: "Animals"}, None)
    assert chats.matches(0) == ["Okapi", "zebra"]  # any case, every word of the search
    assert marker_pixels(chats) > 0
    chats.search.setText("")
    chats.set_conversations([ConversationRecord(id=3, title="Okapi facts", created_at=0.0, updated_at=0.0)], None)
    assert chats.matches(0) == [] and marker_pixels(chats) == 0


def test_matches_are_found_in_any_case_and_merged() -> None:
    assert match_spans("Paris, paris, PARIS", ["paris"]) == [(0, 5), (7, 12), (14, 19)]
    assert match_spans("abcdef", ["bcd", "cde"]) == [(1, 5)]
    assert pieces("a <b>x</b>", ["x"]) == [("a <b>", False), ("x", True), ("</b>", False)]
    assert match_spans("nothing", []) == [] and match_spans("", ["a"]) == []
