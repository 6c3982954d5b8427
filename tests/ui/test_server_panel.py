"""The server switch and the slots panel: a real server on the tiny model, a real client; the panel's
figures as label/value cards and its slots as a list of rows (no table, no grid, no header)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from openai import OpenAI
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QGroupBox, QHeaderView, QTableView

from prefill.engine.batch.prompt_cache import PromptCacheSnapshot
from prefill.engine.batch.snapshot import BatchSnapshot, SlotSnapshot
from prefill.engine.settings import LoadSettings
from prefill.server.lifecycle import ServeOptions
from prefill.server.served_slots import ServerSlots
from prefill.ui.server.figure_cards import FiguresCard
from prefill.ui.server.panel import ServerController, ServerPanel, SlotTableModel
from prefill.ui.server.slot_list import SlotRow, slot_figures
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
    assert m.headerData(4, Qt.Orientation.Horizontal) == "Memory cells"  # KV cells in the sidebar's words
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
    assert panel.copy.icon().name() == "copy" and panel.copy.toolTip() == "Copy the address"
    panel.copy.click()
    assert QGuiApplication.clipboard().text() == panel.address.text()
    assert panel.copy.icon().name() == "check" and panel.copy.toolTip() == "Copied"  # for a moment
    qtbot.waitUntil(lambda: panel.copy.icon().name() == "copy", timeout=5000)

    client = OpenAI(base_url=panel.address.text(), api_key="none", max_retries=0)
    model = client.models.list().data[0].id
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}],
                                            stream=True, max_tokens=100_000, extra_body={"ignore_eos": True})
    first = threading.Event()
    reader = threading.Thread(target=lambda: (next(iter(stream)), first.set()), daemon=True)
    reader.start()
    qtbot.waitUntil(lambda: panel.figure("In flight") == "1", timeout=START_MS)
    qtbot.waitUntil(lambda: "decode" in {panel.slots.data(panel.slots.index(r, 1)) for r in range(2)})
    assert first.wait(30)
    stream.close()
    qtbot.waitUntil(lambda: panel.figure("In flight") == "0", timeout=START_MS)

    with qtbot.waitSignal(panel.controller.stopped, timeout=START_MS):
        panel.switch.setChecked(False)
    assert panel.address.text() == "Off" and not panel.copy.isEnabled() and panel.slots.rowCount() == 0
    assert panel.slot_list.rows == [] and panel.slot_list.empty.isVisibleTo(panel)
    assert not panel.figures.isVisibleTo(panel) and panel.cache_cards() == []  # no figures while it is off
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
    assert w.requests.rows() == (("In flight", "3"), ("Queued", "2"), ("Writing speed", "123 tok/s in all"),
                                 ("Served", "9"))
    assert w.figures.isVisibleTo(w) and w.slots.rowCount() == 1
    (row,) = w.slot_list.rows
    assert isinstance(row, SlotRow) and not w.slot_list.empty.isVisibleTo(w)
    assert (row.number.text(), row.state.text(), row.request.full) == ("Slot 0", "decode", "#1")
    assert row.figures.full == "50 tok/s · 3 + 4 tokens · 7 memory cells"  # each figure with its unit
    assert row.state.property("busy") is True
    controller.snapshot.emit(BatchSnapshot(slots=(SlotSnapshot(0, "idle", kv_cells=5),)))
    assert w.slot_list.rows == [row]  # the same row, its labels changed
    assert (row.state.text(), row.figures.full, row.request.full) == ("idle", "5 memory cells", "")
    assert row.state.property("busy") is False


def test_the_panel_has_no_table_grid_or_header(qtbot, engine_thread) -> None:
    controller = ServerController(engine_thread.worker)
    w = ServerPanel(controller, lambda: None)
    qtbot.addWidget(w)
    controller.snapshot.emit(two_models())
    assert w.slot_list.rows
    assert not w.findChildren(QTableView) and not w.findChildren(QHeaderView) and not w.findChildren(QGroupBox)
    assert w.findChildren(FiguresCard) and all(c.objectName() == "server-card" for c in w.findChildren(FiguresCard))


def test_a_slots_figures_carry_their_units_and_drafts_while_it_speculates() -> None:
    assert slot_figures("12 + 30", "42", "90", "25 / 40") == ("90 tok/s · 12 + 30 tokens · 42 memory cells · "
                                                              "25 / 40 drafts taken")
    assert slot_figures("", "0", "", "") == "0 memory cells"


def two_models() -> ServerSlots:
    from prefill.server.served_slots import ModelSlots

    a = BatchSnapshot(slots=(SlotSnapshot(0, "decode", "#1", 3, 4, 7, 50.0), SlotSnapshot(1, "idle")),
                      aggregate_tps=50.0, served=2)
    b = BatchSnapshot(slots=(SlotSnapshot(0, "idle"),), queued=1, aggregate_tps=10.0, served=1)
    return ServerSlots((ModelSlots("llama-<b>8b</b>", "loaded", 3 << 30, pinned=True, batch=a),
                        ModelSlots("qwen", "loaded", 1 << 29, batch=b), ModelSlots("gemma", "loading")))


def test_several_models_slots_are_listed_under_each_models_name_and_state(qtbot, qtmodeltester) -> None:
    m = SlotTableModel()
    m.set_server(two_models())
    qtmodeltester.check(m)
    shown = [m.data(m.index(r, 0)) for r in range(m.rowCount())]
    assert shown == ["llama-<b>8b</b> · loaded · pinned · 3.0 GiB · 1 in flight", "0", "1",
                     "qwen · loaded · 512.0 MiB · 1 in flight", "0", "gemma · loading"]
    assert [m.is_heading(r) for r in range(m.rowCount())] == [True, False, False, True, False, True]
    assert m.data(m.index(1, 1)) == "decode" and m.data(m.index(0, 1)) == ""
    one = ServerSlots.of_one(BatchSnapshot(slots=(SlotSnapshot(0, "idle"),)))
    m.set_server(one)  # one model: its slots alone, as before
    assert m.rowCount() == 1 and not m.is_heading(0)


def test_the_panel_spans_each_models_heading_and_sums_the_figures(qtbot, engine_thread) -> None:
    controller = ServerController(engine_thread.worker)
    w = ServerPanel(controller, lambda: None)
    qtbot.addWidget(w)
    controller.snapshot.emit(two_models())
    assert w.requests.rows() == (("Models", "3"), ("In flight", "2"), ("Queued", "1"),
                                 ("Writing speed", "60 tok/s in all"), ("Served", "3"))
    assert w.slot_list.headings() == [True, False, False, True, False, True]  # a line across for each model
    heading = w.slot_list.rows[0]
    assert heading.full == "llama-<b>8b</b> · loaded · pinned · 3.0 GiB · 1 in flight"
    assert heading.textFormat() == Qt.TextFormat.PlainText  # a model's id is shown as it is
    controller.snapshot.emit(BatchSnapshot(slots=(SlotSnapshot(0, "idle"),)))  # a server of one model
    assert w.slot_list.headings() == [False] and w.slots.rowCount() == 1
    assert w.figure("Models") == ""


def test_the_prompt_cache_shows_for_one_model_and_for_each_of_several(qtbot, engine_thread) -> None:
    controller = ServerController(engine_thread.worker)
    w = ServerPanel(controller, lambda: None)
    qtbot.addWidget(w)
    cache = PromptCacheSnapshot(limit=512 << 20, entries=3, bytes=40 << 20, hits=5, tokens_saved=12_345)
    controller.snapshot.emit(BatchSnapshot(slots=(SlotSnapshot(0, "idle"),), prompt_cache=cache))
    kept = ("Kept", "3 prompts · 40.0 MiB of 512.0 MiB")
    assert w.cache_cards() == [("Prompt cache", (kept, ("Reused", "5 hits · 12,345 tokens saved")))]
    assert w.caches[0].isVisibleTo(w)
    disk = replace(cache, entries=1, hits=1, tokens_saved=1, disk_limit=1 << 30, disk_entries=2,
                   disk_bytes=80 << 20)
    controller.snapshot.emit(BatchSnapshot(slots=(SlotSnapshot(0, "idle"),), prompt_cache=disk))
    assert w.cache_cards() == [("Prompt cache", (("Kept", "1 prompt · 40.0 MiB of 512.0 MiB"),
                                                 ("Reused", "1 hit · 1 token saved"),
                                                 ("On disk", "2 (80.0 MiB of 1.0 GiB)")))]
    several = two_models()
    first, second = several.models[0], several.models[1]
    assert first.batch is not None and second.batch is not None
    several = replace(several, models=(replace(first, batch=replace(first.batch, prompt_cache=cache)),
                                       second, *several.models[2:]))
    controller.snapshot.emit(several)  # a line per model that has slots, by its name; off says so
    assert w.cache_cards() == [
        ("Prompt cache · llama-<b>8b</b>", (kept, ("Reused", "5 hits · 12,345 tokens saved"))),
        ("Prompt cache · qwen", (("", "Off"),))]
    assert w.caches[0].title.textFormat() == Qt.TextFormat.PlainText  # a model's name is shown as it is


@pytest.mark.model
def test_a_server_of_two_models_reports_each_ones_slots(tmp_path: Path) -> None:
    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.pool.catalogue import entry_for_file
    from prefill.server.lifecycle import RunningServer
    from prefill.server.served_slots import served_slots

    a = write_tiny_llama(tmp_path / "a.gguf", n_vocab=4000, seed=1)
    b = write_tiny_llama(tmp_path / "b.gguf", n_vocab=4000, seed=2)
    c = write_tiny_llama(tmp_path / "c.gguf", n_vocab=4000, seed=3)
    options = ServeOptions(None, LoadSettings(n_ctx=256, n_gpu_layers="none", n_threads=1), port=0, parallel=2,
                           models=tuple(entry_for_file(p) for p in (a, b, c)), pinned=("a", "b"))
    server = RunningServer.open(options)  # a and b loaded (pinned), c not
    try:
        view = served_slots(server.pool)
        measured = [r.memory.compute_measured for r in server.pool.residents()]
    finally:
        server.pool.close()
        server.sock.close()
    assert [(m.id, m.state, m.pinned) for m in view.models] == [("a", "loaded", True), ("b", "loaded", True)]
    assert all(m.batch is not None and len(m.batch.slots) == 2 and m.memory > 0 for m in view.models)
    assert len(view.slots) == 4 and view.in_flight == 0
    assert measured == [True, True]  # each batch context's compute buffers, as llama.cpp reported them
