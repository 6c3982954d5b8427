"""The server switch and the slots panel: a real server on the tiny model, a real client."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from openai import OpenAI
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from prefill.engine.batch.snapshot import BatchSnapshot, SlotSnapshot
from prefill.engine.settings import LoadSettings
from prefill.server.lifecycle import ServeOptions
from prefill.ui.server.panel import ServerController, ServerPanel, SlotTableModel
from prefill.ui.workers.engine_worker import EngineThread, EngineWorker

START_MS = 60_000


def test_slot_model_passes_the_model_tester(qtmodeltester) -> None:
    m = SlotTableModel()
    m.set_slots((SlotSnapshot(0, "idle"), SlotSnapshot(1, "decode", "#3", 12, 5, 17, 80.0)))
    qtmodeltester.check(m)
    assert m.data(m.index(1, 1)) == "decode" and m.data(m.index(1, 3)) == "12 + 5"
    assert m.data(m.index(0, 2)) == ""


def test_slot_model_shows_a_slots_draft_acceptance() -> None:
    m = SlotTableModel()
    m.set_slots((SlotSnapshot(0, "decode", "#1", 12, 5, 17, 80.0),
                 SlotSnapshot(1, "decode", "#2", 12, 30, 42, 90.0, drafted=40, accepted=25)))
    last = m.columnCount() - 1
    assert m.headerData(last, Qt.Orientation.Horizontal) == "Drafts taken"
    assert m.data(m.index(0, last)) == "" and m.data(m.index(1, last)) == "25 / 40"


def test_slot_model_signals_only_changed_rows(qtbot) -> None:
    m = SlotTableModel()
    a, b = SlotSnapshot(0, "idle"), SlotSnapshot(1, "prefill", "#1", 30)
    m.set_slots((a, b))
    with qtbot.waitSignal(m.dataChanged) as sig:
        m.set_slots((a, SlotSnapshot(1, "decode", "#1", 30, 1)))
    assert sig.args[0].row() == 1 and sig.args[1].row() == 1
    with qtbot.assertNotEmitted(m.dataChanged):
        m.set_slots((a, SlotSnapshot(1, "decode", "#1", 30, 1)))


@pytest.fixture
def engine_thread():
    thread = EngineThread()
    yield thread
    thread.stop()  # stops a server still running, then frees the model


def loaded_worker(qtbot, thread: EngineThread, model: Path, settings: LoadSettings) -> EngineWorker:
    loaded: list[object] = []
    thread.worker.loaded.connect(loaded.append)  # runs on the engine thread: a list, not a waitSignal
    thread.worker.load(str(model), settings)
    qtbot.waitUntil(lambda: bool(loaded), timeout=START_MS)
    return thread.worker


TINY = LoadSettings(n_ctx=2048, n_gpu_layers="none", n_threads=1)


@pytest.fixture
def panel(qtbot, tiny_model: Path, engine_thread: EngineThread):
    controller = ServerController(loaded_worker(qtbot, engine_thread, tiny_model, TINY))
    w = ServerPanel(controller, lambda: ServeOptions(tiny_model, TINY))
    qtbot.addWidget(w)
    assert (w.port.value(), w.parallel.value()) == (8080, 4)  # the defaults OpenAI clients expect
    w.port.setValue(0)  # any free port
    w.parallel.setValue(2)
    return w


def test_the_switch_serves_and_the_slots_show_a_request(qtbot, panel: ServerPanel) -> None:
    with qtbot.waitSignal(panel.controller.started, timeout=START_MS):
        panel.switch.setChecked(True)
    assert panel.address.text().startswith("http://127.0.0.1:") and panel.address.text().endswith("/v1")
    assert panel.slots.rowCount() == 0 or panel.slots.rowCount() == 2
    assert not panel.port.isEnabled() and not panel.parallel.isEnabled()  # fixed while it serves
    panel.copy.click()
    assert QGuiApplication.clipboard().text() == panel.address.text()

    client = OpenAI(base_url=panel.address.text(), api_key="none", max_retries=0)
    model = client.models.list().data[0].id
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}],
                                            stream=True, max_tokens=100_000, extra_body={"ignore_eos": True})
    first = threading.Event()
    reader = threading.Thread(target=lambda: (next(iter(stream)), first.set()), daemon=True)
    reader.start()
    qtbot.waitUntil(lambda: panel.status.text().startswith("1 in flight"), timeout=START_MS)
    qtbot.waitUntil(lambda: "decode" in {panel.slots.data(panel.slots.index(r, 1)) for r in range(2)})
    assert first.wait(30)
    stream.close()
    qtbot.waitUntil(lambda: panel.status.text().startswith("0 in flight"), timeout=START_MS)

    with qtbot.waitSignal(panel.controller.stopped, timeout=START_MS):
        panel.switch.setChecked(False)
    assert panel.address.text() == "Off" and not panel.copy.isEnabled() and panel.slots.rowCount() == 0
    assert panel.port.isEnabled() and panel.parallel.isEnabled()


def test_a_failed_start_says_why_and_turns_the_switch_off(qtbot, tiny_model: Path, engine_thread) -> None:
    controller = ServerController(loaded_worker(qtbot, engine_thread, tiny_model, TINY))
    bad = ServeOptions(tiny_model, LoadSettings(n_ctx=256, n_gpu_layers="none"), host="0.0.0.0", port=0)
    w = ServerPanel(controller, lambda: bad)
    qtbot.addWidget(w)
    with qtbot.waitSignal(controller.failed, timeout=START_MS):
        w.switch.setChecked(True)
    assert "api-key" in w.address.text() and not w.switch.isChecked() and w.switch.isEnabled()
    assert type(engine_thread.worker.engine).__name__ == "ChatEngine"  # the chat kept its model


def test_no_model_no_server(qtbot, engine_thread) -> None:
    controller = ServerController(engine_thread.worker)
    w = ServerPanel(controller, lambda: None)
    qtbot.addWidget(w)
    w.switch.setChecked(True)
    assert not w.switch.isChecked() and w.address.text() == "Load a local model first."
    assert not controller.running


def test_snapshot_text(qtbot, engine_thread) -> None:
    controller = ServerController(engine_thread.worker)
    w = ServerPanel(controller, lambda: None)
    qtbot.addWidget(w)
    controller.snapshot.emit(BatchSnapshot(slots=(SlotSnapshot(0, "decode", "#1", 3, 4, 7, 50.0),),
                                           queued=2, aggregate_tps=123.4, served=9))
    assert w.status.text() == "3 in flight · 2 queued · 123 tok/s in all · 9 served"
    assert w.slots.rowCount() == 1
