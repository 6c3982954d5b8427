"""An answer's sources as the window keeps and shows them (ui/chat/sources): the figures' "sources" and
their check when read back, which sentences of a passage an answer relied on, the passage view (file,
page, the words highlighted, Open file only for a local file that exists, everything from outside as
text), the list under an answer, and the marks of a message as links that open the passage."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication

from prefill.session.documents import DocumentSource
from prefill.session.turn import Source
from prefill.ui.chat.sources.cited import STORED_TEXT_CHARS, CitedSource, cited_sources, sources_figure, stored_sources
from prefill.ui.chat.sources.passage_view import PassageView
from prefill.ui.chat.sources.relied_on import relied_on
from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.widgets.code_palette import LIGHT_CODE
from tests.ui.cited_text import PASSAGE, click_link, links

ANSWER = "Paris has about 2.1 million people [1]. The tower is 330 m tall [2]. Lyon is far away [7]."


def doc(n: int, file: str, page: int | None = None, text: str = PASSAGE) -> DocumentSource:
    return DocumentSource(Path(file).name, file, text, n, file, page, 0.5)


# --- kept with the answer ------------------------------------------------------------------------
def test_sources_kept_in_the_figures_read_back_the_same() -> None:
    kept = sources_figure([doc(1, "/d/report.pdf", 3), doc(2, "/d/notes.md")], ANSWER)
    assert kept[0] == {"n": 1, "title": "report.pdf", "file": "/d/report.pdf", "location": "/d/report.pdf",
                       "page": 3, "score": 0.5, "text": PASSAGE}
    back = stored_sources(kept)
    assert [(s.n, s.file, s.page, s.quote, s.place) for s in back] == [
        (1, "/d/report.pdf", 3, PASSAGE, "report.pdf, page 3"), (2, "/d/notes.md", None, PASSAGE, "notes.md")]


def test_a_source_without_a_number_is_numbered_by_its_place() -> None:
    back = cited_sources([Source("web page", "https://example.com", "Words.")], "It says so [1].")
    assert [(s.n, s.name, s.quote) for s in back] == [(1, "web page", "Words.")]


def test_what_a_file_holds_is_checked_when_read_back() -> None:
    held = [{"n": 1, "text": "ok", "file": 5, "page": "3", "score": float("nan")}, "junk", {"n": True, "text": "x"},
            {"n": 1, "text": "twice"}, {"n": 0, "text": "zero"}, {"n": 2}, {"n": 3, "text": "y", "page": -4}]
    back = stored_sources(held)
    assert [(s.n, s.quote, s.file, s.page, s.score) for s in back] == [(1, "ok", "", None, 0.0),
                                                                        (3, "y", "", None, 0.0)]
    assert stored_sources({"n": 1}) == () and stored_sources(None) == ()


def test_a_long_passage_keeps_the_part_the_answer_relied_on() -> None:
    filler = "Nothing to see in this line at all. " * 2000
    text = filler + "The secret ingredient is saffron from Valencia. " + filler
    (kept,) = sources_figure([doc(1, "/d/book.txt", text=text)], "The ingredient is saffron from Valencia [1].")
    assert len(kept["text"]) == STORED_TEXT_CHARS and "saffron from Valencia" in kept["text"]
    assert kept["length"] == len(text) and text[kept["offset"]:].startswith(kept["text"])
    (back,) = stored_sources([kept])
    assert back.cut and back.offset == kept["offset"]


# --- what the answer relied on -------------------------------------------------------------------
def test_the_sentences_the_answer_cites_are_highlighted() -> None:
    r = relied_on(PASSAGE, ANSWER, 1)
    assert not r.whole and [PASSAGE[a:b] for a, b in r.spans] == ["The city of Paris has about 2.1 million people."]
    r2 = relied_on(PASSAGE, ANSWER, 2)
    assert [PASSAGE[a:b] for a, b in r2.spans] == ["The Eiffel Tower is 330 m tall and made of iron."]


def test_a_passage_put_in_other_words_is_highlighted_whole() -> None:
    r = relied_on(PASSAGE, "Quite unrelated wording here [1].", 1)
    assert r.whole and r.spans == ((0, len(PASSAGE)),)


# --- the passage view --------------------------------------------------------------------------
def test_the_passage_view_shows_file_page_and_the_words_relied_on(qtbot, tmp_path: Path) -> None:
    f = tmp_path / "report.pdf"
    f.write_bytes(b"%PDF-1.4")
    opened: list[QUrl] = []
    (source,) = cited_sources([doc(1, str(f), 3)], ANSWER)
    view = PassageView(source, ANSWER, opener=opened.append)
    qtbot.addWidget(view)
    assert view.file_name.text() == "[1] report.pdf" and view.page.text() == "Page 3"
    assert view.view.toPlainText() == PASSAGE
    assert view.highlighted == ["The city of Paris has about 2.1 million people."]
    cursor = QTextCursor(view.view.document())
    cursor.setPosition(10)
    assert cursor.charFormat().background().color().name() == LIGHT_CODE.mark  # the light theme's mark colour
    cursor.setPosition(60)
    assert cursor.charFormat().background().style() == Qt.BrushStyle.NoBrush  # "It rains often…" is not
    assert view.open_button.text() == "Open file" and not view.open_button.isHidden()
    view.open_button.click()
    assert opened == [QUrl.fromLocalFile(str(f))]


def test_a_file_that_is_not_here_or_not_absolute_is_never_opened(qtbot, tmp_path: Path) -> None:
    for file in (str(tmp_path / "gone.pdf"), "../../etc/passwd", "https://example.com/a.pdf"):
        (source,) = cited_sources([doc(1, file)], ANSWER)
        opened: list[QUrl] = []
        view = PassageView(source, ANSWER, opener=opened.append)
        qtbot.addWidget(view)
        assert view.open_button.isHidden(), file
        view.open_file()
        assert opened == [], file


def test_a_file_the_system_might_run_is_shown_in_its_folder_not_opened(qtbot, tmp_path: Path) -> None:
    script = tmp_path / "notes.sh"
    script.write_text("echo hi\n")
    (source,) = cited_sources([doc(1, str(script))], ANSWER)
    opened: list[QUrl] = []
    view = PassageView(source, ANSWER, opener=opened.append)
    qtbot.addWidget(view)
    assert view.open_button.text() == "Show folder" and not view.open_button.isHidden()
    view.open_button.click()
    assert opened == [QUrl.fromLocalFile(str(tmp_path))]


def test_a_file_name_with_markup_or_dots_shows_as_text(qtbot) -> None:
    file = "../<b>bold&<img src=x onerror=y>.txt"
    (source,) = cited_sources([doc(1, file, text="<i>not italic</i> & <b>kept</b>")], "It is kept [1].")
    view = PassageView(source, "It is kept [1].")
    qtbot.addWidget(view)
    assert view.file_name.text() == "[1] <b>bold&<img src=x onerror=y>.txt"
    assert view.file_name.textFormat() == Qt.TextFormat.PlainText
    assert view.path.text() == file and view.path.textFormat() == Qt.TextFormat.PlainText
    assert view.view.toPlainText() == "<i>not italic</i> & <b>kept</b>"
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.set_sources([source])
    assert w.source_list is not None
    assert w.source_list.texts() == ["[1] <b>bold&<img src=x onerror=y>.txt"]


# --- in a message ------------------------------------------------------------------------------
@pytest.fixture
def message(qtbot):
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.resize(700, 300)
    w.show()
    return w


def test_an_answer_links_only_the_marks_of_its_sources_and_lists_them(qtbot, message: MessageWidget) -> None:
    sources = cited_sources([doc(1, "/d/report.pdf", 3), doc(2, "/d/notes.md")], ANSWER)
    message.set_sources(sources)
    message.set_content(ANSWER)
    assert links(message) == [("[1]", "cite:1"), ("[2]", "cite:2")]  # [7] cites no source: text
    assert "Lyon is far away [7]." in message.body.segments[0].toPlainText()
    assert message.source_list is not None and message.source_list.isVisibleTo(message)
    assert message.source_list.texts() == ["[1] report.pdf, page 3", "[2] notes.md"]


def test_sources_set_after_the_text_make_its_marks_links(qtbot, message: MessageWidget) -> None:
    message.set_content(ANSWER)
    assert links(message) == []
    message.set_sources(cited_sources([doc(2, "/d/notes.md")], ANSWER))
    assert links(message) == [("[2]", "cite:2")]


def test_clicking_a_mark_opens_its_passage_with_file_and_page(qtbot, message: MessageWidget) -> None:
    message.set_sources(cited_sources([doc(1, "/d/report.pdf", 3), doc(2, "/d/notes.md")], ANSWER))
    message.set_content(ANSWER)
    click_link(qtbot, message, "[2]")
    qtbot.waitUntil(lambda: message.passage is not None and message.passage.isVisible())
    view = message.passage
    assert view.source.n == 2 and view.file_name.text() == "[2] notes.md" and view.page.isHidden()
    assert view.highlighted == ["The Eiffel Tower is 330 m tall and made of iron."]
    click_link(qtbot, message, "[1]")  # another mark: its passage in place of the last
    qtbot.waitUntil(lambda: message.passage is not None and message.passage.source.n == 1)
    assert message.passage.page.text() == "Page 3"


def test_a_mark_without_a_source_opens_nothing(qtbot, message: MessageWidget) -> None:
    message.set_sources(cited_sources([doc(1, "/d/report.pdf", 3)], ANSWER))
    message.set_content(ANSWER)
    click_link(qtbot, message, "[7]")
    QApplication.processEvents()
    assert message.passage is None and message.open_source(7) is None


def test_the_marks_are_reached_by_tab_and_opened_by_enter(qtbot, message: MessageWidget) -> None:
    message.set_sources(cited_sources([doc(1, "/d/report.pdf", 3), doc(2, "/d/notes.md")], ANSWER))
    message.set_content(ANSWER)
    seg = message.body.segments[0]
    assert seg.focusPolicy() & Qt.FocusPolicy.TabFocus  # the prose with marks is a Tab stop
    click_link(qtbot, message, "[2]")  # a click leaves the cursor at [2]; arriving by Tab starts again
    qtbot.waitUntil(lambda: message.passage is not None)
    message.passage.close()
    message.buttons["copy"].setFocus()
    seg.setFocus(Qt.FocusReason.TabFocusReason)  # Tab arrives at the text (from wherever): on its first mark
    assert seg.textCursor().selectedText() == "[1]"
    qtbot.keyClick(seg, Qt.Key.Key_Tab)  # the second mark
    assert seg.textCursor().selectedText() == "[2]"
    qtbot.waitUntil(lambda: message.passage is None)
    qtbot.keyClick(seg, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: message.passage is not None)
    assert message.passage.source.n == 2


def test_a_message_without_sources_keeps_its_text_out_of_the_tab_chain(qtbot, message: MessageWidget) -> None:
    message.set_content(ANSWER)
    assert message.body.segments[0].focusPolicy() == Qt.FocusPolicy.ClickFocus


def test_a_listed_source_opens_its_passage_by_the_keyboard(qtbot, message: MessageWidget) -> None:
    message.set_sources(cited_sources([doc(1, "/d/report.pdf", 3), doc(2, "/d/notes.md")], ANSWER))
    message.set_content(ANSWER)
    button = message.source_list.buttons[1]
    button.setFocus()
    qtbot.keyClick(button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: message.passage is not None)
    assert message.passage.source.n == 2


def test_a_stored_source_is_a_cited_source() -> None:
    (s,) = cited_sources([doc(4, "C:\\docs\\plan.docx")], "See [4].")
    assert isinstance(s, CitedSource) and isinstance(s, DocumentSource) and s.name == "plan.docx"


def test_a_source_cited_second_in_a_run_of_marks_has_its_claim() -> None:
    """"[1][3]" cites 3 as well (the prompt teaches that form): the sentence before the run is 3's claim
    too, read by the same mark pattern as the sources the answer is given."""
    from prefill.ui.chat.sources.relied_on import claims

    answer = "The lighthouse was built in 1874 [1][3]. It is white [2]."
    assert claims(answer, 3) == ["The lighthouse was built in 1874"]
    assert claims(answer, 1) == claims(answer, 3) and claims(answer, 2) == ["It is white"]
