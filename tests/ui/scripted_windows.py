"""Windows answered by a scripted model (no llama.cpp), for the fast tier: the real window, its engine
and store threads on a data folder of the test's, with `tests/scripted_backend.py` set as the engine's
backend where a load would set a model."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.main_window import MainWindow
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.scripted_backend import ScriptedBackend
from tests.ui.conftest import OpenWindows, small_settings


class OnThread(QObject):
    """Runs a function on another thread (a worker's), between its other work: `run.emit(fn)`."""

    run = Signal(object)

    def __init__(self, thread: QThread) -> None:
        super().__init__()
        self.moveToThread(thread)
        self.run.connect(self._on_run)

    @Slot(object)
    def _on_run(self, fn: Callable[[], None]) -> None:
        fn()


class Windows(OpenWindows):
    def open(self, data: Path) -> MainWindow:
        settings_file = SettingsFile(data / "settings.json")
        store = StoreProxy(Stores(HistoryStore(data / "history.sqlite3"), settings_file))
        engine = EngineThread()
        return self.keep(MainWindow(small_settings(), store, engine, None), engine, store)


def answering(qtbot, w: MainWindow, backend: ScriptedBackend) -> None:
    """The window's chat answered by `backend` (set on the engine thread, as a load would)."""
    done = threading.Event()
    helper = OnThread(w.engine.thread)

    def put() -> None:
        w.engine.worker.session.backend = backend
        done.set()

    helper.run.emit(put)
    qtbot.waitUntil(done.is_set, timeout=10_000)
    w.stack.setCurrentWidget(w.chat_view)  # as a load shows the chat


def reopen(qtbot, w: MainWindow, cid: int) -> None:
    """Open chat `cid` in the chat view, every row read (as after a model's load)."""
    w.stack.setCurrentWidget(w.chat_view)
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(cid)
    qtbot.waitUntil(lambda: w.controller.complete, timeout=10_000)
