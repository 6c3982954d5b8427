"""The window's side panels: the chat list and the sidebar shown or hidden (tool bar buttons, shortcuts),
remembered with the splitter's positions; and the tool bar's icons and how it fits the window's width.

The chat column keeps its width when the window changes state (welcome, loading, chat): the side panels
are given a fixed width policy, so text that grows in them (a long model name while loading) is cut or
wrapped in the panel instead of taking width from the chat. A window too narrow for the chat column
beside both panels (900 px) folds the chat list, then the sidebar, instead of squeezing all three, and
unfolds them when it is wide again; a panel the user shows while folded stays, and only what the user hid
is saved as hidden.

The splitter's own saved state does not say which widgets were hidden, so the hidden panels are written
after it, ``<base64 state>|hidden=chats,sidebar``; base64 has no ``|``, so a state saved before this reads
as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QObject, QSize, Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QAction, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QToolButton,
    QWidget,
)

from prefill.store.history_export import ExportFormat
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import COLUMN

PANEL_WIDTHS = {"chats": 220, "sidebar": 300}  # given back to a panel shown again from nothing
FOLD_ORDER = ("chats", "sidebar")  # a window too narrow for the chat column folds the chat list first
HIDDEN_MARK = "|hidden="
MAX_WIDTH = 16777215  # Qt's QWIDGETSIZE_MAX: no maximum
STATUS_MIN = 80  # px a status line in the tool bar keeps while there is room for it at all
PICKER_MIN = 160  # px the model picker keeps however narrow the window

# Tool bar actions: (attribute of the window, the line icon it shows: ui/widgets/icon_shapes.py).
ACTION_ICONS: tuple[tuple[str, str], ...] = (
    ("models_action", "models"),
    ("serve_action", "serve"),
    ("system_action", "system-prompt"),
    ("settings_action", "settings"),
    ("shortcuts_action", "shortcuts"),
    ("cancel_load_action", "close"),
)
PANEL_ICONS = {"chats": "chats", "sidebar": "figures"}


def toolbar_spacer() -> QWidget:
    """An empty widget that takes the tool bar's spare width, pushing what follows to its right end."""
    spacer = QWidget()
    spacer.setObjectName("toolbar-spacer")
    spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    return spacer


