"""The Models page against the fake hub on 127.0.0.1: search, files and fit, downloads, library."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QToolBar

from prefill.engine.llama.hardware import GpuMemory, MachineMemory
from prefill.engine.units import format_bytes
from prefill.hub.client import HubClient
from prefill.hub.library import ModelLibrary
from prefill.hub.manager import JobState
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.paths import PARTIAL_DIR
from prefill.ui.models import repo_files
from prefill.ui.models.download_worker import DownloadWorker, format_eta
from prefill.ui.models.page import ModelsPage
from tests.hub.conftest import FAST, _hub_env, add_repo, client, hub, payload  # noqa: F401 - fixtures
from tests.hub.fake_hub import FakeHub
from tests.hub.gguf_factory import write_tiny_gguf
from tests.ui.conftest import answer_next_box

REPO = "org/Tiny-GGUF"
WAIT = 10_000
MACHINE = MachineMemory(32 << 30, 16 << 30, (GpuMemory(0, "Fake GPU", 8 << 30, 8 << 30),))


def tiny_bytes(tmp_path: Path, name: str, **kw: object) -> bytes:
    return write_tiny_gguf(tmp_path / "src" / name, name=name, **kw).read_bytes()  # type: ignore[arg-type]


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "models"


@pytest.fixture
def page(qtbot, client: HubClient, models_dir: Path):  # noqa: F811
    downloads = DownloadWorker(client, models_dir, policy=FAST)
    library = ModelLibrary(models_dir, hf_cache_dir=False, include_bundled=False)
    p = ModelsPage(client, library, downloads, n_ctx=lambda: 1024, kv_type=lambda: "f16", memory=lambda: MACHINE)
    qtbot.addWidget(p)
    qtbot.waitUntil(lambda: not p.jobs.busy, timeout=WAIT)  # the first library scan
    yield p
    p.close_jobs()
    downloads.close()


def search(qtbot, page: ModelsPage, query: str) -> None:
    page.query.setText(query)
    page.search_button.click()
    qtbot.waitUntil(lambda: page.message.text() != "Searching…", timeout=WAIT)


def open_repo(qtbot, page: ModelsPage, repo_id: str) -> None:
    search(qtbot, page, repo_id)
    assert page.result_cards.row_of(repo_id) >= 0
    page.select_result(repo_id)  # as a click on its card
    qtbot.waitUntil(lambda: page.listing is not None and page.listing.repo_id == repo_id, timeout=WAIT)


def select_file(page: ModelsPage, name: str) -> None:
    for g in range(page.files.topLevelItemCount()):
        group = page.files.topLevelItem(g)
        for c in range(group.childCount()):
            if group.child(c).text(0) == name:
                page.files.setCurrentItem(group.child(c))
                return
    raise AssertionError(f"{name} is not listed")


def download(qtbot, page: ModelsPage, name: str) -> int:
    select_file(page, name)
    assert page.download_button.isEnabled()
    with qtbot.waitSignal(page.downloads.command_done, timeout=WAIT,
                          check_params_cb=lambda name, _job: name == "add") as blocker:
        page.download_button.click()
    return int(blocker.args[1])


def test_search_lists_repositories_sortable(qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path) -> None:  # noqa: F811
    add_repo(hub, "org/Alpha-GGUF", {"a-Q4_0.gguf": b"x"}, downloads=10, likes=900)
    add_repo(hub, "org/Beta-GGUF", {"b-Q4_0.gguf": b"x"}, downloads=500, likes=3)
    add_repo(hub, "org/Other", {"c-Q4_0.gguf": b"x"}, tags=["safetensors"])  # not GGUF: never listed
    search(qtbot, page, "")
    cards = page.result_cards.cards
    assert [c.key for c in cards] == ["org/Beta-GGUF", "org/Alpha-GGUF"] and cards[0].title == "Beta"
    assert cards[0].lines[:2] == ("org · updated 1 Jan 2024", "500 downloads · 3 likes")
    page.sort.setCurrentIndex(page.sort.findData("likes"))
    page.sort.activated.emit(page.sort.currentIndex())  # what a choice of "Most likes" does: search again
    qtbot.waitUntil(lambda: [c.key for c in page.result_cards.cards] == ["org/Alpha-GGUF", "org/Beta-GGUF"],
                    timeout=WAIT)
    search(qtbot, page, "no-such-thing")
    assert page.result_cards.rowCount() == 0 and "No GGUF repositories match" in page.message.text()


def test_repo_files_grouped_with_size_and_fit(qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path) -> None:  # noqa: F811
    files = {
        "tiny-Q4_K_M.gguf": tiny_bytes(tmp_path, "q4"),
        "tiny-Q8_0-00001-of-00002.gguf": tiny_bytes(tmp_path, "p1"),
        "tiny-Q8_0-00002-of-00002.gguf": tiny_bytes(tmp_path, "p2"),
        "mmproj-tiny-F16.gguf": tiny_bytes(tmp_path, "proj"),
        "README.md": b"# tiny",
    }
    add_repo(hub, REPO, files)
    open_repo(qtbot, page, REPO)
    qtbot.waitUntil(lambda: len(page.fits) == 2, timeout=WAIT)
    groups = {page.files.topLevelItem(i).text(0).split()[0]: page.files.topLevelItem(i)
              for i in range(page.files.topLevelItemCount())}
    assert set(groups) == {"Q4_K_M", "Q8_0", "F16"}
    q8 = groups["Q8_0"].child(0)
    assert q8.text(0) == "tiny-Q8_0.gguf"
    assert q8.text(1) == format_bytes(len(files["tiny-Q8_0-00001-of-00002.gguf"]) * 2)
    badge = repo_files.badge(page.files, q8)
    assert badge is not None and badge.verdict() == "good"  # the fit_good colours (styles/models.py)
    # the verdict and its figures in view, not only on hover
    assert badge.badge.text() == "Fits on the GPU" and badge.figures.isVisibleTo(badge)
    assert badge.text().startswith("Fits on the GPU: needs 0.")
    assert "of 8.0 GiB free GPU memory, at 1,024 tokens" in badge.text()
    assert "KV cache" in badge.toolTip() and "compute buffers" in badge.toolTip()
    assert groups["F16"].child(0).text(repo_files.FIT).startswith("vision projector")
    assert page.message.text() == ""


def test_download_appears_in_library_and_loads_in_one_click(
    qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path, models_dir: Path  # noqa: F811
) -> None:
    add_repo(hub, REPO, {"tiny-Q4_K_M.gguf": tiny_bytes(tmp_path, "q4")})
    open_repo(qtbot, page, REPO)
    with qtbot.waitSignal(page.queue.finished, timeout=WAIT) as done:
        job = download(qtbot, page, "tiny-Q4_K_M.gguf")
    path = done.args[0].paths[0]
    assert path.is_relative_to(models_dir) and page.queue.state(job) == JobState.DONE
    qtbot.waitUntil(lambda: [m.path for m in page.library_panel.models] == [path], timeout=WAIT)
    card = page.library_panel.cards.cards[0]
    assert card.lines[0].startswith("llama · ") and card.lines[1] == "library · chat template"
    with qtbot.waitSignal(page.load_requested, timeout=WAIT) as load:
        page.queue.button(job, "load").click()
    assert load.args == [str(path)]
    page.library_panel.select_row(0)
    with qtbot.waitSignal(page.load_requested, timeout=WAIT) as load:
        page.library_panel.load_button.click()
    assert load.args == [str(path)]


def test_pause_resume_cancel(qtbot, page: ModelsPage, hub: FakeHub, models_dir: Path) -> None:  # noqa: F811
    add_repo(hub, REPO, {"a-Q4_0.gguf": payload(3_000_000, 1), "b-Q8_0.gguf": payload(2_000_000, 2)})
    open_repo(qtbot, page, REPO)
    qtbot.waitUntil(lambda: len(page.fits) == 2, timeout=WAIT)  # the header reads are over
    unknown = repo_files.badge(page.files, page.files.topLevelItem(0).child(0))
    assert unknown is not None and unknown.text().startswith("Fit unknown: no estimate: ")  # random bytes, no GGUF
    hub.stall_after["a-Q4_0.gguf"] = 1_000_000
    q = page.queue
    a = download(qtbot, page, "a-Q4_0.gguf")
    b = download(qtbot, page, "b-Q8_0.gguf")  # waits behind a: one download at a time
    qtbot.waitUntil(lambda: q.state(a) == JobState.RUNNING and q.state(b) == JobState.QUEUED, timeout=WAIT)
    assert not q.button(b, "resume").isEnabled()
    q.button(b, "cancel").click()
    qtbot.waitUntil(lambda: q.state(b) == JobState.CANCELLED, timeout=WAIT)
    assert not q.button(b, "cancel").isEnabled() and not q.button(b, "load").isEnabled()
    partial = models_dir / PARTIAL_DIR
    qtbot.waitUntil(lambda: any(p.stat().st_size >= 1_000_000 for p in partial.glob("*a-Q4_0*.part")), timeout=WAIT)
    with qtbot.waitSignal(page.downloads.command_done, timeout=WAIT):
        q.button(a, "pause").click()
    hub.release()  # the stalled transfer reads on, sees the stop flag and keeps its bytes
    qtbot.waitUntil(lambda: q.state(a) == JobState.PAUSED, timeout=WAIT)
    assert q.button(a, "resume").isEnabled() and not q.button(a, "pause").isEnabled()
    assert list((models_dir / PARTIAL_DIR).glob("*.part"))
    with qtbot.waitSignal(q.finished, timeout=WAIT):
        q.button(a, "resume").click()
    assert q.state(a) == JobState.DONE and q.events[a].paths[0].read_bytes() == payload(3_000_000, 1)
    assert q.button(a, "load").isEnabled()


def test_unreachable_hub_is_said(qtbot, models_dir: Path, closed_endpoint: str) -> None:
    offline = HubClient(endpoint=closed_endpoint, timeout=2)
    downloads = DownloadWorker(offline, models_dir, policy=FAST)
    library = ModelLibrary(models_dir, hf_cache_dir=False, include_bundled=False)
    page = ModelsPage(offline, library, downloads, lambda: 1024, lambda: "f16", memory=lambda: MACHINE)
    qtbot.addWidget(page)
    try:
        with qtbot.waitSignal(page.message_shown, timeout=WAIT,
                              check_params_cb=lambda text: text.startswith("The search failed")) as shown:
            page.search()
        assert f"cannot reach the model hub at {closed_endpoint}" in shown.args[0]
        assert page.message.text() == shown.args[0]
    finally:
        page.close_jobs()
        downloads.close()


def test_missing_repo_is_said(qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, "org/Gone-GGUF", {"a-Q4_0.gguf": b"x"})
    search(qtbot, page, "Gone")
    del hub.repos["org/Gone-GGUF"]  # removed between the search and the click
    with qtbot.waitSignal(page.message_shown, timeout=WAIT, check_params_cb=lambda t: "could not be listed" in t):
        page.select_result("org/Gone-GGUF")
    assert "'org/Gone-GGUF' was not found on the hub" in page.message.text()


def test_delete_asks_first(qtbot, page: ModelsPage, tmp_path: Path) -> None:
    src = write_tiny_gguf(tmp_path / "elsewhere" / "mine.gguf")
    panel = page.library_panel
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.import_file(src, "symlink")
    assert [m.source for m in panel.models] == ["imported"] and panel.selected() is not None
    seen: list[tuple[str, Qt.TextFormat]] = []
    answer_next_box(QMessageBox.StandardButton.No, seen)
    panel.delete_button.click()  # No: nothing happens
    assert not page.jobs.busy and len(panel.models) == 1
    answer_next_box(QMessageBox.StandardButton.Yes, seen)
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.delete_button.click()
    assert panel.models == [] and src.exists()  # the link went, its target stays
    assert len(seen) == 2  # the name is shown as written, never as markup
    assert all("mine.gguf" in text and fmt == Qt.TextFormat.PlainText for text, fmt in seen)


def test_import_copy_of_a_non_gguf_is_refused(qtbot, page: ModelsPage, tmp_path: Path) -> None:
    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"not a model")
    with qtbot.waitSignal(page.message_shown, timeout=WAIT):
        page.library_panel.import_file(bad, "copy")
    assert page.message.text().startswith("notes.gguf could not be imported:")


def test_fit_compared_with_a_real_load(qtbot, page: ModelsPage, engine, smollm2: Path) -> None:
    """SmolLM2 loaded by llama.cpp: its weights as llama_model_size measures them, and the engine's
    KV cache (cells x bytes per cell; the allocator's own figure is checked in test_fit_measured)."""
    loaded = SimpleNamespace(path=smollm2, n_ctx=engine.n_ctx, bytes_per_cell=engine.bytes_per_cell,
                             model_bytes=engine.runtime.model_bytes())
    with qtbot.waitSignal(page.fit_compared, timeout=WAIT) as compared:
        page.compare_loaded(loaded)
    text = compared.args[0]
    assert text.startswith(f"At {engine.n_ctx} tokens: weights") and "Predicted" not in text  # no memory before
    weights, kv = (int(p) for p in re.findall(r"\(([+-]\d+)%\)", text))
    assert abs(weights) <= 5 and abs(kv) <= 2, text


def test_formats() -> None:
    assert format_bytes(None) == "?" and format_bytes(12) == "12 B" and format_bytes(3 << 30) == "3.0 GiB"
    assert format_eta(None) == "" and format_eta(249) == "4:09" and format_eta(3903) == "1:05:03"


def test_abandoned_downloads_shown_and_removed(
    qtbot, page: ModelsPage, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = page.library_panel
    assert panel.abandoned_box.isHidden()  # none: no section at all
    part = PartialFile(models_dir, Expected("org/Old-GGUF", "Q8_0/old-Q8_0.gguf", 8 << 20, None))
    part.prepare()
    part.path.write_bytes(b"x" * (2 << 20))
    week_ago = time.time() - 8 * 24 * 3600
    for f in (part.path, part.sidecar):
        os.utime(f, (week_ago, week_ago))
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.refresh()
    t = panel.abandoned_cards
    assert not panel.abandoned_box.isHidden() and t.rowCount() == 1
    assert t.cards[0].title == "org/Old-GGUF/Q8_0/old-Q8_0.gguf"
    assert t.cards[0].lines[0].startswith("2.0 MiB of 8.0 MiB · last written ")
    asked: list[tuple[str, Qt.TextFormat]] = []
    answer_next_box(QMessageBox.StandardButton.Yes, asked)
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.remove_abandoned_button.click()
    assert "frees 2.0 MiB" in asked[0][0] and asked[0][1] == Qt.TextFormat.PlainText
    assert not part.path.exists() and t.rowCount() == 0 and panel.abandoned_box.isHidden()


def test_download_held_elsewhere_is_said(qtbot, page: ModelsPage, hub: FakeHub, models_dir: Path) -> None:  # noqa: F811
    add_repo(hub, REPO, {"a-Q4_0.gguf": payload(1000)})
    open_repo(qtbot, page, REPO)
    part = PartialFile(models_dir, Expected(REPO, "a-Q4_0.gguf", None, None))
    # as `prefill get` in another process holds it
    with part.claimed(), qtbot.waitSignal(page.queue.error, timeout=WAIT) as said:
        job = download(qtbot, page, "a-Q4_0.gguf")
    assert said.args[0] == (f"Downloading a-Q4_0.gguf failed: a-Q4_0.gguf is already being downloaded by process "
                            f"{os.getpid()}; let that download finish (or stop it) and try again.")
    assert page.message.text() == said.args[0] and page.queue.state(job) == JobState.FAILED
    with qtbot.waitSignal(page.queue.finished, timeout=WAIT):
        page.queue.button(job, "resume").click()  # the other one let go: resume finishes it


def test_hostile_hub_name_is_refused_and_shown_as_plain_text(
    qtbot, page: ModelsPage, hub: FakeHub, models_dir: Path  # noqa: F811
) -> None:
    name = "<img src=x.png><b>Q4_0.gguf"
    add_repo(hub, REPO, {name: b"x"})
    open_repo(qtbot, page, REPO)
    with qtbot.waitSignal(page.queue.error, timeout=WAIT) as said:
        job = download(qtbot, page, name)
    assert said.args[0].startswith(f"Downloading {name} failed: refusing the file name {name!r}")
    assert page.message.textFormat() == Qt.TextFormat.PlainText and page.message.text() == said.args[0]
    tip = page.queue.row(job).state.toolTip()
    assert "&lt;img src=" in tip and "<img" not in tip
    assert page.queue.row(job).name.textFormat() == Qt.TextFormat.PlainText
    assert page.queue.state(job) == JobState.FAILED and not list(models_dir.rglob("*.gguf"))


def test_hub_text_is_plain_text(qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path) -> None:  # noqa: F811
    from tests.ui.test_plain_text import text_problems

    files = {"tiny-<b>Q4_0</b>.gguf": tiny_bytes(tmp_path, "q4"), "tiny-<img src=x>-Q8_0.gguf": b"not a model"}
    add_repo(hub, REPO, files)
    open_repo(qtbot, page, REPO)
    qtbot.waitUntil(lambda: len(page.fits) == 2, timeout=WAIT)
    tips = [item.toolTip(0) for item in repo_files.model_items(page.files)]
    assert any("&lt;img src=x&gt;" in tip for tip in tips)  # the hub's names reached the tooltips, escaped
    assert text_problems(page) == []


def test_a_vision_model_comes_with_its_projector(
    qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path, models_dir: Path  # noqa: F811
) -> None:
    from prefill.bench.tiny_vision import write_tiny_vision

    model, mmproj = write_tiny_vision(tmp_path / "pair")
    add_repo(hub, REPO, {"vis-Q8_0.gguf": model.read_bytes(), "mmproj-vis-f16.gguf": mmproj.read_bytes(),
                         "mmproj-vis-f32.gguf": payload(5000, 4)})
    open_repo(qtbot, page, REPO)
    qtbot.waitUntil(lambda: "vis-Q8_0.gguf" in page.fits, timeout=WAIT)
    groups = {page.files.topLevelItem(i).text(0).split()[0]: page.files.topLevelItem(i)
              for i in range(page.files.topLevelItemCount())}
    item = groups["Q8_0"].child(0)
    assert item.childCount() == 1 and item.child(0).text(0) == "+ projector mmproj-vis-f16.gguf"
    assert item.child(0).text(1) == format_bytes(len(mmproj.read_bytes()))
    fit = repo_files.badge(page.files, item)
    assert fit is not None and "with its image projector" in fit.text() and "an image of 16 tokens" in fit.text()
    with qtbot.waitSignal(page.queue.finished, timeout=WAIT) as done:
        download(qtbot, page, "vis-Q8_0.gguf")
    paths = done.args[0].paths
    assert [p.name for p in paths] == ["vis-Q8_0.gguf", "mmproj-vis-f16.gguf"]
    assert paths[1].read_bytes() == mmproj.read_bytes() and paths[1].parent == paths[0].parent
    qtbot.waitUntil(lambda: [m.path for m in page.library_panel.models] == [paths[0]], timeout=WAIT)
    assert "sees images (mmproj-vis-f16.gguf)" in page.library_panel.cards.cards[0].lines[1]


CARD = b"""---
license: apache-2.0
base_model:
- org/Tiny
tags: [gguf]
---
# Tiny model

<img src="file:///etc/passwd.png"> <b>not bold</b> ![logo](https://example.com/logo.png)

Use **Q4_K_M** on laptops.
"""


def test_model_card_is_the_readme_as_text_and_loads_nothing(qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, REPO, {"tiny-Q4_0.gguf": b"x", "README.md": CARD})
    with qtbot.waitSignal(page.card_shown, timeout=WAIT):
        open_repo(qtbot, page, REPO)
    text = page.card.toPlainText()
    assert "Tiny model" in text and "Use Q4_K_M on laptops." in text  # markdown rendered: ** gone
    assert '<img src="file:///etc/passwd.png"> <b>not bold</b>' in text  # the HTML shows as the text it is
    assert "[image: logo]" in text and "License\napache-2.0" in text and "Base model\norg/Tiny" in text  # facts as rows
    assert "tags:" not in text and "---" not in text  # the front matter is not the card
    assert page.card.resources_asked == []  # no image, from disk or the web, was asked for
    assert "<img" not in page.card.toHtml()  # no img element in the document: only escaped text


def test_a_repository_without_a_card_says_so(qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, REPO, {"tiny-Q4_0.gguf": b"x"})
    with qtbot.waitSignal(page.card_shown, timeout=WAIT):
        open_repo(qtbot, page, REPO)
    assert page.card.toPlainText() == f"{REPO} has no model card (README.md)."


def test_a_new_search_clears_the_last_repository_at_once(qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, REPO, {"tiny-Q4_0.gguf": b"x", "README.md": b"# Old card"})
    with qtbot.waitSignal(page.card_shown, timeout=WAIT):
        open_repo(qtbot, page, REPO)
    select_file(page, "tiny-Q4_0.gguf")
    assert page.download_button.isEnabled() and "Old card" in page.card.toPlainText()
    page.query.setText("something else")
    page.search_button.click()  # nothing has come back yet: the old files must be gone already
    assert page.files.topLevelItemCount() == 0 and page.listing is None and page.result_cards.rowCount() == 0
    assert not page.download_button.isEnabled() and page.selected_model() is None
    assert "Old card" not in page.card.toPlainText() and page.repo_title.text() == ""
    qtbot.waitUntil(lambda: page.message.text() != "Searching…", timeout=WAIT)
    assert page.files.topLevelItemCount() == 0  # and nothing late from the old listing came back


def test_downloaded_marker_and_one_row_per_file(qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path) -> None:  # noqa: F811
    add_repo(hub, REPO, {"tiny-Q4_K_M.gguf": tiny_bytes(tmp_path, "q4"), "tiny-Q8_0.gguf": tiny_bytes(tmp_path, "q8")})
    open_repo(qtbot, page, REPO)
    items = {i.text(0): i for i in repo_files.model_items(page.files)}
    assert items["tiny-Q4_K_M.gguf"].text(repo_files.HERE) == ""
    with qtbot.waitSignal(page.library_panel.refreshed, timeout=WAIT), \
            qtbot.waitSignal(page.queue.finished, timeout=WAIT):
        download(qtbot, page, "tiny-Q4_K_M.gguf")
    qtbot.waitUntil(lambda: items["tiny-Q4_K_M.gguf"].text(repo_files.HERE) == repo_files.DOWNLOADED, timeout=WAIT)
    assert items["tiny-Q8_0.gguf"].text(repo_files.HERE) == ""
    assert page.message.text() == "tiny-Q4_K_M.gguf is downloaded: it is listed under On this machine."
    select_file(page, "tiny-Q4_K_M.gguf")
    assert page.download_button.text() == "Downloaded" and not page.download_button.isEnabled()
    # The same file again (as after deleting it, or from another path): its row is reused.
    m = page.selected_model()
    assert m is not None and page.listing is not None
    with qtbot.waitSignal(page.queue.finished, timeout=WAIT) as again:
        page.downloads.add(REPO, m, page.listing.commit)
    job = again.args[0].job_id
    assert page.queue.row_count() == 1 and page.queue.state(job) == JobState.DONE
    assert page.queue.row(job).state.text() == "Done"
    assert "is queued" not in page.message.text()


def test_suggested_models_fit_this_machine(qtbot, client: HubClient, models_dir: Path, hub: FakeHub) -> None:  # noqa: F811
    from prefill.hub.suggested import SUGGESTIONS

    small = MachineMemory(4 << 30, 2 << 30)  # 2 GiB free RAM, no GPU
    downloads = DownloadWorker(client, models_dir, policy=FAST)
    library = ModelLibrary(models_dir, hf_cache_dir=False, include_bundled=False)
    p = ModelsPage(client, library, downloads, n_ctx=lambda: 4096, kv_type=lambda: "f16", memory=lambda: small)
    qtbot.addWidget(p)
    try:
        qtbot.waitUntil(lambda: bool(p.suggestions), timeout=WAIT)
        shown = [s for s, _e in p.suggestions]
        assert shown and all(s.size < 1_500_000_000 for s in shown) and len(shown) < len(SUGGESTIONS)
        cards = p.result_cards.cards  # before any search, the list shows them as cards
        assert [c.key for c in cards] == [s.repo_id for s in shown]
        assert cards[0].title == "Qwen2.5 1.5B Instruct · Q4_K_M"  # the largest that fits first
        assert cards[0].verdict == "cpu" and cards[0].chip_words == "Runs on the CPU"
        assert cards[0].lines[0].startswith("Qwen · 1.0 GiB · 1.") and cards[0].lines[0].endswith(" / 2.0 GiB")
        assert cards[0].lines[1] == "Small chat model, good at following instructions"
        # A suggestion opens its repository with its file selected.
        s = shown[0]
        add_repo(hub, s.repo_id, {s.filename: b"x", "README.md": b"# Llama"})
        with qtbot.waitSignal(p.card_shown, timeout=WAIT):
            p.select_result(s.repo_id)
        qtbot.waitUntil(lambda: p.listing is not None, timeout=WAIT)  # the card and the listing: either first
        assert p.selected_model() is not None and p.selected_model().first.filename == s.filename
        assert p.download_button.isEnabled() and "Llama" in p.card.toPlainText()
    finally:
        p.close_jobs()
        downloads.close()


def test_models_is_a_tab_of_the_main_window(app, qtbot, tmp_path: Path, monkeypatch, closed_endpoint: str) -> None:
    from dataclasses import replace

    from PySide6.QtWidgets import QApplication

    from prefill.ui.models.main_tabs import CHAT, MODELS
    from tests.ui.conftest import small_settings

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint)  # the page reaches no hub
    base = small_settings()
    w = app.open(replace(base, ui=replace(base.ui, models_dir=str(tmp_path / "models"))))
    assert w.centralWidget() is w.tabs and w.models_page is None  # built on first use
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)  # window shortcuts answer only in the active window
    keys = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier

    def press() -> None:
        qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key.Key_M, keys)

    press()
    page = w.models_page
    assert page is not None and page.window() is w and page.isVisible()
    assert w.tabs.currentIndex() == MODELS and not w.splitter.isVisible()
    press()
    assert w.tabs.currentIndex() == CHAT and w.splitter.isVisible() and not page.isVisible()
    assert w.models_action not in w.findChild(QToolBar).actions()  # one entry: the tab (and its shortcut)
    w.models_action.trigger()  # the shortcut's action, the same way
    assert w.models_page is page and page.isVisible()
    w.tabs.setCurrentIndex(CHAT)  # a click on the Chat tab
    assert w.splitter.isVisible()
    w.open_models()
    assert w.tabs.currentIndex() == MODELS and w.models_page is page


