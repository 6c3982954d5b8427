"""The settings dialog is built from the schema, edits one typed Settings value, and cannot
produce settings the engine would refuse."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QDoubleSpinBox, QPushButton, QSpinBox

from prefill.engine.local.kv_disk import Usage
from prefill.engine.settings import KV_TYPES, OVERFLOW_POLICIES, LoadSettings, SamplingSettings
from prefill.store.app_settings import Settings, keys
from prefill.ui.settings_dialog import LAYOUT, NOT_IN_DIALOG, SettingsDialog, needs_reload


def ok_enabled(d: SettingsDialog) -> bool:
    return d.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()


def test_dialog_round_trip_and_reload_rule(qtbot) -> None:
    s = Settings().replace("sampling.temperature", 0.725)  # more decimals than the spin box shows
    d = SettingsDialog(s)
    qtbot.addWidget(d)
    assert d.result_settings() == s  # untouched: the same value back
    d.editors["sampling.temperature"].input.setValue(0.2)
    d.editors["model.n_ctx"].input.setValue(8192)
    gpu = d.editors["model.n_gpu_layers"]
    gpu.set_value(12)  # "This many:" and the count
    d.editors["ui.models_dir"].input.setText("/tmp/models")
    d.editors["hub.hf_token"].input.setText("hf_secret")
    d.editors["ui.theme"].set_value("dark")
    new = d.result_settings()
    assert new.sampling.temperature == 0.2 and new.model.n_ctx == 8192 and new.model.n_gpu_layers == 12
    assert new.ui.models_dir == "/tmp/models" and new.ui.theme == "dark" and new.hub.hf_token == "hf_secret"
    assert "hf_secret" not in repr(new)
    assert needs_reload(s.model, new.model)
    assert not needs_reload(s.model, replace(s.model, overflow_policy="stop"))
    assert new.model.load_settings().n_ctx == 8192 and isinstance(new.sampling, SamplingSettings)


def test_every_editable_setting_is_in_the_dialog_once() -> None:
    laid_out = [key for _title, ks in LAYOUT for key in ks]
    assert len(laid_out) == len(set(laid_out))
    assert set(laid_out) | NOT_IN_DIALOG == set(keys()) and not set(laid_out) & NOT_IN_DIALOG


def test_choices_and_ranges_come_from_the_schema(qtbot) -> None:
    d = SettingsDialog(Settings())
    qtbot.addWidget(d)
    kv = d.editors["model.kv_type"].input
    assert isinstance(kv, QComboBox) and [kv.itemData(i) for i in range(kv.count())] == list(KV_TYPES)
    assert kv.itemText(0) == "16-bit (default)"  # the raw value is the item's data, words its text
    policy = d.editors["model.overflow_policy"].input
    assert [policy.itemData(i) for i in range(policy.count())] == list(OVERFLOW_POLICIES)
    assert policy.itemText(0) == "Drop the oldest messages"
    fields = {f.name: f.metadata for f in dataclasses.fields(LoadSettings)}
    n_ctx = d.editors["model.n_ctx"]
    assert isinstance(n_ctx.input, QSpinBox)
    low, high = fields["n_ctx"]["min"], fields["n_ctx"]["max"]
    assert n_ctx.side.text() == f"{low:,} – {high:,} · reloads the model"
    top_p = d.editors["sampling.top_p"]
    assert isinstance(top_p.input, QDoubleSpinBox) and top_p.side.text() == "0 – 1"
    assert "reloads" not in top_p.side.text()
    assert d.editors["sampling.repeat_penalty"].side.text().startswith("above 0")  # llama.cpp divides by it
    assert d.editors["sampling.top_p"].widget.toolTip().startswith("Keep the likeliest tokens")


def test_quantised_kv_cache_without_flash_attention_cannot_be_accepted(qtbot) -> None:
    d = SettingsDialog(Settings())
    qtbot.addWidget(d)
    d.show()
    d.editors["model.flash_attn"].set_value("off")
    d.editors["model.kv_type"].set_value("q8_0")
    assert not ok_enabled(d)
    assert d.problem.isVisible() and "flash attention" in d.problem.text()
    assert "KV cache type" in d.problem.text()
    d.accept()  # Enter in the dialog: refused while the rule is broken
    assert d.result() == 0 and d.isVisible()
    flash = d.editors["model.flash_attn"].input
    assert isinstance(flash, QComboBox) and flash.currentText() == "Off (no quantised KV cache, no speculation)"
    flash.setCurrentIndex(flash.findData("auto"))  # llama.cpp turns it on for a quantised cache
    assert ok_enabled(d) and not d.problem.isVisible()
    assert flash.currentText() == "Automatic: on where the backend supports it (default)"
    new = d.result_settings()
    assert (new.model.kv_type, new.model.flash_attn) == ("q8_0", "auto")
    LoadSettings(**{f.name: getattr(new.model, f.name) for f in dataclasses.fields(LoadSettings)})
    d.accept()
    assert d.result() == 1


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


def test_the_memory_tab_sets_the_resident_models_limits(qtbot) -> None:
    d = SettingsDialog(Settings())
    qtbot.addWidget(d)
    assert dict(LAYOUT)["Memory"] == ("memory.budget_mb", "memory.max_models", "memory.idle_minutes")
    budget = d.editors["memory.budget_mb"].input
    assert isinstance(budget, QComboBox)
    assert [budget.itemText(i) for i in range(budget.count())] == [
        "What this machine has, less a margin (default)", "No limit", "This many MiB:"]
    assert Settings().memory.limits() == (None, 0, 3600.0)  # the machine's, any count, an hour idle
    d.editors["memory.budget_mb"].set_value(12_288)
    d.editors["memory.max_models"].input.setValue(2)
    d.editors["memory.idle_minutes"].set_value("never")
    new = d.result_settings()
    assert (new.memory.budget_mb, new.memory.max_models, new.memory.idle_minutes) == (12_288, 2, "never")
    assert new.memory.limits() == (12_288 << 20, 2, None)
    d.editors["memory.budget_mb"].set_value(10)  # below the least a budget may be
    assert not ok_enabled(d) and "Memory for models" in d.problem.text()
    d.editors["memory.budget_mb"].set_value("none")
    assert ok_enabled(d) and d.result_settings().memory.limits()[0] == 0


def test_a_models_folder_that_cannot_be_made_is_refused_inline(qtbot, tmp_path) -> None:
    d = SettingsDialog(Settings())
    qtbot.addWidget(d)
    folder = d.editors["ui.models_dir"]
    folder.input.setText("/proc/prefill-models")  # a place no folder can be made in
    d.accept()
    assert d.result() != d.DialogCode.Accepted  # OK pressed: still open, the fault said beside the field
    assert "cannot hold models" in folder.fault.text() and "cannot be created there" in folder.fault.text()
    assert "Models folder" in d.problem.text() and not d.problem.isHidden()
    assert not (tmp_path / "new").exists()
    folder.input.setText(str(tmp_path / "new" / "models"))  # a folder that can be made: made on OK
    assert folder.fault.text() == ""
    d.accept()
    assert d.result() == d.DialogCode.Accepted and (tmp_path / "new" / "models").is_dir()
    assert d.result_settings().ui.models_dir == str(tmp_path / "new" / "models")
