"""A model whose last load never finished is not reopened by itself at the next start."""

from __future__ import annotations

from pathlib import Path

from prefill.store.load_marker import LoadMarker
from prefill.ui.app import model_to_open
from tests.ui.conftest import small_settings


def test_marker_round_trip_and_faults(tmp_path: Path) -> None:
    m = LoadMarker(tmp_path / "cfg" / "loading.json")
    assert m.unfinished() is None
    m.begin("/models/a.gguf")
    assert m.unfinished() == "/models/a.gguf"
    m.end()
    assert m.unfinished() is None
    m.path.write_text("{not json", encoding="utf-8")
    assert m.unfinished() is None  # a damaged marker is no marker


def test_start_up_skips_a_model_whose_load_never_ended(tmp_path: Path) -> None:
    model = tmp_path / "hangs.gguf"
    model.write_bytes(b"GGUF")
    path, notice = model_to_open(None, str(model), str(model))
    assert path is None and "was not reopened" in notice and "hangs.gguf" in notice
    assert model_to_open(None, str(model), None) == (str(model), "")
    assert model_to_open(str(model), str(model), str(model)) == (str(model), "")  # asked for: loaded
    assert model_to_open(None, str(model), str(tmp_path / "other.gguf")) == (str(model), "")


def test_the_window_marks_a_load_until_it_ends(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    seen: list[str | None] = []
    with qtbot.waitSignal(w.model_loaded, timeout=60_000):
        w.load_model(str(smollm2))
        # Store calls run in order: this read comes after the marker is written, before it is removed.
        w.store.unfinished_load(then=seen.append)
    w.store.unfinished_load(then=seen.append)
    qtbot.waitUntil(lambda: len(seen) == 2, timeout=10_000)
    assert seen == [str(smollm2), None]
