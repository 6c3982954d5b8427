"""The tool bar's model picker follows the library: a model downloaded from the Models page is listed
in it, and in the model finder (Ctrl+K), at once, without a restart (the test hub on 127.0.0.1 stands in
for Hugging Face)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from prefill.engine.units import format_bytes
from prefill.hub.client import HubClient
from tests.hub.conftest import _hub_env, add_repo, client, hub  # noqa: F401 - fixtures
from tests.hub.fake_hub import FakeHub
from tests.hub.gguf_factory import write_tiny_gguf
from tests.ui.conftest import small_settings
from tests.ui.test_models_page import REPO, WAIT, download, open_repo


def _picker_paths(w) -> list[str]:
    combo = w.model_combo
    return [combo.itemData(i) for i in range(combo.count())]


def test_picker_lists_a_model_just_downloaded_from_the_test_hub(
        app, qtbot, hub: FakeHub, client: HubClient, tmp_path: Path) -> None:  # noqa: F811
    add_repo(hub, REPO, {"tiny-Q4_K_M.gguf": write_tiny_gguf(tmp_path / "src" / "q4", name="q4").read_bytes()})
    models = tmp_path / "models"
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(models))))
    w.open_models()
    page = w.models_page
    qtbot.waitUntil(lambda: not page.jobs.busy, timeout=WAIT)  # the first library scan
    listed_before = _picker_paths(w)
    open_repo(qtbot, page, REPO)
    with qtbot.waitSignal(page.queue.finished, timeout=WAIT) as done:
        download(qtbot, page, "tiny-Q4_K_M.gguf")
    path = str(done.args[0].paths[0])
    assert path not in listed_before and Path(path).is_relative_to(models)
    qtbot.waitUntil(lambda: path in _picker_paths(w), timeout=WAIT)  # no restart, no click on Refresh
    at = _picker_paths(w).index(path)
    assert "Tiny" in w.model_combo.itemText(at) and "Q4_K_M" in w.model_combo.itemText(at)
    finder = w.model_finder  # and in the finder (Ctrl+K), with its size once measured
    finder.open_finder()
    assert path in finder.shown_paths()
    qtbot.keyClicks(finder.query, "tiny q4_k_m")
    assert finder.shown_paths() == [path]
    qtbot.waitUntil(lambda: path in finder.measured, timeout=WAIT)
    assert finder.cards.cards[finder.cards.row_of(path)].lines[0].startswith(format_bytes(Path(path).stat().st_size))
    finder.reject()
