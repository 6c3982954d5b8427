"""The settings dialog edits one typed Settings value; what needs a reload is told apart."""

from __future__ import annotations

from dataclasses import replace

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
