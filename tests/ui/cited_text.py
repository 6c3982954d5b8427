"""What the citation tests share: a passage, and the links of a message's text, found and clicked
where they are drawn."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor

from prefill.ui.chat.transcript.message_widget import MessageWidget

PASSAGE = ("The city of Paris has about 2.1 million people. It rains often in autumn. "
           "The Eiffel Tower is 330 m tall and made of iron.")


def links(w: MessageWidget) -> list[tuple[str, str]]:
    """(text, href) of every link in the message's text."""
    out = []
    for seg in w.body.segments:
        block = seg.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fmt = it.fragment().charFormat()
                if fmt.isAnchor():
                    out.append((it.fragment().text(), fmt.anchorHref()))
                it += 1
            block = block.next()
    return out


def click_link(qtbot, w: MessageWidget, text: str) -> None:
    """Click the link that shows `text` in the message, where it is drawn."""
    seg = w.body.segments[0]
    at = seg.document().find(text)
    assert not at.isNull(), text
    c = QTextCursor(seg.document())
    c.setPosition(at.selectionStart() + 1)
    point: QPoint = seg.cursorRect(c).center()
    qtbot.mouseClick(seg.viewport(), Qt.MouseButton.LeftButton, pos=point)
