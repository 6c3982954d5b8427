"""The Models page's cards: counts as "900K", dates in words, a fit chip painted in its verdict's colours,
and a page whose buttons stay in view at 900×600 (the test hub on 127.0.0.1 stands in for Hugging Face)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from PySide6.QtGui import QColor, QFont, QFontMetrics, QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

from prefill.engine.llama.hardware import GpuMemory, MachineMemory
from prefill.hub.client import RepoSummary
from prefill.ui.models.card_words import result_card, short_count, updated_words
from prefill.ui.models.fit_chip import chip_font, chip_size
from prefill.ui.models.page import ModelsPage
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.theme import build_palette
from prefill.ui.widgets.tokens import SPACE, TYPE
from tests.hub.conftest import _hub_env, add_repo, client, hub  # noqa: F401 - fixtures
from tests.hub.fake_hub import FakeHub
from tests.ui.conftest import small_settings
from tests.ui.test_models_page import MACHINE, models_dir, page, search  # noqa: F401 - fixtures

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def test_counts_read_as_900K_and_dates_as_days_ago() -> None:
    assert [short_count(n) for n in (950, 48_210, 900_000, 1_234_567, 12_000_000, 3_400_000_000)] == [
        "950", "48.2K", "900K", "1.2M", "12M", "3.4B"]
    assert updated_words(datetime(2026, 12, 2, 9, tzinfo=UTC), NOW) == "3 days ago"
    assert updated_words(datetime(2026, 12, 4, 23, tzinfo=UTC), NOW) == "yesterday"
    assert updated_words(datetime(2026, 11, 14, tzinfo=UTC), NOW) == "3 weeks ago"
    assert updated_words(datetime(2024, 3, 12, tzinfo=UTC), NOW) == "12 Mar 2024"


def test_search_cards_show_downloads_as_900K_likes_and_when_updated(
        qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, "bartowski/Tiny-GGUF", {"tiny-Q4_0.gguf": b"x"}, downloads=900_000, likes=1_204,
             last_modified="2024-03-12T10:00:00.000Z", params=1_235_814_432)
    add_repo(hub, "someone/Plain-GGUF", {"p-Q4_0.gguf": b"x"}, downloads=12)
    search(qtbot, page, "GGUF")
    tiny, plain = page.result_cards.cards
    assert tiny.title == "Tiny" and tiny.key == "bartowski/Tiny-GGUF"  # every result is GGUF: the name says the rest
    assert tiny.lines == ("bartowski · updated 12 Mar 2024", "900K downloads · 1.2K likes · 1.24B parameters",
                          "718.9 MiB at Q4_K_M")  # 0.61 bytes a parameter
    assert tiny.verdict == "good"  # 0.7 GiB on an 8 GiB GPU
    assert plain.lines[1] == "12 downloads" and plain.verdict == ""  # no size said: no chip
    assert len(page.results.model().cards) == 2 and page.results.isVisible() is page.isVisible()


def test_the_fit_chip_is_painted_in_its_verdicts_colours(qtbot, page: ModelsPage, hub: FakeHub) -> None:  # noqa: F811
    add_repo(hub, "org/Small-GGUF", {"s-Q4_0.gguf": b"x"}, downloads=20, params=1_000_000_000)  # on the GPU
    add_repo(hub, "org/Huge-GGUF", {"h-Q4_0.gguf": b"x"}, downloads=10, params=400_000_000_000)  # 240 GB
    page.resize(900, 600)
    page.show()
    search(qtbot, page, "GGUF")
    assert [(c.key, c.verdict, c.chip_words) for c in page.result_cards.cards] == [
        ("org/Small-GGUF", "good", "Fits the GPU"), ("org/Huge-GGUF", "no", "Too big")]
    app = QApplication.instance()
    before = QGuiApplication.palette()
    try:
        for theme in ("light", "dark"):
            app.setPalette(build_palette(theme))
            c = colours_for(theme)
            shot = page.results.viewport().grab().toImage()
            for row, fill in ((0, c.fit_good_bg), (1, c.fit_no_bg)):
                rect = page.results.visualRect(page.result_cards.index(row))
                w, h = chip_size(chip_font(page.results.font()), page.result_cards.cards[row].chip_words)
                card = page.result_cards.cards[row]
                # At the end of the last line: its left end, mid-height, off the words.
                title_h = QFontMetrics(_font(page.results, TYPE.body, bold=True)).height()
                small_h = QFontMetrics(_font(page.results, TYPE.small)).height()
                line_top = rect.top() + SPACE.md + title_h + SPACE.xxs + (len(card.lines) - 1) * (small_h + SPACE.xxs)
                x, y = rect.right() - SPACE.md - w + 2, line_top + small_h // 2
                assert QColor(shot.pixel(x, y)).name() == fill, (theme, row)
    finally:
        app.setPalette(before)
    for theme in ("light", "dark"):  # the file rows' badges: the same roles, by their verdict property
        c = colours_for(theme)
        assert f'QLabel#fit-badge[verdict="cpu"] {{ color: {c.fit_cpu}; background: {c.fit_cpu_bg}; }}' \
            in style_sheet(theme)


def _font(view: QWidget, pixels: int, bold: bool = False) -> QFont:
    f = QFont(view.font())
    f.setPixelSize(pixels)
    if bold:
        f.setWeight(QFont.Weight.DemiBold)
    return f


def test_result_card_without_a_machine_has_no_chip() -> None:
    hit = RepoSummary("a/b-GGUF", 5, 0, None, False, params=7_000_000_000)
    card = result_card(hit, None, NOW)
    assert card.verdict == "" and card.lines == ("a", "5 downloads · 7.00B parameters", "4.0 GiB at Q4_K_M")
    small = MachineMemory(8 << 30, 6 << 30)
    assert result_card(hit, small, NOW).verdict == "cpu"  # 4.3 GB of weights in 6 GiB free RAM, no GPU
    gpu = replace(small, gpus=(GpuMemory(0, "GPU", 24 << 30, 24 << 30),))
    assert result_card(hit, gpu, NOW).verdict == "good"


def _in_view(w: QWidget, button: QWidget) -> bool:
    """Shown whole: not clipped by a scroll area or a splitter, inside the window."""
    if not button.isVisible() or button.visibleRegion().boundingRect() != button.rect():
        return False
    top_left = button.mapTo(w, button.rect().topLeft())
    bottom_right = button.mapTo(w, button.rect().bottomRight())
    return w.rect().contains(top_left) and w.rect().contains(bottom_right)


def test_at_900x600_the_librarys_load_and_import_buttons_are_in_view_with_serve_open_too(app, qtbot, tmp_path: Path,
                                                                     monkeypatch, closed_endpoint: str) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint)  # the page reaches no hub
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(tmp_path / "models"))))
    w.resize(900, 600)
    w.open_models()
    models = w.models_page
    qtbot.waitUntil(lambda: bool(models.library_panel.models), timeout=10_000)  # the bundled model at least
    qtbot.waitUntil(lambda: w.size().height() <= 600, timeout=5_000)
    models.show_section("library")
    panel = models.library_panel
    panel.select_row(0)
    QApplication.processEvents()
    for b in (panel.load_button, panel.import_button, panel.delete_button, panel.refresh_button):
        assert _in_view(w, b), b.text()
    assert panel.list.height() >= 3 * panel.list.sizeHintForRow(0)  # a list, not a one-row sliver
    models.show_section("discover")
    QApplication.processEvents()
    assert _in_view(w, models.download_button) and _in_view(w, models.search_button)
    assert models.results.height() >= 3 * 60 and models.card.height() >= 100
    top = models.stack.mapTo(w, models.stack.rect().topLeft()).y()
    models.show_message("A sentence long enough to wrap in the status line once the page is narrow, " * 3)
    QApplication.processEvents()
    assert models.stack.mapTo(w, models.stack.rect().topLeft()).y() == top  # the status line moves nothing
    w.serve_action.trigger()  # the Server dock opens below the page: its buttons stay in view
    w.resize(900, 600)
    models.show_section("library")
    qtbot.waitUntil(lambda: _in_view(w, panel.load_button) and _in_view(w, panel.import_button), timeout=5_000)
    assert w.size().height() <= 600 and w.findChild(QWidget, "server-dock").isVisible()
    assert panel.list.height() >= 2 * panel.list.sizeHintForRow(0)
