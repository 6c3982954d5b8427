"""A queue of model downloads run a few at a time, with pause, resume and cancel.

No Qt here: the manager reports through one callback with frozen `DownloadEvent`s,
called from its worker threads. A Qt wrapper re-emits them as a signal (a queued
connection carries them to the GUI thread); a CLI prints them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from prefill.hub.client import HubClient
from prefill.hub.downloader import discard_partial, download_model
from prefill.hub.errors import DownloadStopped, HubError
from prefill.hub.progress import DownloadProgress
from prefill.hub.quants import ModelFiles
from prefill.hub.transfer import RetryPolicy


class JobState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def settled(self) -> bool:
        """Nothing will happen to the job until someone acts on it."""
        return self in (JobState.PAUSED, JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class DownloadEvent:
    """A job's state after a change: what a download row in a UI shows.

    Attributes:
        job_id: the id `DownloadManager.add` returned.
        state: queued, running, paused, done, failed or cancelled.
        progress: bytes, speed and time left (None before the first report).
        error: why it failed (state `failed`), a `HubError` with a readable message.
        paths: the model's files in the library once `done` (`paths[0]` is the one to load).
    """

    job_id: int
    repo_id: str
    model: ModelFiles
    state: JobState
    progress: DownloadProgress | None = None
    error: HubError | None = None
    paths: tuple[Path, ...] = ()


@dataclass
class _Job:
    event: DownloadEvent
    revision: str | None
    stop: threading.Event = field(default_factory=threading.Event)
    cancel_requested: bool = False


class DownloadManager:
    """Runs downloads from a queue on `max_parallel` worker threads.

    Args:
        client: the hub client (endpoint, token).
        models_dir: the library folder the models go to.
        on_event: called (from a worker thread, or the caller's for add/pause/cancel)
            with a `DownloadEvent` after every change and every progress report; a
            job's events come in the order they happened. It must not block: `add`
            and `resume` call it holding the manager's lock.
        max_parallel: downloads running at once.
        policy: retries and timeouts of each transfer.
    """

    def __init__(
        self,
        client: HubClient,
        models_dir: Path,
        on_event: Callable[[DownloadEvent], None] | None = None,
        max_parallel: int = 1,
        policy: RetryPolicy = RetryPolicy(),
    ):
        self.client = client
        self.models_dir = models_dir
        self._on_event = on_event or (lambda _e: None)
        self._policy = policy
        self._jobs: dict[int, _Job] = {}
        self._queue: deque[int] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._next_id = 1
        self._workers = [
            threading.Thread(target=self._work, name=f"download-{i}", daemon=True) for i in range(max(1, max_parallel))
        ]
        for w in self._workers:
            w.start()

    # --- what a UI calls ---------------------------------------------------------
    def add(self, repo_id: str, model: ModelFiles, revision: str | None = None) -> int:
        """Queue a model's download; returns its job id."""
        with self._cond:
            job_id = self._next_id
            self._next_id += 1
            job = _Job(DownloadEvent(job_id, repo_id, model, JobState.QUEUED), revision)
            self._jobs[job_id] = job
            self._queue.append(job_id)
            # Said before a worker can take the job: a job that fails at once must not
            # have its `queued` arrive after its `failed` (the UI would show it queued).
            self._emit(job.event)
            self._cond.notify_all()
        return job_id

    def pause(self, job_id: int) -> None:
        """Stop a job at its next chunk (or take it off the queue); its bytes stay."""
        self._stop(job_id, cancel=False)

    def cancel(self, job_id: int) -> None:
        """Stop a job and delete its partial bytes."""
        self._stop(job_id, cancel=True)

    def resume(self, job_id: int) -> None:
        """Queue a paused or failed job again; it continues from the bytes on disk."""
        with self._cond:
            job = self._jobs[job_id]
            if job.event.state not in (JobState.PAUSED, JobState.FAILED):
                return
            job.stop = threading.Event()
            job.cancel_requested = False
            job.event = replace(job.event, state=JobState.QUEUED, error=None)
            self._queue.append(job_id)
            self._emit(job.event)  # before a worker can take it, as in `add`
            self._cond.notify_all()

    def get(self, job_id: int) -> DownloadEvent:
        with self._cond:
            return self._jobs[job_id].event

    def jobs(self) -> list[DownloadEvent]:
        with self._cond:
            return [j.event for j in self._jobs.values()]

    def wait(self, job_id: int, timeout: float | None = None) -> DownloadEvent:
        """Block until the job is paused, done, failed or cancelled (tests, the CLI)."""
        with self._cond:
            self._cond.wait_for(lambda: self._jobs[job_id].event.state.settled, timeout)
            return self._jobs[job_id].event

    def close(self, wait: bool = True) -> None:
        """Pause what runs and stop the workers (on quit)."""
        with self._cond:
            self._closed = True
            for job in self._jobs.values():
                job.stop.set()
            self._cond.notify_all()
        if wait:
            for w in self._workers:
                w.join()

    # --- the workers -------------------------------------------------------------
    def _stop(self, job_id: int, cancel: bool) -> None:
        with self._cond:
            job = self._jobs[job_id]
            state = job.event.state
            job.cancel_requested = job.cancel_requested or cancel
            if state == JobState.RUNNING:
                job.stop.set()  # the worker settles it
                return
            if state in (JobState.DONE, JobState.CANCELLED) or (state == JobState.PAUSED and not cancel):
                return
            if job_id in self._queue:
                self._queue.remove(job_id)
            job.event = replace(job.event, state=JobState.CANCELLED if cancel else JobState.PAUSED)
            event = job.event
            self._cond.notify_all()
        if cancel:
            discard_partial(self.client, self.models_dir, event.repo_id, event.model)
        self._emit(event)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or bool(self._queue))
                if self._closed:
                    return
                job = self._jobs[self._queue.popleft()]
                job.event = replace(job.event, state=JobState.RUNNING)
                event = job.event
            self._emit(event)
            self._run(job)

    def _run(self, job: _Job) -> None:
        ev = job.event

        def progress(p: DownloadProgress) -> None:
            with self._cond:
                job.event = replace(job.event, progress=p)
                event = job.event
            self._emit(event)

        try:
            paths = download_model(
                self.client, self.models_dir, ev.repo_id, ev.model, job.stop, progress, job.revision, self._policy
            )
            self._settle(job, state=JobState.DONE, paths=tuple(paths))
        except DownloadStopped:
            if job.cancel_requested:
                discard_partial(self.client, self.models_dir, ev.repo_id, ev.model)
                self._settle(job, state=JobState.CANCELLED)
            else:
                self._settle(job, state=JobState.PAUSED)
        except HubError as e:
            self._settle(job, state=JobState.FAILED, error=e)
        except OSError as e:  # a disk or permission problem the transfer did not foresee
            self._settle(job, state=JobState.FAILED, error=HubError(f"download failed: {e.strerror or e}"))

    def _settle(self, job: _Job, **changes: object) -> None:
        with self._cond:
            job.event = replace(job.event, **changes)  # type: ignore[arg-type]
            event = job.event
            self._cond.notify_all()
        self._emit(event)

    def _emit(self, event: DownloadEvent) -> None:
        try:
            self._on_event(event)
        except Exception:  # a broken listener must not kill a download thread
            import logging

            logging.getLogger(__name__).exception("download event listener failed")
