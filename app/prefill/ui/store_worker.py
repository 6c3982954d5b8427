"""History and settings on their own thread: the GUI thread never waits on the disk.

`StoreProxy.call(fn, *args, then=callback)` runs `fn(store, *args)` on the store
thread and hands the result to `callback` back on the GUI thread. Calls run in
the order they were made, so a write followed by a read sees the write.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.store import HistoryStore, SettingsFile
from prefill.store.settings import Settings


class Stores:
    """What the store thread owns: the history database and the settings file."""

    def __init__(self, history: HistoryStore, settings_file: SettingsFile):
        self.history = history
        self.settings_file = settings_file

    def save_settings(self, settings: Settings) -> None:
        self.settings_file.save(settings)


class _StoreWorker(QObject):
    done = Signal(int, object, object)  # call id, result, error (an Exception or None)
    request = Signal(int, object, object)

    def __init__(self, stores: Stores):
        super().__init__()
        self.stores = stores
        self.request.connect(self._on_request)

    @Slot(int, object, object)
    def _on_request(self, call_id: int, fn: Callable[..., Any], args: tuple) -> None:
        try:
            result = fn(self.stores, *args)
        except Exception as e:  # noqa: BLE001 - handed to the caller, never swallowed
            self.done.emit(call_id, None, e)
            return
        self.done.emit(call_id, result, None)

    @Slot()
    def close(self) -> None:
        """The last call: after every queued write, close the database and end the thread."""
        self.stores.history.close()
        QThread.currentThread().quit()


class StoreProxy(QObject):
    """GUI-side handle of the store thread.

    Signals:
        error(str): a store call failed and its caller gave no error handler.
    """

    error = Signal(str)
    _close = Signal()

    def __init__(self, stores: Stores):
        super().__init__()
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callable[[Any], None] | None, Callable[[Exception], None] | None]] = {}
        self.thread = QThread()
        self.thread.setObjectName("prefill-store")
        self._worker = _StoreWorker(stores)
        self._worker.moveToThread(self.thread)
        self._worker.done.connect(self._on_worker_done)
        self._close.connect(self._worker.close)
        self.thread.start()

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        then: Callable[[Any], None] | None = None,
        error: Callable[[Exception], None] | None = None,
    ) -> int:
        call_id = next(self._ids)
        self._callbacks[call_id] = (then, error)
        self._worker.request.emit(call_id, fn, args)
        return call_id

    def history(self, method: str, *args: Any, then: Callable[[Any], None] | None = None) -> int:
        """Call a HistoryStore method by name on the store thread."""
        return self.call(lambda s, *a: getattr(s.history, method)(*a), *args, then=then)

    @Slot(int, object, object)
    def _on_worker_done(self, call_id: int, result: Any, err: Exception | None) -> None:
        then, on_error = self._callbacks.pop(call_id, (None, None))
        if err is not None:
            if on_error is not None:
                on_error(err)
            else:
                self.error.emit(f"Saving or reading the history failed: {err}")
            return
        if then is not None:
            then(result)

    def pending(self) -> int:
        return len(self._callbacks)

    def stop(self) -> None:
        """Finish queued calls, close the database in its own thread, stop the thread."""
        self._close.emit()
        self.thread.wait()
