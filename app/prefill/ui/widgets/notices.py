"""The window's notices, over the page and never in its layout, so a notice coming or going moves
nothing a person is about to click.

Two kinds:
- a toast: passing news (exported, imported, copied), a short line near the bottom of the page that
  fades after a few seconds; it lets clicks through;
- a banner: what needs reading or action (a model to load, a failure), at the top of the page with
  its action as a button and a close button; it stays until closed or cleared by the window when it
  no longer holds (a load, a chat switch, an answer).

:class:`NoticeArea` lays both over an anchor widget (the page) inside the anchor's parent, following
the anchor's geometry.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEasingCurve, QEvent, QObject, QPropertyAnimation, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import COLUMN, ICON, SPACE

NoticeAction = tuple[str, Callable[[], None]]  # a banner's button: its words and what it does
TOAST_MS = 3500  # how long a toast stays before it fades
FADE_MS = 300


class _Mark(QWidget):
    """A line icon painted at paint time, so it follows a theme switch."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._icon = icon(name)
        self.setFixedSize(QSize(ICON.inline, ICON.inline))

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        self._icon.paint(painter, self.rect())
        painter.end()


class Banner(QFrame):
    """A notice that needs reading or action: its text (plain), its action's button, a close button.

    Signals:
        changed(): shown, hidden or said otherwise.
        closed(): the person closed it.
    """

    changed = Signal()
    closed = Signal()

    def __init__(self, name: str, mark: str = "info") -> None:
        super().__init__()
        self.setObjectName(name)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.sm)
        lay.setSpacing(SPACE.sm)
        lay.addWidget(_Mark(mark), 0, Qt.AlignmentFlag.AlignTop)
        self.label = plain_label()
        self.label.setObjectName("notice-text")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label, 1)
        self.action_button = QPushButton()
        self.action_button.setObjectName("notice-action")
        self.action_button.hide()
        lay.addWidget(self.action_button, 0, Qt.AlignmentFlag.AlignTop)
        self.close_button = QToolButton()
        self.close_button.setObjectName("notice-close")
        self.close_button.setIcon(icon("close"))
        self.close_button.setIconSize(QSize(ICON.inline, ICON.inline))
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Close")
        self.close_button.setAccessibleName("Close the notice")
        lay.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self._action: Callable[[], None] | None = None
        self.action_button.clicked.connect(self._on_action_clicked)
        self.close_button.clicked.connect(self._on_close_clicked)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def say(self, text: str, action: NoticeAction | None = None) -> None:
        """Show `text` ("" hides the banner), with `action`'s button where one is given."""
        self.label.setText(text)
        self._action = action[1] if action is not None and text else None
        self.action_button.setText(action[0] if action is not None else "")
        self.action_button.setVisible(self._action is not None)
        self.setVisible(bool(text))
        self.changed.emit()

    def _on_action_clicked(self) -> None:
        if self._action is not None:
            self._action()

    def _on_close_clicked(self) -> None:
        self.say("")
        self.closed.emit()


class Toast(QFrame):
    """Passing news: a short line that fades after a few seconds (`lifetime_ms`) and lets clicks through.

    Signals:
        changed(): shown or gone.
    """

    changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("toast")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(SPACE.lg, SPACE.sm, SPACE.lg, SPACE.sm)
        self.label = plain_label()
        self.label.setObjectName("toast-text")
        self.label.setWordWrap(True)
        self.label.setMaximumWidth(COLUMN.min_width)
        lay.addWidget(self.label)
        self.lifetime_ms = TOAST_MS
        self._opacity = QGraphicsOpacityEffect(self)
        self._opacity.setOpacity(1.0)
        self.setGraphicsEffect(self._opacity)
        self._fade = QPropertyAnimation(self._opacity, b"opacity", self)
        self._fade.setDuration(FADE_MS)
        self._fade.setStartValue(1.0)
        self._fade.setEndValue(0.0)
        self._fade.setEasingCurve(QEasingCurve.Type.InQuad)
        self._fade.finished.connect(self.clear)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fade.start)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def show_text(self, text: str) -> None:
        """Say `text` for a few seconds ("" clears at once)."""
        if not text:
            self.clear()
            return
        self._fade.stop()
        self._opacity.setOpacity(1.0)
        self.label.setText(text)
        self.adjustSize()
        self.show()
        self._timer.start(self.lifetime_ms)
        self.changed.emit()

    def clear(self) -> None:
        self._timer.stop()
        self._fade.stop()
        self.label.setText("")
        self.hide()
        self.changed.emit()


class NoticeArea(QObject):
    """The banners (a lasting problem above the notice) at the top of `anchor` and the toast near its
    bottom, laid over it in its parent; they follow its geometry and leave the layout alone."""

    def __init__(self, anchor: QWidget) -> None:
        super().__init__(anchor)
        host = anchor.parentWidget()
        if host is None:
            raise ValueError("the notices' anchor must be in a widget already")
        self._anchor = anchor
        self._host = host
        self.banners = QWidget(host)
        self.banners.setObjectName("notice-banners")
        column = self._column = QVBoxLayout(self.banners)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(SPACE.xs)
        self.problem = Banner("problem-banner", "warning")
        self.banner = Banner("notice-banner", "info")
        column.addWidget(self.problem)
        column.addWidget(self.banner)
        self.banners.hide()
        self.toast = Toast()
        self.toast.setParent(host)
        self.toast.hide()
        for part in (self.problem, self.banner, self.toast):
            part.changed.connect(self.place)
        anchor.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._anchor and event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self.place()
        return False

    def place(self) -> None:
        """Put the banners at the anchor's top and the toast near its bottom, centred, within the column."""
        a = self._anchor.geometry()
        width = max(0, min(a.width() - 2 * SPACE.md, COLUMN.width))
        shown = self.problem.isVisibleTo(self.banners) or self.banner.isVisibleTo(self.banners)
        if shown:
            column = self._column
            height = column.heightForWidth(width) if column.hasHeightForWidth() else column.sizeHint().height()
            self.banners.setGeometry(QRect(a.left() + (a.width() - width) // 2, a.top() + SPACE.sm, width, height))
            self.banners.raise_()
        self.banners.setVisible(shown)
        if self.toast.isVisibleTo(self._host):
            hint = self.toast.sizeHint()
            w = min(hint.width(), width)
            h = self.toast.heightForWidth(w) if self.toast.hasHeightForWidth() else hint.height()
            self.toast.setGeometry(QRect(a.left() + (a.width() - w) // 2, a.bottom() - h - SPACE.lg, w, h))
            self.toast.raise_()