class PanelToggles(QObject):
    """Two checkable actions, "Chats" and "Sidebar", that show and hide the window's side panels.

    ``actions[name]`` is the action of "chats" or "sidebar"; ``set_shown(name, shown)`` does what a
    click does; ``state()`` and ``restore(text)`` are the splitter's positions with the hidden panels.
    """

    def __init__(self, splitter: QSplitter, panels: dict[str, QWidget], bar: QToolBar):
        super().__init__(bar)
        self.splitter, self.panels, self.bar = splitter, panels, bar
        words = {"chats": ("Chats", "Show or hide the chat list"),
                 "sidebar": ("Figures", "Show or hide the sidebar with the model's figures")}
        self.actions: dict[str, QAction] = {}
        for name, panel in panels.items():
            panel.setSizePolicy(QSizePolicy.Policy.Preferred, panel.sizePolicy().verticalPolicy())
            text, tip = words[name]
            action = QAction(icon(PANEL_ICONS[name]), text, bar)  # tinted by the theme when drawn
            action.setObjectName(f"toggle-{name}")
            action.setCheckable(True)
            action.setChecked(True)
            action.setToolTip(tip)
            action.toggled.connect(lambda shown, n=name: self.set_shown(n, shown))
            self.actions[name] = action
        if bar.actions():  # the chat list's button at the left end, over the list
            bar.insertAction(bar.actions()[0], self.actions["chats"])
        else:
            bar.addAction(self.actions["chats"])
        bar.addAction(self.actions["sidebar"])
        for i in range(splitter.count()):  # the chat column stretches; the panels keep their width
            splitter.setStretchFactor(i, 0 if splitter.widget(i) in panels.values() else 1)
            splitter.setCollapsible(i, False)  # a panel too narrow is folded (its button), never cut to nothing
        self._user_hidden: set[str] = set()  # what the user hid: saved, kept at every width
        self._folded: set[str] = set()  # what a narrow window hid: shown again when there is room
        self._pinned: set[str] = set()  # shown by the user while folded: kept until there is room for all
        self._auto = False
        splitter.installEventFilter(self)

    def is_shown(self, name: str) -> bool:
        return not self.panels[name].isHidden()

    def set_shown(self, name: str, shown: bool) -> None:
        """Show or hide a panel as the user asked (a button, a shortcut, the saved state). A panel the
        user shows while the window had folded it stays, whatever the width (the chat column gives way)."""
        if self._auto:
            return
        if shown:
            self._user_hidden.discard(name)
            if name in self._folded:
                self._pinned.add(name)
        else:
            self._user_hidden.add(name)
            self._pinned.discard(name)
        self._folded.discard(name)
        self._apply(name, shown)
        self._fold(self.splitter.width())

    def _apply(self, name: str, shown: bool) -> None:
        panel = self.panels[name]
        self._auto = True  # the action's toggled signal says the same again: not the user's choice
        try:
            self.actions[name].setChecked(shown)
        finally:
            self._auto = False
        if shown != self.is_shown(name):
            panel.setVisible(shown)
        if shown:
            index = self.splitter.indexOf(panel)
            sizes = self.splitter.sizes()
            if sizes[index] < 40:  # hidden while collapsed, or never laid out: give it its width back
                middle = max(range(len(sizes)), key=lambda i: self.splitter.widget(i) not in self.panels.values())
                give = PANEL_WIDTHS[name]
                sizes[middle] = max(200, sizes[middle] - give)
                sizes[index] = give
                self.splitter.setSizes(sizes)

    def _fold(self, width: int) -> None:
        """Fold the panels that leave the chat column under its least width (the chat list first, then
        the sidebar; never one the user showed while folded), and unfold them when the window has room."""
        if width <= 0 or not self.splitter.isVisible():  # laid out only once shown
            return
        wanted = [n for n in FOLD_ORDER if n in self.panels and n not in self._user_hidden]

        def panel_width(name: str) -> int:  # its usual width: one dragged wider gives way, never folds
            return PANEL_WIDTHS[name]

        room = width - COLUMN.min_width - self.splitter.handleWidth() * (self.splitter.count() - 1)
        fold: set[str] = set()
        if sum(panel_width(n) for n in wanted) <= room:
            self._pinned.clear()  # room for every panel: the next squeeze folds again
        elif not self._pinned & set(wanted):  # a panel the user showed narrow: the chat column gives way
            for name in wanted:
                fold.add(name)
                if sum(panel_width(n) for n in wanted if n not in fold) <= room:
                    break
        for name in wanted:
            if name in fold and self.is_shown(name):
                self._folded.add(name)
                self._apply(name, False)
            elif name not in fold and name in self._folded:
                self._folded.discard(name)
                self._apply(name, True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.splitter and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self._fold(self.splitter.width())
        return super().eventFilter(watched, event)

    def toggle(self, name: str) -> None:
        self.set_shown(name, not self.is_shown(name))

    def state(self) -> str:
        """The splitter's positions (base64) and, after them, the panels the user hid (not those folded
        for a narrow window)."""
        text = bytes(self.splitter.saveState().toBase64().data()).decode()
        hidden = [name for name in self.panels if name in self._user_hidden]
        return text + (HIDDEN_MARK + ",".join(hidden) if hidden else "")

    def restore(self, text: str) -> None:
        """Put back what `state()` wrote (an unknown panel name in it is ignored)."""
        positions, _, hidden = text.partition(HIDDEN_MARK)
        if positions:
            self.splitter.restoreState(QByteArray.fromBase64(positions.encode()))
        for name in self.panels:
            self.set_shown(name, name not in hidden.split(","))


class StatusLabel(QLabel):
    """A plain-text line for the tool bar (what is loaded) that is cut with "…" when the tool bar is
    short of room, the whole text on hover. Signals: text_set(): its text was set."""

    text_set = Signal()

    def __init__(self, text: str = ""):
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(tooltip(text.strip()))  # a model's name is text from outside: never markup
        self.text_set.emit()

    def minimumSizeHint(self) -> QSize:
        return QSize(STATUS_MIN, super().minimumSizeHint().height())

    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setPen(self.palette().windowText().color())
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        p.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)


