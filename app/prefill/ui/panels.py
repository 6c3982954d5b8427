"""The window's side panels: the chat list and the sidebar shown or hidden (tool bar buttons, shortcuts),
remembered with the splitter's positions, and the icons of the tool bar.

The chat column keeps its width when the window changes state (welcome, loading, chat): the side panels
are given a fixed width policy, so text that grows in them (a long model name while loading) is cut or
wrapped in the panel instead of taking width from the chat.

The splitter's own saved state does not say which widgets were hidden, so the hidden panels are written
after it, ``<base64 state>|hidden=chats,sidebar``; base64 has no ``|``, so a state saved before this reads
as it always did.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QObject, QRectF, QSize, Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPaintEvent, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QSplitter,
    QStyle,
    QToolBar,
    QWidget,
)

from prefill.store.history_export import ExportFormat
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.widgets.plain_text import tooltip

PANEL_WIDTHS = {"chats": 220, "sidebar": 300}  # given back to a panel shown again from nothing
HIDDEN_MARK = "|hidden="
MAX_WIDTH = 16777215  # Qt's QWIDGETSIZE_MAX: no maximum
STATUS_MIN = 80  # px a status line in the tool bar keeps when the window is narrow

# Tool bar actions: (attribute of the window, freedesktop icon name, Qt's own icon when the theme has none).
ACTION_ICONS: tuple[tuple[str, str, QStyle.StandardPixmap], ...] = (
    ("models_action", "folder-download", QStyle.StandardPixmap.SP_DriveHDIcon),
    ("serve_action", "network-server", QStyle.StandardPixmap.SP_DriveNetIcon),
    ("system_action", "document-edit", QStyle.StandardPixmap.SP_FileDialogDetailedView),
    ("settings_action", "preferences-system", QStyle.StandardPixmap.SP_FileDialogInfoView),
    ("shortcuts_action", "input-keyboard", QStyle.StandardPixmap.SP_DialogHelpButton),
    ("cancel_load_action", "process-stop", QStyle.StandardPixmap.SP_BrowserStop),
)


def themed_icon(name: str, fallback: QStyle.StandardPixmap) -> QIcon:
    """The platform theme's icon `name`, else the style's own (drawn by Qt: never an empty square)."""
    icon = QIcon.fromTheme(name)
    if icon.isNull():
        icon = QApplication.style().standardIcon(fallback)
    return icon


def panel_icon(side: str, colour: QColor) -> QIcon:
    """A window outline with its left (chats) or right (sidebar) strip filled: drawn here, as no icon
    theme names these."""
    pixmap = QPixmap(32, 32)
    pixmap.fill(Qt.GlobalColor.transparent)
    p = QPainter(pixmap)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = p.pen()
    pen.setColor(colour)
    pen.setWidthF(2.5)
    p.setPen(pen)
    outline = QRectF(3, 6, 26, 20)
    p.drawRoundedRect(outline, 3, 3)
    strip = QRectF(3, 6, 9, 20) if side == "chats" else QRectF(20, 6, 9, 20)
    p.fillRect(strip, colour)
    p.end()
    return QIcon(pixmap)


class PanelToggles(QObject):
    """Two checkable actions, "Chats" and "Sidebar", that show and hide the window's side panels.

    ``actions[name]`` is the action of "chats" or "sidebar"; ``set_shown(name, shown)`` does what a
    click does; ``state()`` and ``restore(text)`` are the splitter's positions with the hidden panels.
    """

    def __init__(self, splitter: QSplitter, panels: dict[str, QWidget], bar: QToolBar):
        super().__init__(bar)
        self.splitter, self.panels, self.bar = splitter, panels, bar
        colour = bar.palette().windowText().color()
        words = {"chats": ("Chats", "Show or hide the chat list"),
                 "sidebar": ("Figures", "Show or hide the sidebar with the model's figures")}
        self.actions: dict[str, QAction] = {}
        for name, panel in panels.items():
            panel.setSizePolicy(QSizePolicy.Policy.Preferred, panel.sizePolicy().verticalPolicy())
            text, tip = words[name]
            action = QAction(panel_icon(name, colour), text, bar)
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
        bar.installEventFilter(self)  # a theme switch redraws the icons in its text colour

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.bar and event.type() == QEvent.Type.PaletteChange:
            colour = self.bar.palette().windowText().color()
            for name, action in self.actions.items():
                action.setIcon(panel_icon(name, colour))
        return super().eventFilter(watched, event)

    def is_shown(self, name: str) -> bool:
        return not self.panels[name].isHidden()

    def set_shown(self, name: str, shown: bool) -> None:
        panel = self.panels[name]
        if shown == self.is_shown(name):
            self.actions[name].setChecked(shown)
            return
        panel.setVisible(shown)
        self.actions[name].setChecked(shown)
        if shown:
            index = self.splitter.indexOf(panel)
            sizes = self.splitter.sizes()
            if sizes[index] < 40:  # hidden while collapsed, or never laid out: give it its width back
                middle = max(range(len(sizes)), key=lambda i: self.splitter.widget(i) not in self.panels.values())
                give = PANEL_WIDTHS[name]
                sizes[middle] = max(200, sizes[middle] - give)
                sizes[index] = give
                self.splitter.setSizes(sizes)

    def toggle(self, name: str) -> None:
        self.set_shown(name, not self.is_shown(name))

    def state(self) -> str:
        """The splitter's positions (base64) and, after them, the hidden panels."""
        text = bytes(self.splitter.saveState().toBase64().data()).decode()
        hidden = [name for name in self.panels if not self.is_shown(name)]
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
    """Words beside the tool bar's icons while the window is wide enough for them, the icons alone
    (their words on hover and for screen readers) when it is not, and a status line cut short if even
    that is too wide, so no button falls into the tool bar's overflow menu at 900 px."""

    def __init__(self, window: QWidget, bar: QToolBar):
        super().__init__(window)
        self.window, self.bar = window, bar
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
        labels = self.bar.findChildren(StatusLabel)
        for label in labels:
            label.setMaximumWidth(MAX_WIDTH)
        self.bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        if self.bar.sizeHint().width() > self.window.width():
            self.bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        over = self.bar.sizeHint().width() - self.window.width() + 8  # the bar's own margins
        for label in labels:
            if over > 0:
                cut = max(STATUS_MIN, label.sizeHint().width() - over)
                over -= label.sizeHint().width() - cut
                label.setMaximumWidth(cut)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self.fit()
        return super().eventFilter(watched, event)


def set_toolbar_icons(w: QMainWindow, model_loaded: SignalInstance) -> ToolbarFit:
    """Icons for the tool bar's actions (the window's attributes named in ACTION_ICONS), from the platform
    theme or Qt's own, with their words beside them where the window has room."""
    for attribute, name, fallback in ACTION_ICONS:
        action = getattr(w, attribute, None)
        if isinstance(action, QAction):
            action.setIcon(themed_icon(name, fallback))
    fit = ToolbarFit(w, w.findChildren(QToolBar)[0])
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
