"""Downloads for the Models page: the manager's events as a Qt signal.

`DownloadWorker` owns a `hub.manager.DownloadManager`. The manager calls back on its
own threads; the worker re-emits each `DownloadEvent` as a signal, which a queued
connection carries to the GUI thread. Commands (add, pause, resume, cancel) run on
one command thread, in order, because cancelling removes partial files from disk.
The queue as a person sees it is `download_list.DownloadQueuePanel`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot

from prefill.hub.client import HubClient
from prefill.hub.manager import DownloadManager
from prefill.hub.quants import ModelFiles
from prefill.hub.transfer import RetryPolicy


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
