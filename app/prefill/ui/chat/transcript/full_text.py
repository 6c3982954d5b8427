"""The whole text of a message too long to show as rich text: a plain-text viewer.

A message renders the first part of a long text and folds the rest (``ui/markdown/fold.py``);
its "Show all" opens this window. A QPlainTextEdit lays out only the lines in view, so megabytes
cost it little, but it lays out each line whole: a line longer than VIEW_LINE characters is shown
broken into lines of that length (the text itself is not changed, and Copy all copies it as
written). The text goes in LOAD_CHUNK characters at a time, one piece per turn of the event loop,
so the window answers while a long text fills the viewer.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget

from prefill.ui.markdown.fold import break_long_lines
from prefill.ui.widgets.plain_text import plain_label

VIEW_LINE = 1_000  # characters of one line shown before a display-only line break
LOAD_CHUNK = 128 * 1024  # characters put into the viewer per turn of the event loop


class FullTextViewer(QDialog):
    """A message's whole text, as written, in a read-only plain-text view.

    Attributes:
        text: The text, as written (what Copy all copies).
        view: The plain-text view (long lines broken for display, see the module docstring).

    Signals:
        loaded(): the whole text is in the view.
    """

    loaded = Signal()

    def __init__(self, text: str, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("full-text-viewer")
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.text = text
        self.view = QPlainTextEdit()
        self.view.setObjectName("full-text")
        self.view.setReadOnly(True)
        self.view.setUndoRedoEnabled(False)
        self.view.setAccessibleName(title)
        lines = text.count("\n") + 1
        note = f"{len(text):,} characters on {lines:,} line{'s' if lines != 1 else ''}"
        if max(map(len, text.split("\n"))) > VIEW_LINE:
            note += f"; lines longer than {VIEW_LINE:,} characters are shown broken (Copy all copies them whole)"
        self.note = plain_label(note + ".")
        self.note.setObjectName("full-text-note")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy all", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.setObjectName("full-text-copy")
        self.copy_button.clicked.connect(self.copy_all)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.view, 1)
        lay.addWidget(buttons)
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            room = screen.availableSize()
            self.resize(room.width() * 2 // 3, room.height() * 2 // 3)
        self._at = 0  # characters of the text already in the view
        self._run = 0  # characters of the current line shown since its last (display) break
        self._loader = QTimer(self)
        self._loader.setInterval(0)
        self._loader.timeout.connect(self._on_loader_timeout)
        self._loader.start()

    @property
    def is_loaded(self) -> bool:
        """Whether the whole text is in the view."""
        return not self._loader.isActive()

    def copy_all(self) -> None:
        """Put the whole text, as written, on the clipboard."""
        QGuiApplication.clipboard().setText(self.text)

    def _on_loader_timeout(self) -> None:
        piece = self.text[self._at : self._at + LOAD_CHUNK]
        self._at += len(piece)
        shown, self._run = break_long_lines(piece, VIEW_LINE, self._run)
        cursor = QTextCursor(self.view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(shown)
        if self._at >= len(self.text):
            self._loader.stop()
            self.view.moveCursor(QTextCursor.MoveOperation.Start)
            self.loaded.emit()



class OpenViewer:
    """The one viewer a part of the window keeps open: Show all again closes the last one and shows
    the text as it is now (a streaming answer's, say); a closed viewer is forgotten."""

    def __init__(self) -> None:
        self.viewer: FullTextViewer | None = None

    def show(self, text: str, title: str, parent: QWidget | None) -> FullTextViewer:
        if self.viewer is not None:
            self.viewer.close()
        viewer = FullTextViewer(text, title, parent)
        viewer.finished.connect(lambda _=0, v=viewer: self._forget(v))
        viewer.show()
        self.viewer = viewer
        return viewer

    def _forget(self, viewer: FullTextViewer) -> None:
        if self.viewer is viewer:
            self.viewer = None
