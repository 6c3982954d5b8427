"""Downloads for the Models page: the manager's events as a Qt signal, and the queue panel.

`DownloadWorker` owns a `hub.manager.DownloadManager`. The manager calls back on its
own threads; the worker re-emits each `DownloadEvent` as a signal, which a queued
connection carries to the GUI thread. Commands (add, pause, resume, cancel) run on
one command thread, in order, because cancelling removes partial files from disk.
`DownloadQueuePanel` shows one row per model file (a download again reuses it): progress bar, speed, time left, and
Pause / Resume / Cancel / Load buttons.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.units import format_bytes
from prefill.hub.client import HubClient
from prefill.hub.manager import DownloadEvent, DownloadManager, JobState
from prefill.hub.quants import ModelFiles
from prefill.hub.transfer import RetryPolicy
from prefill.ui.models.hub_words import hub_error_text
from prefill.ui.widgets.plain_text import tooltip

_COLUMNS = ("Model", "State", "Progress", "Speed", "Time left", "")
_ACTIVE = (JobState.QUEUED, JobState.RUNNING)


def format_eta(seconds: float | None) -> str:
    """`1:05:03`, `4:09`, or an empty string when unknown."""
    if seconds is None:
        return ""
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class DownloadWorker(QObject):
    """The download queue, off the GUI thread.

    Args:
        client: the hub client.
        models_dir: the library folder downloads go to.
        max_parallel: downloads running at once.
        policy: retries and timeouts of each transfer (the manager's defaults when None).

    Signals:
        job_changed(object): a `DownloadEvent`, after every change and progress report.
        command_done(str, int): `add`, `pause`, `resume` or `cancel` reached the queue, and
            the job id (a new job's for `add`); a running job settles later, by `event`.
        error(str): a command failed (a sentence for the user).
    """

    job_changed = Signal(object)
    command_done = Signal(str, int)
    error = Signal(str)
    # The same three, emitted on a queue thread; a queued connection re-emits each on the GUI thread.
    _event_from_thread = Signal(object)
    _done_from_thread = Signal(str, int)
    _error_from_thread = Signal(str)

    def __init__(self, client: HubClient, models_dir: Path, max_parallel: int = 1,
                 policy: RetryPolicy | None = None, parent: QObject | None = None):
        super().__init__(parent)
        # Every public signal is emitted on the GUI thread, so a lambda connected to one
        # runs there too (a plain callable would otherwise run on the emitting thread).
        queued = Qt.ConnectionType.QueuedConnection
        self._event_from_thread.connect(self._on_thread_event, queued)
        self._done_from_thread.connect(self._on_thread_done, queued)
        self._error_from_thread.connect(self._on_thread_error, queued)
        self._commands = ThreadPoolExecutor(max_workers=1, thread_name_prefix="download-commands")
        self.manager = DownloadManager(
            client, models_dir, on_event=self._event_from_thread.emit,
            max_parallel=max_parallel, policy=policy or RetryPolicy())
        self._closed = False

    def add(self, repo_id: str, model: ModelFiles, revision: str | None = None) -> None:
        """Queue a model; `command_done("add", job_id)` says its job id."""
        self._command("add", self.manager.add, repo_id, model, revision)

    def pause(self, job_id: int) -> None:
        self._command("pause", self.manager.pause, job_id)

    def resume(self, job_id: int) -> None:
        self._command("resume", self.manager.resume, job_id)

    def cancel(self, job_id: int) -> None:
        self._command("cancel", self.manager.cancel, job_id)

    def close(self, wait: bool = True) -> None:
        """Pause what runs and stop the threads (on quit); paused bytes stay for later."""
        if self._closed:
            return
        self._closed = True
        self._commands.shutdown(wait=wait)
        self.manager.close(wait=wait)

    def _command(self, name: str, fn: Callable[..., object], *args: object) -> None:
        if not self._closed:
            self._commands.submit(self._run_command, name, fn, args)

    def _run_command(self, name: str, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - said to the user, never swallowed
            self._error_from_thread.emit(f"The download queue could not {name} that job: {e!r}.")
            return
        job_id = result if name == "add" else args[0]
        assert isinstance(job_id, int)
        self._done_from_thread.emit(name, job_id)

    @Slot(object)
    def _on_thread_event(self, event: object) -> None:
        self.job_changed.emit(event)

    @Slot(str, int)
    def _on_thread_done(self, name: str, job_id: int) -> None:
        self.command_done.emit(name, job_id)

    @Slot(str)
    def _on_thread_error(self, message: str) -> None:
        self.error.emit(message)


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
        self._buttons: dict[tuple[str, str], dict[str, QPushButton]] = {}
        self._bars: dict[tuple[str, str], QProgressBar] = {}
        self._cells: dict[tuple[str, str], dict[str, QTableWidgetItem]] = {}
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setObjectName("download-queue")
        self.table.setAccessibleName("Downloads")
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(2, 220)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        worker.job_changed.connect(self._on_worker_job_changed)

    def state(self, job_id: int) -> JobState:
        return self.events[job_id].state

    def button(self, job_id: int, name: str) -> QPushButton:
        """A row's `pause`, `resume`, `cancel` or `load` button."""
        return self._buttons[self._row_of[job_id]][name]

    def active_names(self, repo_id: str) -> set[str]:
        """The models of `repo_id` whose download is queued or running now."""
        return {name for (repo, name), job in self._job_of.items()
                if repo == repo_id and self.events[job].state in _ACTIVE}

    @Slot(object)
    def _on_worker_job_changed(self, e: DownloadEvent) -> None:
        before = self.events.get(e.job_id)
        self.events[e.job_id] = e
        key = (e.repo_id, e.model.name)
        if e.job_id not in self._row_of:
            self._row_of[e.job_id] = key
            if key not in self._cells:
                self._add_row(key, e)
            self._job_of[key] = e.job_id  # a file downloaded again: its row follows the new job
        if self._job_of[key] != e.job_id:
            return  # an older job of the same file
        self._show(key, e)
        if before is not None and before.state == e.state:
            return
        if e.state == JobState.DONE:
            self.finished.emit(e)
        elif e.state == JobState.FAILED and e.error is not None:
            self.error.emit(f"Downloading {e.model.name} failed: {hub_error_text(e.error)}.")
        self.state_changed.emit(e)

    def _add_row(self, key: tuple[str, str], e: DownloadEvent) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        name = QTableWidgetItem(e.model.name)
        name.setToolTip(tooltip(f"{e.repo_id}: {', '.join(p.filename for p in e.model.files)}"))
        self.table.setItem(row, 0, name)
        cells = self._cells[key] = {}
        for col, cell_key in ((1, "state"), (3, "speed"), (4, "eta")):
            cells[cell_key] = QTableWidgetItem("")
            self.table.setItem(row, col, cells[cell_key])
        bar = QProgressBar()
        bar.setRange(0, 1000)
        self._bars[key] = bar
        self.table.setCellWidget(row, 2, bar)
        cell = QWidget()
        box = QHBoxLayout(cell)
        box.setContentsMargins(0, 0, 0, 0)
        buttons = {}
        actions = (("pause", "Pause", self.worker.pause), ("resume", "Resume", self.worker.resume),
                   ("cancel", "Cancel", self.worker.cancel), ("load", "Load", self._load))
        for name_, label, slot in actions:
            b = QPushButton(label)
            b.clicked.connect(lambda _c=False, f=slot, k=key: f(self._job_of[k]))
            box.addWidget(b)
            buttons[name_] = b
        self._buttons[key] = buttons
        self.table.setCellWidget(row, 5, cell)
        self.table.setColumnWidth(5, max(self.table.columnWidth(5), cell.sizeHint().width()))
        self.table.resizeRowToContents(row)

    def _show(self, key: tuple[str, str], e: DownloadEvent) -> None:
        cells = self._cells[key]
        p = e.progress
        state = e.state.value
        if e.state == JobState.RUNNING and p is not None and p.stage != "downloading":
            state = p.stage
        cells["state"].setText(state)
        cells["state"].setToolTip(tooltip(str(e.error) if e.error else ""))
        bar = self._bars[key]
        total = p.total if p is not None and p.total else e.model.size
        done = p.done if p is not None else 0
        if e.state == JobState.DONE:
            done = total or done
        bar.setValue(int(1000 * done / total) if total else 0)
        bar.setFormat(f"%p% of {format_bytes(total)}")
        bar.setToolTip(f"{format_bytes(done)} of {format_bytes(total)}")
        running = e.state == JobState.RUNNING and p is not None
        cells["speed"].setText(f"{format_bytes(p.speed)}/s" if running and p and p.speed else "")
        cells["eta"].setText(format_eta(p.eta) if running and p else "")
        b = self._buttons[key]
        b["pause"].setEnabled(e.state in _ACTIVE)
        b["resume"].setEnabled(e.state in (JobState.PAUSED, JobState.FAILED))
        b["cancel"].setEnabled(e.state not in (JobState.DONE, JobState.CANCELLED))
        b["load"].setEnabled(e.state == JobState.DONE and bool(e.paths))

    def _load(self, job_id: int) -> None:
        e = self.events[job_id]
        if e.paths:
            self.load_requested.emit(str(e.paths[0]))
