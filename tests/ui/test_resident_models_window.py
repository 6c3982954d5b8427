"""Several local models in memory in the window: the picker lists the library and marks the resident
models with their memory; A → B → A loads A once and answers from its live cache; a resident model is
pinned or unloaded from the picker's menu (never the chat's own); the sidebar's memory line sums them.
Real models: the bundled SmolLM2 and a tiny one from the project's writer, on the real engine thread."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.events import PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.session.residents import ResidentModels
from tests.ui.conftest import load, send, small_settings

pytestmark = pytest.mark.model


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ChatEngine.load (on the engine thread), by file name."""
    seen: list[str] = []
    real = ChatEngine.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ChatEngine], path: str | Path, *args: object, **kw: object) -> ChatEngine:
        seen.append(Path(path).name)
        return real(cls, path, *args, **kw)

    monkeypatch.setattr(ChatEngine, "load", classmethod(counting))
    return seen


def entries(w) -> list[str]:
    combo = w.picker.combo
    return [combo.itemData(i) for i in range(combo.count())]


def test_a_to_b_to_a_loads_a_once_and_the_picker_offers_unload_and_pin(
        app, qtbot, smollm2: Path, tiny_model: Path, tmp_path: Path, loads: list[str]) -> None:
    library = tmp_path / "library"
    library.mkdir()
    tiny = library / "tiny.gguf"
    shutil.copyfile(tiny_model, tiny)
    settings = small_settings(max_tokens=8)
    w = app.open(replace(settings, ui=replace(settings.ui, models_dir=str(library))),
                 KvDiskCache(app.data / "kv", min_free=0))
    qtbot.waitUntil(lambda: str(tiny) in entries(w), timeout=10_000)  # the library, read off the GUI thread
    worker = w.engine.worker
    loaded: list[object] = []
    w.model_loaded.connect(loaded.append)
    prefills: list[PrefillDone] = []
    worker.prefill_done.connect(lambda _rid, p: prefills.append(p))

    load(qtbot, w, smollm2)
    send(qtbot, w, "Name a colour.")
    a = worker.engine
    load(qtbot, w, tiny)
    send(qtbot, w, "And another?")
    load(qtbot, w, smollm2)
    assert loads == [smollm2.name, "tiny.gguf"]  # A was not loaded a second time
    assert [getattr(m, "resident", None) for m in loaded] == [False, False, True]
    assert worker.engine is a
    assert "already in memory" in w.sidebar.text("model")
    residents: ResidentModels = w.picker.residents  # as the worker reported them, on the GUI thread
    assert {Path(m.path).name for m in residents.models} == {smollm2.name, "tiny.gguf"}
    assert w.sidebar.text("memory").startswith("2 models · ") and " of " in w.sidebar.text("memory")
    combo = w.picker.combo
    marked = [combo.itemText(i) for i in range(combo.count()) if combo.itemText(i).startswith("● ")]
    assert len(marked) == 2

    send(qtbot, w, "One more?")
    assert prefills[-1].restored_tokens == 0 and prefills[-1].cached_tokens > 0  # A's live cache, no restore

    own = w.picker.resident_menu(str(smollm2))
    assert own is not None and not own.actions()[0].isEnabled()  # the chat's model: not unloaded from here
    refused: list[str] = []
    worker.resident_refused.connect(refused.append)  # called on the engine thread
    worker.unload_model(str(smollm2))
    qtbot.waitUntil(lambda: bool(refused), timeout=10_000)
    assert "the chat's model" in refused[0]

    menu = w.picker.resident_menu(str(tiny))
    assert menu is not None
    menu.actions()[1].trigger()  # pin
    qtbot.waitUntil(lambda: w.picker.resident(str(tiny)) is not None and w.picker.resident(str(tiny)).pinned)
    assert "pinned" in combo.itemText(combo.findData(str(tiny)))
    menu = w.picker.resident_menu(str(tiny))
    assert menu is not None
    menu.actions()[0].trigger()  # unload
    qtbot.waitUntil(lambda: w.picker.resident(str(tiny)) is None)
    assert w.sidebar.text("memory").startswith("1 model · ")
    assert not combo.itemText(combo.findData(str(tiny))).startswith("●")
    assert str(tiny) in entries(w)  # still in the library's list, to load again


def test_the_memory_settings_apply_at_once_and_the_sidebar_sums_against_the_budget(
        app, qtbot, smollm2: Path, tiny_model: Path, loads: list[str]) -> None:
    settings = small_settings(max_tokens=8)
    w = app.open(replace(settings, memory=replace(settings.memory, budget_mb=8192)))
    load(qtbot, w, smollm2)
    load(qtbot, w, tiny_model)
    qtbot.waitUntil(lambda: len(w.picker.residents.models) == 2, timeout=10_000)
    line = w.sidebar.text("memory")
    assert line.startswith("2 models · ") and line.endswith(" of 8.0 GiB")
    used = w.picker.residents.used
    assert used == sum(m.memory.total for m in w.picker.residents.models) and used > 0  # llama.cpp's figures
    assert all(m.memory.compute_measured for m in w.picker.residents.models)

    w.settings = w.settings.replace("memory.max_models", 1)  # the Settings dialog's OK does the same
    qtbot.waitUntil(lambda: len(w.picker.residents.models) == 1, timeout=10_000)
    (kept,) = w.picker.residents.models
    assert Path(kept.path) == tiny_model and kept.current  # the idle one went, never the chat's
    assert w.sidebar.text("memory").startswith("1 model · ")
    w.settings = w.settings.replace("memory.budget_mb", "none")
    qtbot.waitUntil(lambda: " of " not in w.sidebar.text("memory"), timeout=10_000)
    assert loads == [smollm2.name, tiny_model.name]
    send(qtbot, w, "Still here?")  # the chat's model answers on


def test_the_engine_thread_unloads_an_idle_model_once_its_time_to_live_runs_out(qtbot, tmp_path: Path) -> None:
    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.engine.settings import LoadSettings
    from prefill.ui.workers.engine_worker import EngineThread

    a, b = (write_tiny_llama(tmp_path / f"{n}.gguf", n_vocab=4000, seed=i) for i, n in enumerate("ab"))
    settings = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
    thread = EngineThread()
    worker = thread.worker
    shown: list[ResidentModels] = []
    loaded: list[object] = []
    worker.residents_changed.connect(shown.append)  # on the engine thread: a list, not a waitSignal
    worker.loaded.connect(loaded.append)
    try:
        worker.set_model_limits(0, 0, 2.0)  # two seconds idle
        worker.load(str(a), settings)
        qtbot.waitUntil(lambda: len(loaded) == 1, timeout=30_000)
        worker.load(str(b), settings)
        qtbot.waitUntil(lambda: len(loaded) == 2, timeout=30_000)
        assert len(shown[-1].models) == 2  # a is idle now, its timer armed
        qtbot.waitUntil(lambda: len(shown[-1].models) == 1, timeout=10_000)  # the timer fired on the engine thread
        (kept,) = shown[-1].models
        assert Path(kept.path) == b and kept.current
    finally:
        thread.stop()
