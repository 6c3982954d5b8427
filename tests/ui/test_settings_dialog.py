"""The settings dialog edits one typed Settings value; what needs a reload is told apart."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import QPushButton

from prefill.engine.kv_disk import Usage
from prefill.store.settings import Settings
from prefill.ui.settings_dialog import SettingsDialog, engine_sampling, load_settings, needs_reload


def test_dialog_round_trip_and_reload_rule(qtbot) -> None:
    s = Settings()
    d = SettingsDialog(s)
    qtbot.addWidget(d)
    assert d.result_settings() == s  # untouched: the same value back
    d.temperature.setValue(0.2)
    d.n_ctx.setValue(8192)
    d.gpu_mode.setCurrentText("count")
    d.gpu_count.setValue(12)
    d.models_dir.setText("/tmp/models")
    d.hf_token.setText("hf_secret")
    d.theme.setCurrentText("dark")
    new = d.result_settings()
    assert new.sampling.temperature == 0.2 and new.model.n_ctx == 8192 and new.model.n_gpu_layers == 12
    assert new.ui.models_dir == "/tmp/models" and new.ui.theme == "dark" and new.hub.hf_token == "hf_secret"
    assert "hf_secret" not in repr(new)
    assert needs_reload(s.model, new.model)
    assert not needs_reload(s.model, replace(s.model, overflow_policy="stop"))
    assert load_settings(new.model).n_ctx == 8192 and engine_sampling(new.sampling).temperature == 0.2


def test_cache_budget_use_and_clear(qtbot) -> None:
    s = Settings()
    d = SettingsDialog(s, cache_usage=Usage(3 * 1024**3 // 2, 7))
    qtbot.addWidget(d)
    assert d.cache_use.text() == "1.50 GB in 7 files"
    d.cache_budget.setValue(512)
    new = d.result_settings()
    assert new.model.kv_disk_budget_mb == 512 and not needs_reload(s.model, new.model)
    with qtbot.waitSignal(d.clear_cache_requested, timeout=1000):
        d.findChild(QPushButton, "clear-cache").click()
    d.set_cache_usage(Usage(0, 0))
    assert d.cache_use.text() == "0.00 GB in 0 files"
