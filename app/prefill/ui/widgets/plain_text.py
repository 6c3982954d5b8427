"""Text from outside shown as plain text: labels, message boxes and tooltips (STYLE rule 16).

Qt guesses. A QLabel or a QMessageBox left at ``Qt.AutoText``, and every tooltip,
renders text that looks like HTML as rich text, and rich text loads ``<img src>``
on the GUI thread: a model whose ``general.name`` is ``<img src="/dev/zero">``
would have the window read that file for ever. So the UI makes every label and
message box here, set to ``Qt.PlainText``; a label with markup of the app's own
says so with :func:`rich_label`. A tooltip has no format switch: :func:`tooltip`
escapes the text into rich text that shows it exactly as written.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox, QWidget

Button = QMessageBox.StandardButton


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A label that shows ``text`` as written, whatever it holds."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    return label


def rich_label(markup: str, parent: QWidget | None = None) -> QLabel:
    """A label of the app's own markup (constant text only: never text from outside)."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setText(markup)
    return label


def tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as written (line breaks kept); empty text: no tooltip."""
    if not text:
        return ""
    return f'<p style="white-space:pre-wrap">{html.escape(text, quote=False)}</p>'


def message_box(parent: QWidget | None, title: str, text: str,
                buttons: Button = Button.Ok, default: Button = Button.NoButton,
                icon: QMessageBox.Icon = QMessageBox.Icon.Question) -> QMessageBox:
    """A message box whose text is plain text; ``ask`` and ``inform`` run one."""
    box = QMessageBox(icon, title, "", buttons, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    if default != Button.NoButton:
        box.setDefaultButton(default)
    return box


def ask(parent: QWidget | None, title: str, text: str,
        buttons: Button = Button.Yes | Button.No, default: Button = Button.No) -> Button:
    """Ask a question (modal); returns the button clicked (Escape: ``default`` or Cancel/No)."""
    box = message_box(parent, title, text, buttons, default)
    box.exec()
    return box.standardButton(box.clickedButton())


def inform(parent: QWidget | None, title: str, text: str) -> None:
    """Tell something (modal), with an OK button."""
    message_box(parent, title, text, icon=QMessageBox.Icon.Information).exec()