class ToolbarFit(QObject):
    """Keeps every tool bar button whole, a word beside its icon, at any window width (900 px too, with a
    model loaded): what gives way first is the status line, cut with "…" down to STATUS_MIN and then out of
    sight; then the model picker, down to PICKER_MIN; then the longest words, for shorter ones (`short`:
    "System prompt" reads "Prompt"; the whole name stays its tooltip and its name for screen readers).
    Nothing falls into the tool bar's overflow menu and no button is left an icon alone."""

    def __init__(self, window: QWidget, bar: QToolBar, picker: QComboBox | None = None,
                 short: Sequence[tuple[QAction | QToolButton, str]] = ()):
        super().__init__(window)
        self.window, self.bar, self.picker = window, bar, picker
        self._picker_min = picker.minimumWidth() if picker is not None else 0
        self._words = [(part, part.text(), word) for part, word in short]  # (button, its whole word, a short one)
        for part, whole, _word in self._words:  # a screen reader says the whole name, whichever word shows
            button = bar.widgetForAction(part) if isinstance(part, QAction) else part
            if button is not None and not button.accessibleName():
                button.setAccessibleName(whole)
        window.installEventFilter(self)
        self._pending = False
        for label in bar.findChildren(StatusLabel):
            label.text_set.connect(self._fit_soon)

    def _fit_soon(self) -> None:
        if not self._pending:
            self._pending = True
            QTimer.singleShot(0, self, self.fit)

    def fit(self) -> None:
        self._pending = False
        self.bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        if self._squeeze(short=False) > 0 and self._words:
            self._squeeze(short=True)

    def _squeeze(self, short: bool) -> int:
        """Lay the bar out with the whole words (or the short ones), cutting the status line and then the
        picker as far as they go; returns the pixels still over the window's width."""
        for part, whole, word in self._words:
            part.setText(word if short else whole)
        labels = self.bar.findChildren(StatusLabel)
        for label in labels:
            label.setMaximumWidth(MAX_WIDTH)
        if self.picker is not None:
            self.picker.setMinimumWidth(self._picker_min)
            self.picker.setMaximumWidth(MAX_WIDTH)
        over = self.bar.sizeHint().width() - self.window.width()
        for label in labels:  # first the status line: cut short, then out of sight
            if over > 0:
                natural = label.sizeHint().width()
                cut = 0 if natural - over < STATUS_MIN // 2 else max(STATUS_MIN, natural - over)
                label.setMaximumWidth(cut)
                over -= natural - cut
        if over > 0 and self.picker is not None:  # then the picker's width, down to its least
            now = max(self.picker.sizeHint().width(), self._picker_min)
            cut = max(PICKER_MIN, now - over)
            self.picker.setMinimumWidth(min(self._picker_min, cut))
            self.picker.setMaximumWidth(cut)
            over -= now - cut
        return over

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window:
            if event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
                self.fit()
            elif event.type() in (QEvent.Type.StyleChange, QEvent.Type.FontChange):
                self._fit_soon()  # a theme's sheet lays the buttons out anew: fitted once that is done
        return super().eventFilter(watched, event)


def set_toolbar_icons(w: QMainWindow, model_loaded: SignalInstance, picker: QComboBox | None = None,
                      short: Sequence[tuple[QAction | QToolButton, str]] = ()) -> ToolbarFit:
    """The line icons of the tool bar's actions (the window's attributes named in ACTION_ICONS), with their
    words beside them at every width: the status line, the picker and the longest words give way instead
    (ToolbarFit; `short`: a button and its shorter word)."""
    for attribute, name in ACTION_ICONS:
        action = getattr(w, attribute, None)
        if isinstance(action, QAction):
            action.setIcon(icon(name))
    fit = ToolbarFit(w, w.findChildren(QToolBar)[0], picker, short)
    model_loaded.connect(lambda _m: fit.fit())  # the model's name beside the picker takes room
    return fit


def ask_export_chat(w: QWidget, menu: HistoryMenu, cid: int) -> None:
    """Export one chat (the chat list's context menu) to a file the user picks: Markdown or JSON."""
    filters = {"Markdown (*.md)": "md", "Prefill JSON (*.json)": "json"}
    path, chosen = QFileDialog.getSaveFileName(w, "Export chat", str(Path.home() / f"chat-{cid}.md"),
                                               ";;".join(filters))
    if path:
        fmt: ExportFormat = "json" if filters.get(chosen) == "json" or path.endswith(".json") else "md"
        menu.export_to(Path(path), fmt, [cid])
