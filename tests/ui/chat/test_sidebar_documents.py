"""The sidebar's Documents group: what retrieval did for the last question, apart from the prefill, in plain
words; shown for a chat with documents only, and read back from an answer's stored figures (checked)."""

from __future__ import annotations

from prefill.session.documents import Retrieval
from prefill.ui.chat.sidebar.sidebar import EngineSidebar, stored_retrieval


def sidebar_of(qtbot) -> EngineSidebar:
    s = EngineSidebar()
    qtbot.addWidget(s)
    s.show()
    return s


def test_retrieved_passages_their_tokens_and_times_in_words(qtbot) -> None:
    s = sidebar_of(qtbot)
    assert not s.documents_box.isVisible()
    s.begin_answer(True)
    assert s.documents_box.isVisible() and s.text("docs-how") == "…"
    s.on_retrieval(Retrieval("retrieved", 0, 4, 812, 1500, 3.25, 1.5, ("junk.txt: <b>binary</b>",)))
    assert s.text("docs-how") == "searched: 4 passages found for this question"
    assert s.text("docs-tokens") == "812 of 1,500 tokens"
    assert (s.text("docs-embed"), s.text("docs-search")) == ("3.2 ms", "1.5 ms")
    assert s.documents_note.isVisible() and s.documents_note.text() == "not read: junk.txt: <b>binary</b>"
    s.begin_answer()  # a chat without documents: the group goes
    assert not s.documents_box.isVisible()


def test_documents_in_whole_say_nothing_was_searched(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.on_retrieval(Retrieval("whole", 1, 0, 40, 900, 0.0, 0.0))
    assert s.text("docs-how") == "whole: 1 document, kept for the next question"
    assert s.text("docs-embed") == "nothing searched" and not s.documents_note.isVisible()


def test_an_answers_stored_retrieval_is_shown_again_and_checked(qtbot) -> None:
    s = sidebar_of(qtbot)
    stored = Retrieval("retrieved", 0, 2, 300, 1000, 5.0, 2.0).as_dict()
    s.show_answer({"completion_tokens": 3, "retrieval": stored})
    assert s.documents_box.isVisible() and s.text("docs-how") == "searched: 2 passages found for this question"
    s.show_answer({"completion_tokens": 3})
    assert not s.documents_box.isVisible()
    assert stored_retrieval({"mode": "elsewhere"}) is None and stored_retrieval("retrieved") is None
    odd = stored_retrieval({"mode": "whole", "documents": "3", "tokens": float("nan"), "budget": True,
                            "skipped": ["a.txt: binary", 7]})
    assert odd == Retrieval("whole", 0, 0, 0, 0, 0.0, 0.0, ("a.txt: binary",))
