"""Indexing in view: a card over the message box, as wide as it, while the documents worker reads, cuts and
embeds.

Its first line says how far the job is (files, pages, passages, time left), with Stop; a thin bar in the
window's colours under it (the highlight while it runs, green once done, amber when stopped); then a
compact list of the files last dealt with, each with its state (reading, its passages, unchanged, not
read). At the end: what was done and, one row each under a warning mark, every file that could not be
read, in the reader's own sentence. The GUI thread only shows what the worker's signals carry: it never
waits on the index or the model.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.documents.indexer import IndexProgress
from prefill.ui.documents.index_words import FileStates, done_line, progress_line
from prefill.ui.documents.marks import ElidedLabel, IconMark, marked, repolish
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import ICON, SPACE, column_width
from prefill.ui.workers.documents_worker import IndexDone

ROWS = 3  # files in view while a job runs: those just done and the one in hand
PROBLEM_ROWS = 4  # rows of files not read in view before their list scrolls
MAX_PROBLEMS_SHOWN = 200  # past this many, the rest are counted (the collection's view lists each)
PAD = SPACE.md  # at each side, as around the composer (composer/input_box.py)


class _FileRow(QWidget):
    """A file while a job runs: its mark, its name (cut with "…" when long) and its state at the end."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("index-file")
        self.mark = IconMark("document")
        self.name = ElidedLabel()
        self.name.setObjectName("index-file-name")
        self.state = plain_label()
        self.state.setObjectName("index-file-state")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(SPACE.sm)
        lay.addWidget(self.mark)
        lay.addWidget(self.name, 1)
        lay.addWidget(self.state)


