"""A link whose label is not its target shows the target, as plain text, before it opens."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.markdown.link_guard import CONFIRM_NAME

EVIL = "https://evil.example/login?next=%3Cimg%3E"


class Browser(QObject):
    """Stands in for the system browser: Qt hands it every https URL the app opens."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.opened.append(url.toString(QUrl.ComponentFormattingOption.FullyEncoded))


@pytest.fixture
def browser(qapp):
    b = Browser()
    QDesktopServices.setUrlHandler("https", b, "open")
    yield b
    QDesktopServices.unsetUrlHandler("https")


@pytest.fixture
def message(qtbot) -> MessageWidget:
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.set_content(f"Read [the docs]({EVIL}) or https://good.example/page, "
                  f"or [https://good.example/]({EVIL}).")
    return w


def _box(w: MessageWidget) -> QMessageBox | None:
    return w.findChild(QMessageBox, CONFIRM_NAME)


def test_a_link_that_hides_its_target_asks_first(qtbot, browser: Browser, message: MessageWidget) -> None:
    message.browser.anchorClicked.emit(QUrl(EVIL))
    box = _box(message)
    assert box is not None and box.isVisible() and browser.opened == []
    assert box.textFormat() == Qt.TextFormat.PlainText and EVIL in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert browser.opened == []
    qtbot.waitUntil(lambda: _box(message) is None)  # the box is gone once answered

    message.browser.anchorClicked.emit(QUrl(EVIL))
    _box(message).button(QMessageBox.StandardButton.Open).click()
    assert browser.opened == [EVIL]


def test_a_link_that_shows_its_target_opens_at_once(browser: Browser, message: MessageWidget) -> None:
    message.browser.anchorClicked.emit(QUrl("https://good.example/page"))
    assert browser.opened == ["https://good.example/page"] and _box(message) is None


def test_a_mailto_link_opens_through_the_guard(qtbot) -> None:
    """Rendered clickable, so a click opens it (it shows its own address: no question)."""
    mail = Browser()
    QDesktopServices.setUrlHandler("mailto", mail, "open")
    try:
        w = MessageWidget("assistant")
        qtbot.addWidget(w)
        w.set_content("Write to <mailto:a@b.example>.")
        w.browser.anchorClicked.emit(QUrl("mailto:a@b.example"))
        assert mail.opened == ["mailto:a@b.example"] and _box(w) is None
    finally:
        QDesktopServices.unsetUrlHandler("mailto")
