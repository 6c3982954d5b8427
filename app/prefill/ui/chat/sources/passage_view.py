"""The passage an answer cites: its file, its page, its words with what the answer relied on highlighted.

A click on a mark ([2]) in an answer, or on a source listed under it, opens this window. Everything in
it comes from outside (a file's name and path, the passage's words) and is shown as plain text: the
labels are plain labels, the passage is a plain-text view whose highlight is a character format, never
markup. "Open file" opens the file in the system's viewer, and only a local file that exists (an
imported chat may name a path from another machine, or one made up). The system opens a file by its
kind, and some kinds it runs (a script, a program, a page with scripts): those get "Show folder", which
opens the folder that holds the file, never the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget

from prefill.ui.chat.sources.cited import CitedSource
from prefill.ui.chat.sources.relied_on import relied_on
from prefill.ui.widgets.code_palette import LIGHT_CODE, CodePalette
from prefill.ui.widgets.plain_text import plain_label, tooltip

PASSAGE_NAME = "passage-view"  # the window's object name (tests find it)
# Kinds of document a system opens in a viewer or an editor, never runs: "Open file" opens them.
VIEWED_SUFFIXES = frozenset({".pdf", ".docx", ".txt", ".text", ".log", ".rst", ".org", ".adoc", ".tex", ".md",
                             ".markdown", ".mdown", ".mkd", ".csv", ".tsv"})

Opener = Callable[[QUrl], object]


def local_file(path: str) -> str | None:
    """`path` if it names a file on this machine that exists (absolute; no URL), else None."""
    if not path or "://" in path or not os.path.isabs(path):
        return None
    try:
        return path if os.path.isfile(path) else None
    except (OSError, ValueError):  # a name the system cannot take (a NUL)
        return None


class PassageView(QDialog):
    """One cited passage, read-only.

    Attributes:
        source: The source shown.
        reliance: What is highlighted (the parts the answer relied on, or the whole passage).
        view: The passage's words, as plain text.
        file_name, page, path, note: What the labels say.
        open_button: "Open file" (shown only for a local file that exists).
    """

    def __init__(self, source: CitedSource, answer: str, palette: CodePalette | None = None,
                 parent: QWidget | None = None, opener: Opener | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(PASSAGE_NAME)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(f"Source [{source.n}]: {source.name}")
        self.source = source
        self._opener = opener
        p = palette or LIGHT_CODE
        self.file_name = plain_label(f"[{source.n}] {source.name}")
        self.file_name.setObjectName("passage-file")
        font = self.file_name.font()
        font.setBold(True)
        self.file_name.setFont(font)
        self.page = plain_label(f"Page {source.page}" if source.page is not None else "")
        self.page.setObjectName("passage-page")
        self.page.setVisible(source.page is not None)
        self.path = plain_label(source.file or source.location)
        self.path.setObjectName("passage-path")
        self.path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path.setWordWrap(True)
        self.path.setToolTip(tooltip(source.file or source.location))
        self.view = QPlainTextEdit()
        self.view.setObjectName("passage-text")
        self.view.setReadOnly(True)
        self.view.setUndoRedoEnabled(False)
        self.view.setAccessibleName(f"The passage of source {source.n}, {source.place}")
        self.reliance = relied_on(source.quote, answer, source.n)
        self._fill(p)
        self._local = local_file(source.file)
        self.note = plain_label(self._note())
        self.note.setObjectName("passage-note")
        self.note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self._viewed = self._local is not None and os.path.splitext(self._local)[1].lower() in VIEWED_SUFFIXES
        self.open_button = buttons.addButton("Open file" if self._viewed else "Show folder",
                                             QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.setObjectName("passage-open")
        self.open_button.setToolTip(tooltip(f"Open {source.name} in the system's viewer" if self._viewed else
                                            f"Open the folder that holds {source.name}"))
        self.open_button.clicked.connect(self.open_file)
        self.open_button.setVisible(self._local is not None)
        self.copy_button = buttons.addButton("Copy passage", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.setObjectName("passage-copy")
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(source.quote))
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.file_name)
        lay.addWidget(self.page)
        lay.addWidget(self.path)
        lay.addWidget(self.note)
        lay.addWidget(self.view, 1)
        lay.addWidget(buttons)
        self.resize(640, 460)

    @property
    def highlighted(self) -> list[str]:
        """The highlighted parts of the passage, as written."""
        return [self.source.quote[a:b] for a, b in self.reliance.spans]

    def open_file(self) -> None:
        """Open the passage's file in the system's viewer (only a local file that exists); a kind of file
        the system may run: the folder that holds it."""
        if self._local is not None:
            target = self._local if self._viewed else os.path.dirname(self._local)
            (self._opener or QDesktopServices.openUrl)(QUrl.fromLocalFile(target))

    def _fill(self, palette: CodePalette) -> None:
        """The passage as plain text, each part the answer relied on given the theme's mark colour."""
        text, doc = self.source.quote, self.view.document()
        cursor = QTextCursor(doc)
        cursor.insertText(text)  # plain text: nothing in it is read as markup
        mark = QTextCharFormat()
        mark.setBackground(QColor(palette.mark))
        first = QTextCursor(doc)
        last = max(0, doc.characterCount() - 1)
        for i, (a, b) in enumerate(self.reliance.spans):
            c = QTextCursor(doc)
            c.setPosition(min(a, last))
            c.setPosition(min(b, last), QTextCursor.MoveMode.KeepAnchor)
            c.mergeCharFormat(mark)
            if i == 0:
                first.setPosition(min(a, last))
        self.view.setTextCursor(first)
        self.view.ensureCursorVisible()

    def _note(self) -> str:
        s = self.source
        parts = []
        if not s.quote.strip():
            parts.append("The passage's words were not kept.")
        elif self.reliance.whole:
            parts.append(f"The answer cites this passage as a whole ([{s.n}]): it is highlighted whole.")
        else:
            what = "sentences" if len(self.reliance.spans) > 1 else "sentence"
            parts.append(f"Highlighted: the {what} of the passage the answer's [{s.n}] rests on.")
        if s.cut:
            parts.append(f"A part of a longer passage ({s.length:,} characters; {s.offset:,} before this part).")
        if self._local is None and s.file:
            parts.append("The file is not on this computer now.")
        return " ".join(parts)


class OpenPassage:
    """The one passage view a message keeps open: opening another closes the last; a closed one is forgotten."""

    def __init__(self) -> None:
        self.view: PassageView | None = None

    def show(self, source: CitedSource, answer: str, palette: CodePalette | None, parent: QWidget | None,
             opener: Opener | None = None) -> PassageView:
        if self.view is not None:
            self.view.close()
        view = PassageView(source, answer, palette, parent, opener)
        view.finished.connect(lambda _=0, v=view: self._forget(v))
        view.show()
        self.view = view
        return view

    def _forget(self, view: PassageView) -> None:
        if self.view is view:
            self.view = None