def test_a_gated_repository_points_to_the_token_field_in_settings(
        qtbot, page: ModelsPage, hub: FakeHub, tmp_path: Path) -> None:  # noqa: F811
    add_repo(hub, "meta/Gated-GGUF", {"g-Q4_0.gguf": tiny_bytes(tmp_path, "g")}, gated=True)
    open_repo(qtbot, page, "meta/Gated-GGUF")
    download(qtbot, page, "g-Q4_0.gguf")
    qtbot.waitUntil(lambda: "is gated" in page.message.text(), timeout=WAIT)
    said = page.message.text()
    assert "Settings › Downloads › Hugging Face token" in said and "HF_TOKEN" not in said, said


def test_the_copy_button_of_a_code_block_in_a_model_card_copies_its_code(qtbot) -> None:
    from PySide6.QtGui import QGuiApplication

    from prefill.hub.model_card import ModelCard
    from prefill.ui.models.card_view import CardView

    view = CardView()
    qtbot.addWidget(view)
    view.show_card(ModelCard("a/b", "Run it:\n\n```bash\nllama-cli -m b.gguf\n```\n", ()), "a/b")
    assert 'href="copy:0"' not in view.toHtml() and len(view.copy_buttons) == 1  # a button, not a link
    QGuiApplication.clipboard().setText("")
    view.copy_buttons[0].click()
    assert QGuiApplication.clipboard().text() == "llama-cli -m b.gguf"
