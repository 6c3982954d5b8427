"""A Copy button that says it copied: a check and "Copied" for a moment, then Copy again.

A copy gives no other sign that it happened, so the button confirms it; a timer (never a sleep)
puts it back, and a second copy while it confirms starts the moment again.

The transcript shows the same few icons on every message and every code block, and repaints them
while an answer streams; their pixmaps are drawn once per size, state and theme colour and kept
(``_KeptIcon``), so a repaint does not parse and render an SVG per button.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QPoint, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QIcon, QIconEngine, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QToolButton

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.tokens import ICON

COPIED_MS = 1500  # how long a Copy button says "Copied"
COPIED = "Copied"

_kept: dict[tuple[str, int, int, int, int, int], QPixmap] = {}  # (name, size, mode, state, colour): pixmap


class _KeptIcon(QIconEngine):
    """The line icon ``name`` (``icons.icon``), its pixmaps kept per size, mode, state and theme colour."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self._drawn = icon(name)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        group = QPalette.ColorGroup.Disabled if mode == QIcon.Mode.Disabled else QPalette.ColorGroup.Active
        colour = QGuiApplication.palette().color(group, QPalette.ColorRole.WindowText).rgba()
        key = (self._name, size.width(), size.height(), mode.value, state.value, colour)
        kept = _kept.get(key)
        if kept is None:
            kept = _kept[key] = self._drawn.pixmap(size, mode, state)
        return kept

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        painter.drawPixmap(QRect(QPoint(rect.x(), rect.y()), rect.size()), self.pixmap(rect.size(), mode, state))

    def clone(self) -> QIconEngine:
        return _KeptIcon(self._name)


def kept_icon(name: str) -> QIcon:
    """``icons.icon(name)``, drawn once per size and theme colour (see the module's docstring)."""
    return QIcon(_KeptIcon(name))


def icon_button(name: str, tip: str, text: str = "", object_name: str = "") -> QToolButton:
    """A flat button showing the line icon ``name`` alone, named by ``tip`` for the eye and the ear.

    ``text`` (not shown beside the icon) is the button's word for tests and for screen readers that
    read the text rather than the accessible name.
    """
    b = QToolButton()
    if object_name:
        b.setObjectName(object_name)
    b.setIcon(kept_icon(name))
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
        b.setIcon(kept_icon("check" if copied else "copy"))
        b.setText(COPIED if copied else "Copy")
        b.setToolTip(COPIED if copied else self.tip)
        b.setAccessibleName(COPIED if copied else self.tip)
