"""The Settings dialog edits the loaded model's own load settings: "for <model>", Use for all models,
Reset to defaults, GPU layers as "N of M", ranges shown and a value out of range explained beside it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QDialogButtonBox, QLabel, QPushButton

from prefill.session.loaded import LoadedModel
from prefill.store.app_settings import Settings
from prefill.ui.settings_dialog import SettingsDialog, needs_reload

PATH = Path("/m/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q8_0.gguf")
MODEL = LoadedModel(path=PATH, name="Smollm2 135M 8k Lc100K Mix1 Ep2", n_ctx=2048, n_layer=30,
                    backend_summary="CPU", backend_warning="", gpu_build=False, load_ms=1.0, bytes_per_cell=1,
                    model_bytes=1)


def dialog(qtbot, settings: Settings, model: LoadedModel | None = MODEL) -> SettingsDialog:
    d = SettingsDialog(settings, model=model)
    qtbot.addWidget(d)
    d.show()
    return d


def ok_enabled(d: SettingsDialog) -> bool:
    return d.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()


def test_changes_are_this_models_own(qtbot) -> None:
    d = dialog(qtbot, Settings())
    assert d.findChild(QLabel, "model-scope").text() == "For SmolLM2 135M Instruct · Q8_0"
    assert str(PATH) in d.findChild(QLabel, "model-scope").toolTip()
    d.editors["model.n_ctx"].set_value(8192)
    d.editors["model.n_gpu_layers"].set_value(12)
    d.editors["sampling.temperature"].set_value(0.3)  # not a load setting: for every model
    new = d.result_settings()
    assert new.per_model == {str(PATH): {"n_ctx": 8192, "n_gpu_layers": 12}}
    assert new.model == Settings().model  # the defaults stay
    assert new.sampling.temperature == 0.3
    assert new.load_settings_for(str(PATH)).n_ctx == 8192


def test_the_model_opens_with_its_own_values_and_resets(qtbot) -> None:
    s = Settings().with_model_overrides(str(PATH), {"n_ctx": 8192})
    d = dialog(qtbot, s)
    assert d.editors["model.n_ctx"].input.value() == 8192
    d.findChild(QPushButton, "reset-model").click()
    assert d.editors["model.n_ctx"].input.value() == s.model.n_ctx
    assert d.result_settings().per_model == {}


def test_use_for_all_models_makes_them_the_defaults(qtbot) -> None:
    other = "/m/other.gguf"
    s = Settings().with_model_overrides(str(PATH), {"n_ctx": 8192}).with_model_overrides(other, {"n_batch": 64})
    d = dialog(qtbot, s)
    d.findChild(QCheckBox, "use-for-all").setChecked(True)
    d.editors["model.n_ctx"].set_value(16384)
    new = d.result_settings()
    assert new.model.n_ctx == 16384 and new.per_model == {other: {"n_batch": 64}}


def test_without_a_model_the_defaults_are_edited(qtbot) -> None:
    d = dialog(qtbot, Settings(), model=None)
    assert d.findChild(QLabel, "model-scope").text() == "For every model"
    assert d.findChild(QCheckBox, "use-for-all").isHidden()
    d.editors["model.n_ctx"].set_value(8192)
    assert d.result_settings().model.n_ctx == 8192 and d.result_settings().per_model == {}


def test_gpu_layers_as_n_of_m_and_the_reload_note(qtbot) -> None:
    d = dialog(qtbot, Settings())
    gpu = d.editors["model.n_gpu_layers"]
    gpu.set_value(12)
    assert gpu.spin is not None and gpu.spin.text() == "12 of 30 layers"
    assert gpu.input.currentText() == "This many:"
    assert "30 layers" in gpu.side.toolTip() and "reloads the model" in gpu.side.text()  # the count in the box
    assert "reloads" in d.editors["model.kv_type"].side.text()
    assert "reloads" not in d.editors["model.overflow_policy"].side.text()


def test_out_of_range_is_explained_beside_the_field(qtbot) -> None:
    d = dialog(qtbot, Settings())
    n_ctx = d.editors["model.n_ctx"]
    n_ctx.input.lineEdit().selectAll()
    qtbot.keyClicks(n_ctx.input, "50")  # typed, not refused keystroke by keystroke
    assert n_ctx.input.value() == 50
    assert not n_ctx.fault.isHidden() and "128" in n_ctx.fault.text()
    assert not ok_enabled(d) and "Context length" in d.problem.text()
    n_ctx.set_value(4096)
    assert n_ctx.fault.isHidden() and ok_enabled(d)
    top_p = d.editors["sampling.top_p"]
    top_p.set_value(1.5)
    assert not top_p.fault.isHidden() and not ok_enabled(d)



def test_the_thinking_budget_is_the_models_own_and_reloads_nothing(qtbot) -> None:
    d = dialog(qtbot, Settings().with_model_overrides(str(PATH), {"reasoning_budget": 64}))
    budget = d.editors["model.reasoning_budget"]
    assert budget.input.value() == 64 and "reloads" not in budget.side.text()
    assert "reloads" in d.editors["model.n_ctx"].side.text()
    budget.set_value(256)
    new = d.result_settings()
    assert new.per_model == {str(PATH): {"reasoning_budget": 256}} and new.model.reasoning_budget == -1
    assert not needs_reload(Settings().model_for(str(PATH)), new.model_for(str(PATH)))
    d.findChild(QPushButton, "reset-model").click()
    assert d.result_settings().per_model == {}
