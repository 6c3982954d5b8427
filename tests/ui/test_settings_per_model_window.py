"""The window loads each model file with its own load settings, remembers them in the settings file,
and names the model in its title as a person reads it."""

from __future__ import annotations

from tests.ui.conftest import load, small_settings
from tests.ui.test_speculation_window import edit_settings


def test_the_window_loads_each_model_with_its_own_settings(app, qtbot) -> None:
    w = app.open(small_settings(n_ctx=1024))
    load(qtbot, w, app.bundled)
    assert w.loaded is not None and w.loaded.n_ctx == 1024
    assert w.windowTitle() == "SmolLM2 135M Instruct · Q4_1 — Prefill"
    with qtbot.waitSignal(w.model_loaded, timeout=120_000) as loaded:  # a load setting: reloaded, its own
        edit_settings(qtbot, w, lambda d: d.editors["model.n_ctx"].set_value(1536))
    assert loaded.args[0].n_ctx == 1536
    assert w.settings.model.n_ctx == 1024 and w.settings.per_model == {str(app.bundled): {"n_ctx": 1536}}
    saved = app.data / "settings.json"
    qtbot.waitUntil(lambda: saved.exists() and '"n_ctx": 1536' in saved.read_text("utf-8"), timeout=10_000)
    with qtbot.assertNotEmitted(w.model_loaded, wait=50):  # not a load setting: no reload
        edit_settings(qtbot, w, lambda d: d.editors["model.overflow_policy"].set_value("stop"))
