"""Indexing in view: a bar over the message box while the documents worker reads, cuts and embeds.

It says, in plain words, how far the job is (files, pages, passages, time left) with Stop; at the end,
what was done and, one line each, every file that could not be read, in the reader's own sentence. The
GUI thread only shows what the worker's signals carry: it never waits on the index or the model.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QProgressBar, QPushButton, QToolButton, QVBoxLayout

from prefill.documents.indexer import IndexProgress
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.workers.documents_worker import IndexDone, shown_name

MAX_PROBLEMS_SHOWN = 12  # lines of files not read; the rest are counted


def time_left(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f" · about {max(1, round(seconds))} s left"
    return f" · about {round(seconds / 60)} min left"


def progress_line(p: IndexProgress) -> str:
    """Where a job stands, in words."""
    left = time_left(p.eta_s) if p.files_done < p.files_total else ""
    unread = f" · {p.failed} not readable" if p.failed else ""
    current = f" · {Path(p.current).name}" if p.current and p.files_done < p.files_total else ""
    pages = f" · {p.pages} pages" if p.pages else ""  # only PDFs have pages
    return f"Indexing {p.files_done} of {p.files_total} files{pages} · {p.chunks} passages{unread}{left}{current}"


def done_line(d: IndexDone) -> str:
    """What a job did, in words (a watched collection's changes, a re-index with another embedding model
    headed by what it was)."""
    pages = f"{d.pages} pages, " if d.pages else ""
    head = f"{d.title[:1].upper()}{d.title[1:]}: " if d.title else ""
    if d.reindexed:
        head = f"{head}{', '.join(dict.fromkeys(shown_name(c) for c in d.reindexed))}: "
    if d.cancelled:
        again = ("The rest is indexed at the next start." if d.title else
                 "Attach the same files or folder again to go on where it stopped.")
        return f"{head}Stopped: {d.indexed} files indexed ({pages}{d.chunks} passages) are kept. {again}"
    parts = [f"{head}Indexed {d.indexed} files ({pages}{d.chunks} passages)"]
    if d.unchanged:
        parts.append(f"{d.unchanged} unchanged")
    if d.problems:
        parts.append(f"{len(d.problems)} not readable")
    if d.removed:
        parts.append(f"{d.removed} gone from their folder")
    return " · ".join(parts) + f" · {d.elapsed_s:.1f} s"


class IndexPanel(QFrame):
    """Signals:
        stop_requested(): Stop was clicked (the job in hand stops after its current batch).
    """

    stop_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("index-panel")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.job = 0  # the job shown (0: none)
        self.running = False
        self._stopping = False  # Stop was asked: said until the job ends
        self.line = plain_label()
        self.line.setObjectName("index-line")
        self.line.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setObjectName("index-bar")
        self.bar.setTextVisible(False)
        self.stop = QPushButton("Stop")
        self.stop.setObjectName("index-stop")
        self.stop.setToolTip("Stop indexing after the file in hand; what is done is kept")
        self.stop.clicked.connect(self.stop_requested)
        self.close_button = QToolButton()
        self.close_button.setObjectName("index-close")
        self.close_button.setText("×")
        self.close_button.setAutoRaise(True)
        self.close_button.setAccessibleName("Hide this")
        self.close_button.clicked.connect(self.hide)
        self.problems = plain_label()
        self.problems.setObjectName("index-problems")
        self.problems.setWordWrap(True)
        self.problems.hide()
        top = QHBoxLayout()
        top.addWidget(self.line, 1)
        top.addWidget(self.stop)
        top.addWidget(self.close_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 6, 12, 6)
        lay.addLayout(top)
        lay.addWidget(self.bar)
        lay.addWidget(self.problems)
        self.hide()

    def begin(self, job: int, what: str) -> None:
        """A job was asked for: shown at once, before its first progress."""
        self.job, self.running, self._stopping = job, True, False
        self.line.setText(f"Indexing {what}…")
        self.bar.setRange(0, 0)  # busy until the files are counted
        self.bar.show()
        self.stop.show()
        self.stop.setEnabled(True)
        self.close_button.hide()
        self.problems.hide()
        self.show()

    def on_progress(self, job: int, p: IndexProgress) -> None:
        if job != self.job:
            return
        self.bar.setRange(0, max(1, p.files_total))
        self.bar.setValue(p.files_done)
        self.line.setText(progress_line(p) + (" · stopping…" if self._stopping else ""))

    def on_done(self, job: int, d: IndexDone) -> None:
        if job != self.job:
            return
        self.running = False
        self.bar.setRange(0, 1)
        self.bar.setValue(0 if d.cancelled else 1)
        self.bar.hide()
        self.line.setText(done_line(d))
        shown = [f"Not read: {p}" for p in d.problems[:MAX_PROBLEMS_SHOWN]]
        if len(d.problems) > MAX_PROBLEMS_SHOWN:
            shown.append(f"…and {len(d.problems) - MAX_PROBLEMS_SHOWN} more not read.")
        self.problems.setText("\n".join(shown))
        self.problems.setVisible(bool(shown))
        self.stop.hide()
        self.close_button.show()
        self.show()

    def on_failed(self, job: int, why: str) -> None:
        if job != self.job:
            return
        self.running = False
        self.bar.hide()
        self.line.setText(why)
        self.problems.hide()
        self.stop.hide()
        self.close_button.show()
        self.show()

    def stopping(self) -> None:
        """Stop was asked: said until the job ends."""
        if self.running and not self._stopping:
            self._stopping = True
            self.stop.setEnabled(False)
            self.line.setText(self.line.text() + " · stopping…")