class IndexPanel(QWidget):
    """Signals:
        stop_requested(): Stop was clicked (the job in hand stops after its current batch).
    """

    stop_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.job = 0  # the job shown (0: none)
        self.running = False
        self._stopping = False  # Stop was asked: said until the job ends
        self.states = FileStates(ROWS)
        self.card = QFrame()
        self.card.setObjectName("index-panel")
        self.mark = IconMark("document")
        self.line = plain_label()
        self.line.setObjectName("index-line")
        self.line.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setObjectName("index-bar")
        self.bar.setTextVisible(False)
        self.bar.setProperty("state", "running")
        self.stop = QToolButton()
        self.stop.setObjectName("index-stop")
        self.stop.setIcon(icon("stop"))
        self.stop.setIconSize(QSize(ICON.inline, ICON.inline))
        self.stop.setText("Stop")
        self.stop.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.stop.setToolTip("Stop indexing after the file in hand; what is done is kept")
        self.stop.setAccessibleName("Stop indexing")
        self.stop.clicked.connect(self.stop_requested)
        self.close_button = QToolButton()
        self.close_button.setObjectName("index-close")
        self.close_button.setIcon(icon("close"))
        self.close_button.setIconSize(QSize(ICON.inline, ICON.inline))
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Hide")
        self.close_button.setAccessibleName("Hide this")
        self.close_button.clicked.connect(self.hide)
        self.files = QWidget()
        self.files.setObjectName("index-files")
        rows = QVBoxLayout(self.files)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(SPACE.xxs)
        self.file_rows = [_FileRow() for _ in range(ROWS)]
        for row in self.file_rows:
            rows.addWidget(row)
        self.problems = QScrollArea()
        self.problems.setObjectName("index-problems")
        self.problems.setWidgetResizable(True)
        self.problems.setFrameShape(QFrame.Shape.NoFrame)
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.problems.hide()
        self._problem_labels: list[QLabel] = []
        top = QHBoxLayout()
        top.setSpacing(SPACE.sm)
        top.addWidget(self.mark, 0, Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.line, 1)
        top.addWidget(self.stop, 0, Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignVCenter)
        inner = QVBoxLayout(self.card)
        inner.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.md)
        inner.setSpacing(SPACE.sm)
        inner.addLayout(top)
        inner.addWidget(self.bar)
        inner.addWidget(self.files)
        inner.addWidget(self.problems)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(PAD, SPACE.xs, PAD, 0)
        outer.addStretch(0)  # what the column leaves past its width, on either side
        outer.addWidget(self.card, 1)
        outer.addStretch(0)
        self.hide()

    def resizeEvent(self, e: QResizeEvent) -> None:
        super().resizeEvent(e)
        self.card.setMaximumWidth(column_width(max(1, e.size().width() - 2 * PAD)))  # as wide as the composer
        self._fit_problems()

    # --- what the room calls ----------------------------------------------------------------------
    def begin(self, job: int, what: str) -> None:
        """A job was asked for: shown at once, before its first progress."""
        self.job, self.running, self._stopping = job, True, False
        self.states.clear()
        self._say("document", f"Indexing {what}…")
        self._bar("running", 0, 0)  # busy until the files are counted
        self._show_files()
        self.stop.show()
        self.stop.setEnabled(True)
        self.close_button.hide()
        self._set_problems(())
        self.show()

    def on_progress(self, job: int, p: IndexProgress) -> None:
        if job != self.job:
            return
        self._bar("running", max(1, p.files_total), p.files_done)
        self.line.setText(progress_line(p) + (" · stopping…" if self._stopping else ""))
        self.states.follow(p)
        self._show_files()

    def on_done(self, job: int, d: IndexDone) -> None:
        if job != self.job:
            return
        self.running = False
        self._say("pause" if d.cancelled else "warning" if d.problems else "check", done_line(d))
        if d.cancelled:  # where it stopped, in amber
            if self.bar.maximum() == 0:
                self._bar("stopped", 1, 0)
            else:
                self._bar("stopped", self.bar.maximum(), self.bar.value())
        else:
            self._bar("done", 1, 1)
        self.files.hide()
        self._set_problems(d.problems)
        self._ended()

    def on_unchanged(self, job: int, text: str) -> None:
        """A look at a collection, clicked for, found nothing changed: said in `text`."""
        if job != self.job:
            return
        self.running = False
        self._say("check", text)
        self._bar("done", 1, 1)
        self.files.hide()
        self._set_problems(())
        self._ended()

    def on_failed(self, job: int, why: str) -> None:
        if job != self.job:
            return
        self.running = False
        self._say("warning", why)
        self.bar.hide()
        self.files.hide()
        self._set_problems(())
        self._ended()

    def stopping(self) -> None:
        """Stop was asked: said until the job ends."""
        if self.running and not self._stopping:
            self._stopping = True
            self.stop.setEnabled(False)
            self.line.setText(self.line.text() + " · stopping…")

    def problem_texts(self) -> list[str]:
        """The rows of files not read, as shown."""
        return [label.text() for label in self._problem_labels]

    # --- parts --------------------------------------------------------------------------------------
    def _say(self, mark: str, text: str) -> None:
        self.mark.set_name(mark)
        self.line.setText(text)

    def _bar(self, state: str, maximum: int, value: int) -> None:
        self.bar.setRange(0, maximum)
        self.bar.setValue(value)
        if self.bar.property("state") != state:
            self.bar.setProperty("state", state)
            repolish(self.bar)
        self.bar.show()

    def _ended(self) -> None:
        self.stop.hide()
        self.close_button.show()
        self.show()

    def _show_files(self) -> None:
        rows = self.states.rows
        for i, row in enumerate(self.file_rows):
            if i < len(rows):
                state = rows[i]
                row.mark.set_name(state.mark)
                row.name.set_full(state.name)
                row.name.setToolTip(tooltip(state.path))
                row.state.setText(state.words)
                row.show()
            else:
                row.hide()
        self.files.setVisible(bool(rows))

    def _set_problems(self, problems: tuple[str, ...]) -> None:
        shown = list(problems[:MAX_PROBLEMS_SHOWN])
        if len(problems) > MAX_PROBLEMS_SHOWN:
            shown.append(f"…and {len(problems) - MAX_PROBLEMS_SHOWN} more not read (Documents > Collections… "
                         "lists each).")
        body = QWidget()
        body.setObjectName("index-problems-body")
        col = QVBoxLayout(body)
        col.setContentsMargins(0, 0, SPACE.sm, 0)
        col.setSpacing(SPACE.xs)
        self._problem_labels = []
        for text in shown:
            label = plain_label(text)
            label.setObjectName("index-problem")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._problem_labels.append(label)
            col.addLayout(marked("warning", label))
        col.addStretch(1)
        self.problems.setWidget(body)  # the one before goes with its rows
        self.problems.setVisible(bool(shown))
        self._fit_problems()

    def _fit_problems(self) -> None:
        """The rows of files not read take the height they need, up to PROBLEM_ROWS lines; past that they
        scroll."""
        body = self.problems.widget()
        if body is None or not self._problem_labels:
            return
        most = PROBLEM_ROWS * (self.fontMetrics().lineSpacing() + SPACE.xs)
        width = self.problems.viewport().width() if self.problems.isVisible() else self.card.width() - PAD
        lay = body.layout()
        need = lay.totalHeightForWidth(width) if lay is not None and lay.hasHeightForWidth() else -1
        self.problems.setFixedHeight(min(most, need if need > 0 else body.sizeHint().height()))
