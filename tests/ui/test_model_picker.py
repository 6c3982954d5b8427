"""The model picker lists models by the names a person reads, the file on hover, projectors left out."""

from __future__ import annotations

from PySide6.QtCore import Qt

from prefill.ui.models.picker import ModelPicker


def test_names_not_bare_file_names(qtbot) -> None:
    picker = ModelPicker()
    qtbot.addWidget(picker.combo)
    paths = ["/m/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q8_0.gguf",
             "/m/local/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
             "/m/ggml-org/SmolVLM-256M-Instruct-GGUF/mmproj-SmolVLM-256M-Instruct-Q8_0.gguf",
             "/m/local/<b>x<i>.gguf"]
    picker.set_paths(paths)
    combo = picker.combo
    assert [combo.itemText(i) for i in range(1, 4)] == [
        "SmolLM2 135M Instruct · Q8_0", "Meta Llama 3.1 8B Instruct · Q4_K_M", "<b>x<i>"]
    assert [combo.itemData(i) for i in range(1, 4)] == [paths[0], paths[1], paths[3]]  # what loads is the file
    assert paths[0] in combo.itemData(1, Qt.ItemDataRole.ToolTipRole)
    assert "&lt;b&gt;" in combo.itemData(3, Qt.ItemDataRole.ToolTipRole)  # the path on hover, as text
    with qtbot.waitSignal(picker.local_chosen) as chosen:
        combo.activated.emit(2)
    assert chosen.args == [paths[1]]
