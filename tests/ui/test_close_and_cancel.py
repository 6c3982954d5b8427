"""A load can be cancelled; closing the window during a load or an answer completes, and the
answer streamed so far is saved as such (issue 9). Timing figures: benchmarks/close_bench.py."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt

from prefill.engine.settings import LoadSettings
from prefill.store import HistoryStore
from prefill.ui.workers.engine_worker import EngineThread
from tests.ui.conftest import ANSWER_TIMEOUT, LOAD_TIMEOUT, load, small_settings

SMALL_LOAD = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)


def test_a_load_cancelled_at_its_first_progress_report_stops_there(qtbot, smollm2: Path) -> None:
    engine = EngineThread()
    try:
        w = engine.worker
        reports: list[float] = []

        def on_progress(p: float) -> None:  # runs on the engine thread, inside llama.cpp's callback
            reports.append(p)
            w.cancel_load()

        w.load_progress.connect(on_progress, Qt.ConnectionType.DirectConnection)
        # The worker's signals come from the engine thread: these callables run there too.
        loaded: list[object] = []
        cancelled: list[int] = []
        w.loaded.connect(loaded.append)
        w.load_cancelled.connect(cancelled.append)
        tag = w.load(str(smollm2), SMALL_LOAD)
        qtbot.waitUntil(lambda: bool(cancelled or loaded), timeout=LOAD_TIMEOUT)
        assert cancelled == [tag] and not loaded
        assert reports and reports[-1] < 1.0  # llama.cpp stopped reading at the first report
        assert w.engine is None
        w.load_progress.disconnect(on_progress)
        w.load(str(smollm2), SMALL_LOAD)  # and the next load works
        qtbot.waitUntil(lambda: bool(loaded), timeout=LOAD_TIMEOUT)
        assert w.engine is not None and len(cancelled) == 1
    finally:
        engine.stop()


def test_a_newer_load_supersedes_a_queued_one(qtbot, smollm2: Path) -> None:
    engine = EngineThread()
    try:
        w = engine.worker
        cancelled: list[int] = []
        loaded: list[object] = []
        w.load_cancelled.connect(cancelled.append)
        w.loaded.connect(loaded.append)
        first = w.load(str(smollm2), SMALL_LOAD)
        w.load(str(smollm2), SMALL_LOAD)
        qtbot.waitUntil(lambda: bool(loaded), timeout=LOAD_TIMEOUT)
        assert cancelled == [first] and len(loaded) == 1
    finally:
        engine.stop()


def test_closing_during_an_answer_saves_it_as_cancelled(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=400))
    load(qtbot, w, smollm2)
    w.controller.send("Write a very long story about a dragon and a knight.")
    qtbot.waitUntil(lambda: w.transcript.rowCount() == 2 and len(w.transcript.row(1).content) > 20,
                    timeout=ANSWER_TIMEOUT)
    with qtbot.waitSignal(w.closed, timeout=ANSWER_TIMEOUT):
        w.close()
    assert not w.isVisible() and not w.controller.busy
    shown = w.transcript.row(1)
    assert shown.finish_reason == "cancelled" and len(shown.content) > 20
    cid = w.controller.conversation_id
    app.close(w)  # stops the engine and store threads as the app does after its loop
    with HistoryStore(app.data / "history.sqlite3") as history:
        stored = history.messages(cid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].content == shown.content and stored[1].finish_reason == "cancelled"


def test_closing_during_a_load_cancels_it(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    worker = w.engine.worker
    cancelled: list[int] = []
    worker.load_cancelled.connect(cancelled.append)
    reading, gate = threading.Event(), threading.Event()

    def hold(_p: float) -> None:  # engine thread, inside llama.cpp's progress callback
        if not reading.is_set():
            reading.set()
            gate.wait(LOAD_TIMEOUT / 1000)

    worker.load_progress.connect(hold, Qt.ConnectionType.DirectConnection)
    w.load_model(str(smollm2))
    qtbot.waitUntil(reading.is_set, timeout=LOAD_TIMEOUT)  # llama.cpp is reading the file
    with qtbot.waitSignal(w.closed, timeout=5000):
        w.close()
    gate.set()
    w.engine.stop()  # returns once the load has stopped
    assert cancelled == [w.loading.tag] and worker.engine is None and w.loaded is None


def test_cancel_in_the_toolbar_stops_a_load(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    reading, gate = threading.Event(), threading.Event()

    def hold(_p: float) -> None:  # engine thread, inside llama.cpp's progress callback
        if not reading.is_set():
            reading.set()
            gate.wait(LOAD_TIMEOUT / 1000)

    w.engine.worker.load_progress.connect(hold, Qt.ConnectionType.DirectConnection)
    w.load_model(str(smollm2))
    assert w.cancel_load_action.isVisible()
    qtbot.waitUntil(reading.is_set, timeout=LOAD_TIMEOUT)
    w.cancel_load_action.trigger()
    gate.set()
    qtbot.waitUntil(lambda: not w.cancel_load_action.isVisible(), timeout=LOAD_TIMEOUT)
    assert w.loaded is None and w.load_state.text().strip() == "no model loaded"
    assert w.engine.worker.engine is None
    w.engine.worker.load_progress.disconnect(hold)
    load(qtbot, w, smollm2)  # the next load works
