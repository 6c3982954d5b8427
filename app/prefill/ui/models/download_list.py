"""The download queue on the Models page: one row per model file, newest last, in a list that scrolls.

Each row says the model, its state, a thin progress bar, the bytes on disk against the whole ("30.0 MiB
of 93.8 MiB · 32%", the bytes kept from an earlier run included), the speed and time left, and, while
the hub sends nothing, for how long; and offers Pause / Resume / Cancel / Load for what its state
allows. Rows are small widgets (a queue holds a handful), in a scroll area that keeps its size.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.units import format_bytes
from prefill.hub.manager import DownloadEvent, JobState
from prefill.hub.progress import DownloadProgress
from prefill.ui.models.download_worker import DownloadWorker, format_eta
from prefill.ui.models.hub_words import hub_error_text
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import SPACE

ACTIVE = (JobState.QUEUED, JobState.RUNNING)
STALL_SAID_AFTER = 2.0  # seconds without a byte before a row says the hub is silent
_STATE_WORDS = {JobState.QUEUED: "Waiting", JobState.RUNNING: "Downloading", JobState.PAUSED: "Paused",
                JobState.DONE: "Done", JobState.FAILED: "Failed", JobState.CANCELLED: "Cancelled"}
_STAGE_WORDS = {"checking": "Checking what is on disk", "verifying": "Checking the file (SHA-256)",
                "done": "Done"}


def progress_words(e: DownloadEvent) -> tuple[str, int]:
    """The row's line under the bar, and the bar's value out of 1000."""
    p: DownloadProgress | None = e.progress
    total = p.total if p is not None and p.total else e.model.size
    done = p.done if p is not None else 0
    if e.state == JobState.DONE:
        done = total or done
    share = int(1000 * done / total) if total else 0
    parts = [f"{format_bytes(done)} of {format_bytes(total)}" + (f" · {share // 10}%" if total else "")]
    if e.state == JobState.RUNNING and p is not None:
        if p.stage == "downloading" and p.idle >= STALL_SAID_AFTER:
            parts.append(f"no data from the hub for {p.idle:.0f} s (Pause keeps what is here)")
        elif p.stage == "downloading" and p.speed > 0:
            parts.append(f"{format_bytes(p.speed)}/s")
            if p.eta is not None:
                parts.append(f"{format_eta(p.eta)} left")
    return " · ".join(parts), share


class DownloadRow(QFrame):
    """One model file's row: name, state, bar, words, and its four buttons."""

    def __init__(self, e: DownloadEvent, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("download-row")
        self.name = plain_label(e.model.name)
        self.name.setObjectName("download-name")
        self.name.setToolTip(tooltip(f"{e.repo_id}: {', '.join(p.filename for p in e.model.files)}"))
        self.state = plain_label("")
        self.state.setObjectName("download-state")
        self.bar = QProgressBar()
        self.bar.setObjectName("download-bar")
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.words = plain_label("")
        self.words.setObjectName("download-status")
        self.buttons = {name: QPushButton(label) for name, label in
                        (("pause", "Pause"), ("resume", "Resume"), ("cancel", "Cancel"), ("load", "Load"))}
        top = QHBoxLayout()
        top.addWidget(self.name, 1)
        top.addWidget(self.state)
        bottom = QHBoxLayout()
        bottom.addWidget(self.words, 1)
        for b in self.buttons.values():
            bottom.addWidget(b)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        layout.setSpacing(SPACE.xs)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addLayout(bottom)

    def show_job(self, e: DownloadEvent) -> None:
        p = e.progress
        state = _STATE_WORDS[e.state]
        if e.state == JobState.RUNNING and p is not None and p.stage != "downloading":
            state = _STAGE_WORDS.get(p.stage, state)
        self.state.setText(state)
        self.state.setToolTip(tooltip(str(e.error) if e.error else ""))
        words, share = progress_words(e)
        self.words.setText(words)
        self.bar.setValue(share)
        self.bar.setAccessibleName(words)
        allowed = {"pause": e.state in ACTIVE, "resume": e.state in (JobState.PAUSED, JobState.FAILED),
                   "cancel": e.state not in (JobState.DONE, JobState.CANCELLED),
                   "load": e.state == JobState.DONE and bool(e.paths)}
        for name, b in self.buttons.items():
            b.setEnabled(allowed[name])
            b.setVisible(allowed[name])


class DownloadQueuePanel(QWidget):
    """The queue: one row per model file, newest last.

    Downloading a file again (after it finished, failed or was cancelled) reuses its row,
    which then follows the newest job; an older job's late events no longer touch it.

    Signals:
        load_requested(str): Load was clicked on a finished download (the path to load).
        finished(object): a job reached `done` (its last `DownloadEvent`).
        error(str): a job failed; the sentence says why.
        state_changed(object): a row's job reached a new state, or showed its first (its
            `DownloadEvent`); progress reports within a state do not emit it.
    """

    load_requested = Signal(str)
    finished = Signal(object)
    error = Signal(str)
    state_changed = Signal(object)

    def __init__(self, worker: DownloadWorker, parent: QWidget | None = None):
        super().__init__(parent)
        self.worker = worker
        self.events: dict[int, DownloadEvent] = {}
        self._row_of: dict[int, tuple[str, str]] = {}  # job id -> its row's (repo, model name)
        self._job_of: dict[tuple[str, str], int] = {}  # row -> the job it shows now
        self.rows: dict[tuple[str, str], DownloadRow] = {}
        self.empty = plain_label("Nothing is downloading. Choose a file under Discover and press Download; "
                                 "downloads go on while you chat.")
        self.empty.setObjectName("section-note")
        self.empty.setWordWrap(True)
        inner = QWidget()
        self._list = QVBoxLayout(inner)
        self._list.setContentsMargins(0, 0, 0, 0)
        self._list.setSpacing(SPACE.sm)
        self._list.addWidget(self.empty)
        self._list.addStretch(1)
        self.scroll_area = QScrollArea()
        self.scroll_area.setObjectName("download-queue")
        self.scroll_area.setAccessibleName("Downloads")
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setWidget(inner)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scroll_area)
        worker.job_changed.connect(self._on_worker_job_changed)

    def state(self, job_id: int) -> JobState:
        return self.events[job_id].state

    def row(self, job_id: int) -> DownloadRow:
        return self.rows[self._row_of[job_id]]

    def row_count(self) -> int:
        return len(self.rows)

    def button(self, job_id: int, name: str) -> QPushButton:
        """A row's `pause`, `resume`, `cancel` or `load` button."""
        return self.row(job_id).buttons[name]

    def active_names(self, repo_id: str) -> set[str]:
        """The models of `repo_id` whose download is queued or running now."""
        return {name for (repo, name), job in self._job_of.items()
                if repo == repo_id and self.events[job].state in ACTIVE}

    def active_count(self) -> int:
        return sum(1 for job in self._job_of.values() if self.events[job].state in ACTIVE)

    @Slot(object)
    def _on_worker_job_changed(self, e: DownloadEvent) -> None:
        before = self.events.get(e.job_id)
        self.events[e.job_id] = e
        key = (e.repo_id, e.model.name)
        if e.job_id not in self._row_of:
            self._row_of[e.job_id] = key
            if key not in self.rows:
                self._add_row(key, e)
            self._job_of[key] = e.job_id  # a file downloaded again: its row follows the new job
        if self._job_of[key] != e.job_id:
            return  # an older job of the same file
        self.rows[key].show_job(e)
        if before is not None and before.state == e.state:
            return
        if e.state == JobState.DONE:
            self.finished.emit(e)
        elif e.state == JobState.FAILED and e.error is not None:
            self.error.emit(f"Downloading {e.model.name} failed: {hub_error_text(e.error)}.")
        self.state_changed.emit(e)

    def _add_row(self, key: tuple[str, str], e: DownloadEvent) -> None:
        row = DownloadRow(e)
        actions = (("pause", self.worker.pause), ("resume", self.worker.resume), ("cancel", self.worker.cancel),
                   ("load", self._load))
        for name, slot in actions:
            row.buttons[name].clicked.connect(lambda _c=False, f=slot, k=key: f(self._job_of[k]))
        self.rows[key] = row
        self.empty.hide()
        self._list.insertWidget(self._list.count() - 1, row)  # above the stretch: newest last

    def _load(self, job_id: int) -> None:
        e = self.events[job_id]
        if e.paths:
            self.load_requested.emit(str(e.paths[0]))
