"""The main window without a mouse: Tab's order through its parts, tool bar buttons that take the
keyboard, and accessible names for widgets whose words alone do not say what they are.

Qt's own tab order is the order widgets were made in, and the transcript makes its message widgets
as they scroll into view, so they would land at the end of the chain, after the sidebar. Instead,
Tab walks the window's parts in a fixed order — the message box and Send, the transcript and the
messages on screen with their buttons, the tool bar, the chats, the sidebar, then anything else —
and each part in reading order (top to bottom, then left to right). It is worked out at each key
press, so a message, a button shown on hover or a panel added later is in it at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QApplication,
    QComboBox,
    QDockWidget,
    QStackedWidget,
    QToolBar,
    QToolButton,
    QWidget,
)

from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.transcript.view import ChatView


class WindowParts(Protocol):
    """The parts of the main window that Tab walks and that get accessible names (the window is one;
    a Protocol, so this module needs nothing else of it)."""

    @property
    def input(self) -> InputBox: ...
    @property
    def tool_approval(self) -> QWidget: ...
    @property
    def stack(self) -> QStackedWidget: ...
    @property
    def conversations(self) -> QWidget: ...
    @property
    def sidebar(self) -> QWidget: ...
    @property
    def chat_view(self) -> ChatView: ...
    @property
    def model_combo(self) -> QComboBox: ...


def tabbable(w: QWidget, window: QWidget) -> bool:
    """Whether Tab may stop on `w`: it takes focus by Tab, is shown, enabled, and in this window."""
    return (bool(w.focusPolicy() & Qt.FocusPolicy.TabFocus) and w.isVisible() and w.isEnabled()
            and w.focusProxy() is None and w.window() is window)


def reading_order(widgets: Sequence[QWidget]) -> list[QWidget]:
    """Siblings top to bottom, and left to right within a line (those level with the line's first)."""
    lines: list[list[tuple[QRect, QWidget]]] = []
    for r, w in sorted(((w.geometry(), w) for w in widgets), key=lambda rw: (rw[0].top(), rw[0].x())):
        first = lines[-1][0][0] if lines else None
        if first is not None and first.top() <= r.center().y() <= first.bottom():
            lines[-1].append((r, w))
        else:
            lines.append([(r, w)])
    return [w for line in lines for _, w in sorted(line, key=lambda rw: rw[0].x())]


class FocusOrder:
    """Tab and Shift+Tab over `parts()`, then over whatever else in the window takes Tab. Each part is
    walked as a tree: a widget, then its children in reading order, each with its own children.
    `shown(widget)` may say a stop is out of sight (skipped); `reveal(widget)` is called on each
    widget Tab lands on."""

    def __init__(self, window: QWidget, parts: Callable[[], Sequence[QWidget | None]],
                 shown: Callable[[QWidget], bool] = lambda _w: True,
                 reveal: Callable[[QWidget], None] = lambda _w: None):
        self.window, self.parts, self.shown, self.reveal = window, parts, shown, reveal

    def stops(self, keep: QWidget | None = None) -> list[QWidget]:
        """Every stop in order; `keep` (the focus now) is placed among them even if Tab would not stop on it."""
        seen: set[QWidget] = set()
        order: list[QWidget] = []

        def walk(w: QWidget) -> None:
            if not w.isVisible() or w in seen:
                return
            seen.add(w)
            if w is keep or (tabbable(w, self.window) and self.shown(w)):
                order.append(w)
            for child in reading_order([c for c in w.children() if isinstance(c, QWidget) and not c.isWindow()]):
                walk(child)

        for part in [*self.parts(), self.window]:
            if part is not None:
                walk(part)
        return order

    def move(self, forward: bool) -> bool:
        """Give the focus to the next (or previous) stop; False if the focus is not in the window."""
        current = QApplication.focusWidget()
        if current is None or not self.window.isAncestorOf(current):
            return False
        stops = self.stops(keep=current)
        if current not in stops or len(stops) < 2:
            return False
        target = stops[(stops.index(current) + (1 if forward else -1)) % len(stops)]
        target.setFocus(Qt.FocusReason.TabFocusReason if forward else Qt.FocusReason.BacktabFocusReason)
        self.reveal(target)
        return True


def window_parts(window: QWidget, w: WindowParts) -> list[QWidget | None]:
    """The main window's parts in Tab order."""
    docks = window.findChildren(QDockWidget)
    return [w.input, w.tool_approval, w.stack.currentWidget(), *window.findChildren(QToolBar), w.conversations,
            w.sidebar, *docks]


def _on_screen(w: WindowParts, widget: QWidget) -> bool:
    """A message's widget counts only while it meets the viewport: Tab goes through what is seen."""
    return not w.chat_view.holds(widget) or w.chat_view.shows(widget)


def _reveal(w: WindowParts, widget: QWidget) -> None:
    """Scroll a message that is only partly in view to the top, so the button Tab reached is seen."""
    if w.chat_view.holds(widget):
        w.chat_view.reveal(widget)


def install_focus_order(window: QWidget, w: WindowParts) -> FocusOrder:
    """The main window's FocusOrder (its focusNextPrevChild asks it), and the keyboard access Qt leaves out."""
    name_widgets(window, w)
    return FocusOrder(window, lambda: window_parts(window, w), lambda x: _on_screen(w, x), lambda x: _reveal(w, x))


def name_widgets(window: QWidget, w: WindowParts) -> None:
    """Accessible names where a widget's own text does not say what it is for, and Tab for the tool bar's
    buttons (Qt makes them mouse-only)."""
    for bar in window.findChildren(QToolBar):
        for button in bar.findChildren(QToolButton):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
            if not button.accessibleName():
                button.setAccessibleName(button.text() or button.toolTip())
                button.setAccessibleDescription(button.toolTip())
    w.model_combo.setAccessibleName("Model")
    for area in w.sidebar.findChildren(QAbstractScrollArea):  # a Tab stop so the keys can scroll the figures
        if not area.accessibleName():
            area.setAccessibleName("The model's figures (arrow keys scroll)")
