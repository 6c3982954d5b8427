"""The model picker lists models by the names a person reads, the file on hover, projectors left out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt

from prefill.pool.memory import ModelMemory
from prefill.session.loaded import LoadedModel
from prefill.session.residents import ResidentModel, ResidentModels
from prefill.ui.models.picker import ModelPicker, loaded_name


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


def test_a_loaded_models_name_is_read_from_its_file() -> None:
    local = LoadedModel(path=Path("/m/SmolLM2-135M-Instruct.Q4_1.gguf"), name="Smollm2 135M 8k Lc100K Mix1 Ep2",
                        n_ctx=2048, n_layer=30, backend_summary="CPU", backend_warning="", gpu_build=False,
                        load_ms=1.0, bytes_per_cell=1, model_bytes=1)
    assert loaded_name(local) == "SmolLM2 135M Instruct · Q4_1"
    assert loaded_name(replace(local, remote="http://x/v1", name="my-model")) == "my-model"


def resident_models(current: str, *paths: str, pinned: str = "") -> ResidentModels:
    return ResidentModels(tuple(ResidentModel(p, Path(p).stem, ModelMemory(100 << 20, 20 << 20, 8 << 20),
                                              p == pinned, p == current) for p in paths), budget=4 << 30)


def test_resident_models_are_marked_with_their_memory_and_offer_unload_and_pin(qtbot) -> None:
    picker = ModelPicker()
    qtbot.addWidget(picker.combo)
    a, b, c = "/m/local/a.gguf", "/m/local/b.gguf", "/elsewhere/opened.gguf"
    picker.set_library([a, b])
    picker.set_paths([b])
    picker.set_residents(resident_models(a, a, c, pinned=c))
    combo = picker.combo
    assert [combo.itemData(i) for i in range(1, 4)] == [a, b, c]  # the library, then one opened from disk
    assert combo.itemText(1) == "● a · 128.0 MiB" and combo.itemText(2) == "b"  # the dot first: never cut off
    assert combo.itemText(3) == "● opened · 128.0 MiB · pinned"
    hover = combo.itemData(1, Qt.ItemDataRole.ToolTipRole)
    assert "weights 100.0 MiB, KV cache 20.0 MiB, compute buffers 8.0 MiB; estimated" in hover
    assert "The chat's model" in hover and a in hover
    assert "Pinned" in combo.itemData(3, Qt.ItemDataRole.ToolTipRole)
    assert picker.resident_menu(b) is None  # not in memory: nothing to unload
    own = picker.resident_menu(a)
    assert own is not None and not own.actions()[0].isEnabled()  # the chat's model
    menu = picker.resident_menu(c)
    assert menu is not None and menu.actions()[0].isEnabled() and menu.actions()[1].text().startswith("Unpin")
    with qtbot.waitSignal(picker.unload_requested) as asked:
        menu.actions()[0].trigger()
    assert asked.args == [c]
    with qtbot.waitSignal(picker.pin_requested) as asked:
        menu.actions()[1].trigger()
    assert asked.args == [c, False]
    picker.set_residents(ResidentModels())
    assert [combo.itemText(i) for i in range(1, 3)] == ["a", "b"] and combo.findData(c) == -1


def test_the_list_opens_wide_enough_for_the_longest_entry(qtbot) -> None:
    picker = ModelPicker()
    qtbot.addWidget(picker.combo)
    long = "/m/local/Meta-Llama-3.1-70B-Instruct-abliterated-uncensored-Q4_K_M.gguf"
    picker.set_library([long, "/m/local/a.gguf"])
    picker.set_residents(resident_models(long, long, pinned=long))
    text = picker.combo.itemText(1)
    assert text.startswith("● ") and text.endswith(" · pinned")
    view = picker.combo.view()
    assert view.minimumWidth() >= view.fontMetrics().horizontalAdvance(text) > picker.combo.minimumWidth()
    picker.show_current(long)
    assert "In memory: 128.0 MiB" in picker.combo.toolTip()  # the picker itself says it for the model shown
    picker.show_current("")
    assert picker.combo.toolTip() == ""
