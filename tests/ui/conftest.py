"""A real main window on temp history and settings files, with the real engine thread."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from prefill.engine.local.kv_disk import KvDiskCache
from prefill.store import HistoryStore, SettingsFile
from prefill.store.app_settings import Settings
from prefill.ui.main_window import MainWindow
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy, Stores

LOAD_TIMEOUT = 60_000
ANSWER_TIMEOUT = 120_000


class OpenWindows:
    """The windows a test opened, each with its engine and store threads, closed together."""

    def __init__(self, qtbot):
        self.qtbot = qtbot
        self.opened: list[tuple[MainWindow, EngineThread, StoreProxy]] = []

    def keep(self, w: MainWindow, engine: EngineThread, store: StoreProxy) -> MainWindow:
        """`w` shown, and closed with the others."""
        self.qtbot.addWidget(w)
        w.show()
        self.opened.append((w, engine, store))
        return w

    def close(self, w: MainWindow) -> None:
        for i, (win, engine, store) in enumerate(self.opened):
            if win is w:
                w.close()
                engine.stop()
                store.stop()
                del self.opened[i]
                return

    def close_all(self) -> None:
        for w, _, _ in list(self.opened):
            self.close(w)


class App(OpenWindows):
    """Builds windows on one data folder, as restarting the app would."""

    def __init__(self, qtbot, data: Path, bundled: Path):
        super().__init__(qtbot)
        self.data, self.bundled = data, bundled

    def open(self, settings: Settings | None = None, disk: KvDiskCache | None = None) -> MainWindow:
        settings_file = SettingsFile(self.data / "settings.json")
        if settings is None:
            settings = settings_file.load()
        store = StoreProxy(Stores(HistoryStore(self.data / "history.sqlite3"), settings_file))
        engine = EngineThread(disk)
        return self.keep(MainWindow(settings, store, engine, self.bundled), engine, store)


@pytest.fixture
def app(qtbot, tmp_path: Path, smollm2: Path):
    a = App(qtbot, tmp_path, smollm2)
    yield a
    a.close_all()


def small_settings(n_ctx: int = 2048, policy: str = "rolling_window", max_tokens: int = 40) -> Settings:
    s = Settings()
    return replace(
        s,
        # One llama.cpp thread: two would spin against the GUI thread for the 2 cores of CI.
        model=replace(s.model, n_ctx=n_ctx, n_gpu_layers="none", overflow_policy=policy, n_threads=1),
        sampling=replace(s.sampling, temperature=0.0, max_tokens=max_tokens),
    )


def load(qtbot, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(path))


def send_and_stop(qtbot, w: MainWindow, text: str):
    """Send `text`, stop the answer once some of it has streamed; returns its Finished event."""
    c = w.controller
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT) as blocker:
        c.send(text)
        qtbot.waitUntil(lambda: w.transcript.rowCount() >= 2 and len(w.transcript.row(w.transcript.rowCount() - 1)
                                                                    .content) > 10, timeout=ANSWER_TIMEOUT)
        c.stop()
    return blocker.args[0]


def send(qtbot, w: MainWindow, text: str):
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as blocker:
        w.controller.send(text)
    return blocker.args[0]


def start_serving(qtbot, w: MainWindow, parallel: int | None = None) -> str:
    """Open the server panel and switch serving on, on any free port (8080 may be taken on a test
    machine) and `parallel` slots if given: the server's URL once it has started."""
    w.serve_action.setChecked(True)
    assert w.server_dock is not None and w.server_dock.isVisible()
    panel = w.server_dock.widget()
    panel.port.setValue(0)
    if parallel is not None:
        panel.parallel.setValue(parallel)
    with qtbot.waitSignal(panel.controller.started, timeout=60_000) as started:
        panel.switch.setChecked(True)
    return str(started.args[0])


def stop_serving(qtbot, w: MainWindow) -> None:
    """Switch serving off in the server panel and wait until the server has stopped."""
    panel = w.server_dock.widget()
    with qtbot.waitSignal(panel.controller.stopped, timeout=30_000):
        panel.switch.setChecked(False)


def answer_next_box(button: QMessageBox.StandardButton, seen: list[tuple[str, Qt.TextFormat]]) -> None:
    """Answer the next modal message box with ``button`` once it is up; its text and format go to ``seen``."""
    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, answer)
            return
        seen.append((box.text(), box.textFormat()))
        box.button(button).click()

    QTimer.singleShot(0, answer)
