"""A link in an answer opens only once the user can see where it goes.

A model can write ``[the docs](https://evil.example/login)``: the label says one
thing, the target another. A link that shows its own address (a bare URL, an
autolink) opens on a click; any other first shows its full address, as plain
text, in a box that opens it only on "Open".
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QTextDocument
from PySide6.QtWidgets import QMessageBox, QWidget

from prefill.ui.widgets.plain_text import Button, message_box

CONFIRM_NAME = "link-confirmation"  # the box's object name (tests and the fault battery find it)


def link_labels(document: QTextDocument, url: QUrl) -> list[tuple[str, str]]:
    """(shown text, href) of every link in ``document`` that points to ``url``."""
    found: list[tuple[str, str]] = []
    block = document.begin()
    while block.isValid():
        run: tuple[str, str] | None = None
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            href = fmt.anchorHref() if fmt.isAnchor() else ""
            if href and QUrl(href) == url and (run is None or run[1] == href):
                run = (run[0] if run else "") + fragment.text(), href
            elif run is not None:
                found.append(run)
                run = None
            it += 1
        if run is not None:
            found.append(run)
        block = block.next()
    return found


def shows_its_target(document: QTextDocument, url: QUrl) -> bool:
    """Whether every link to ``url`` in ``document`` shows that address as its text."""
    labels = link_labels(document, url)
    return bool(labels) and all(text.strip() == href for text, href in labels)


def confirm_box(parent: QWidget, url: QUrl) -> QMessageBox:
    """The question shown before a link whose label hides its address opens (not yet shown)."""
    target = url.toString(QUrl.ComponentFormattingOption.FullyEncoded)
    box = message_box(parent, "Open link", f"This link goes to:\n\n{target}\n\nOpen it in your browser?",
                      Button.Open | Button.Cancel, Button.Cancel)
    box.setObjectName(CONFIRM_NAME)
    return box


def open_link(parent: QWidget, document: QTextDocument, url: QUrl,
              opener: Callable[[QUrl], object] = QDesktopServices.openUrl) -> None:
    """Open ``url``, clicked in ``document``: at once if its link shows it, else after asking."""
    if shows_its_target(document, url):
        opener(url)
        return
    box = confirm_box(parent, url)

    def done(_result: int) -> None:
        if box.standardButton(box.clickedButton()) == Button.Open:
            opener(url)
        box.deleteLater()

    box.finished.connect(done)
    box.open()  # window-modal, and the GUI thread goes on
