"""A Copy button that says it copied: a check and "Copied" for a moment, then Copy again.

A copy gives no other sign that it happened, so the button confirms it; a timer (never a sleep)
puts it back, and a second copy while it confirms starts the moment again.

The icons' pixmaps are kept by ``icons.icon`` (per size, mode and theme colour), so the transcript's
repaints while an answer streams do not render an SVG per button.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QToolButton

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.tokens import ICON

COPIED_MS = 1500  # how long a Copy button says "Copied"
COPIED = "Copied"


def icon_button(name: str, tip: str, text: str = "", object_name: str = "") -> QToolButton:
    """A flat button showing the line icon ``name`` alone, named by ``tip`` for the eye and the ear.

    ``text`` (not shown beside the icon) is the button's word for tests and for screen readers that
    read the text rather than the accessible name.
    """
    b = QToolButton()
    if object_name:
        b.setObjectName(object_name)
    b.setIcon(icon(name))
    b.setIconSize(QSize(ICON.inline, ICON.inline))
    b.setText(text or tip)
    b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
    b.setAutoRaise(True)
    b.setToolTip(tip)
    b.setAccessibleName(tip)
    return b


class CopyConfirm(QObject):
    """Turns ``button`` into "Copied" with a check (``confirm``) for COPIED_MS, then back to Copy.

    Args:
        button: The Copy button (its icon, text, tooltip and accessible name change).
        tip: What it says at rest, as tooltip and accessible name ("Copy the message").
    """

    def __init__(self, button: QToolButton, tip: str) -> None:
        super().__init__(button)
        self.button = button
        self.tip = tip
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(COPIED_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._show(False)

    @property
    def copied(self) -> bool:
        """Whether the button says "Copied" now."""
        return self._timer.isActive()

    def confirm(self) -> None:
        """Say "Copied" for a moment (again from the start if it already does)."""
        self._show(True)
        self._timer.start()

    def _on_timer_timeout(self) -> None:
        self._show(False)

    def _show(self, copied: bool) -> None:
        b = self.button
        b.setIcon(icon("check" if copied else "copy"))
        b.setText(COPIED if copied else "Copy")
        b.setToolTip(COPIED if copied else self.tip)
        b.setAccessibleName(COPIED if copied else self.tip)
