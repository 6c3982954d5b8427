"""One-shot jobs on a thread pool whose results come back to the GUI thread by signal.

`PoolJobs.run(fn, *args, then=on_result, error=on_error)` runs `fn(*args)` on a
`QThreadPool` thread; the result (or the exception) crosses back through a queued
signal and the callback runs on the GUI thread. Nothing a job raises is swallowed:
it reaches `error`, or the `failed` signal when the caller gave no handler.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

OnResult = Callable[[Any], None]
OnError = Callable[[Exception], None]


class _Relay(QObject):
    """Lives on the GUI thread; a pool thread emits on it, so delivery is queued."""

    done = Signal(int, object, object)  # job id, result, exception or None


class _Job(QRunnable):
    def __init__(self, relay: _Relay, job_id: int, fn: Callable[..., Any], args: tuple[Any, ...]):
        super().__init__()
        self._relay, self._job_id, self._fn, self._args = relay, job_id, fn, args

    def run(self) -> None:
        try:
            result, error = self._fn(*self._args), None
        except Exception as e:  # noqa: BLE001 - handed to the caller, never swallowed
            result, error = None, e
        try:
            self._relay.done.emit(self._job_id, result, error)
        except RuntimeError:  # the page was destroyed meanwhile: nobody is left to tell
            pass


class PoolJobs(QObject):
    """Runs callables on its own thread pool and calls back on the GUI thread.

    Signals:
        failed(object): a job raised and its caller gave no `error` handler.
    """

    failed = Signal(object)

    def __init__(self, max_threads: int = 4, parent: QObject | None = None):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_relay_done, Qt.ConnectionType.QueuedConnection)
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[OnResult | None, OnError | None]] = {}

    def run(
        self,
        fn: Callable[..., Any],
        *args: Any,
        then: OnResult | None = None,
        error: OnError | None = None,
    ) -> int:
        """Start `fn(*args)` on the pool; returns the job's id."""
        job_id = next(self._ids)
        self._pending[job_id] = (then, error)
        self._pool.start(_Job(self._relay, job_id, fn, args))
        return job_id

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    def close(self, timeout_ms: int = -1) -> bool:
        """Drop jobs not yet started and wait for the running ones (on quit)."""
        self._pool.clear()
        return bool(self._pool.waitForDone(timeout_ms))

    @Slot(int, object, object)
    def _on_relay_done(self, job_id: int, result: object, error: object) -> None:
        then, on_error = self._pending.pop(job_id, (None, None))
        if isinstance(error, Exception):
            if on_error is not None:
                on_error(error)
            else:
                self.failed.emit(error)
        elif then is not None:
            then(result)
