"""The Models page in the window's design system: the model card's code Copy is the chat's icon button
that says "Copied"; the card's tables and the files list are rows with caption headings, no grid,
frame or arrows; a file's fit figures are whole or cut with "…" at 900×600 with Serve open (the
test hub on 127.0.0.1 stands in for Hugging Face)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from PySide6.QtGui import QColor, QGuiApplication, QPalette, QTextTable
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem, QTreeWidget, QTreeWidgetItem

from prefill.hub.model_card import ModelCard
from prefill.ui.markdown.rich_text import DARK_CODE
from prefill.ui.models import repo_files
from prefill.ui.models.card_view import COPY_CODE_TIP, CardView
from prefill.ui.models.fit_chip import theme_colours
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.copy_button import COPIED
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.tokens import TYPE
from tests.hub.conftest import _hub_env, add_repo, hub  # noqa: F401 - fixtures
from tests.hub.fake_hub import FakeHub
from tests.ui.conftest import small_settings
from tests.ui.test_models_page import REPO, WAIT, tiny_bytes

README = ("# Tiny\n\n| Quant | Size |\n|---|--:|\n| Q4_K_M | 0.8 GB |\n| Q8_0 | 1.3 GB |\n\n"
          "Run it:\n\n```bash\nllama-cli -m tiny.gguf\n```\n\n```\n<|user|>\n{prompt}\n```\n\n"
          + "More words about the model.\n\n" * 40)
FACTS = (("license", "apache-2.0"), ("base model", "org/Tiny"))


def _card(qtbot) -> CardView:
    view = CardView()
    qtbot.addWidget(view)
    view.show_card(ModelCard("org/Tiny", README, FACTS), "org/Tiny")
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_the_model_cards_code_copy_is_an_icon_button_that_says_copied(qtbot) -> None:
    view = _card(qtbot)
    assert "copy:" not in view.toHtml() and "Copy" not in view.toPlainText()  # no underlined link in the text
    first, second = view.copy_buttons
    assert not first.icon().isNull() and first.toolTip() == COPY_CODE_TIP == first.accessibleName()
    QGuiApplication.clipboard().setText("")
    second.click()
    assert QGuiApplication.clipboard().text() == "<|user|>\n{prompt}"  # exactly the code, the fences left out
    assert second.text() == second.toolTip() == COPIED and first.text() == "Copy"
    qtbot.waitUntil(lambda: second.text() == "Copy" and second.toolTip() == COPY_CODE_TIP, timeout=5_000)
    first.click()
    assert QGuiApplication.clipboard().text() == "llama-cli -m tiny.gguf"


def test_the_cards_copy_buttons_sit_on_their_code_blocks_label_line_and_follow_a_scroll(qtbot) -> None:
    view = _card(qtbot)
    layout = view.document().documentLayout()
    bar = view.verticalScrollBar()
    for button, label in zip(view.copy_buttons, view._labels, strict=True):
        assert label.text() in ("bash", "code")  # the language, or "code", on the line it sits on
        line = label.layout().lineAt(0)
        words = label.layout().position().y() + line.y() + line.height() / 2 - bar.value()
        assert abs(button.geometry().center().y() - words) <= 1  # level with the label's words
        below = layout.blockBoundingRect(label.next()).top() - bar.value()  # the code's first line
        assert button.geometry().bottom() < below  # clear of the code
        assert button.geometry().right() < view.viewport().width()
    assert bar.maximum() > 0
    before = view.copy_buttons[0].y()
    bar.setValue(bar.maximum())
    assert view.copy_buttons[0].y() == before - bar.maximum()


def test_the_cards_tables_are_rows_with_caption_headings_and_no_grid(qtbot) -> None:
    view = _card(qtbot)
    tables = [f for f in view.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 2  # the front matter's facts, then the README's table
    for table in tables:
        assert table.format().border() == 0  # no frame, no grid
        for row in range(table.rows()):
            cell = table.cellAt(row, 0).format().toTableCellFormat()
            assert cell.bottomBorder() == 1 and cell.leftBorder() == cell.topBorder() == 0  # a hairline between rows
    facts, readme = tables
    name = facts.cellAt(0, 0).firstCursorPosition()
    assert name.block().text() == "License" and name.charFormat().font().pixelSize() == TYPE.caption
    assert facts.cellAt(0, 1).firstCursorPosition().block().text() == "apache-2.0"
    head = readme.cellAt(0, 0).firstCursorPosition()
    assert head.block().text() == "Quant" and head.charFormat().font().pixelSize() == TYPE.caption
    assert readme.cellAt(1, 0).firstCursorPosition().charFormat().font().pixelSize() != TYPE.caption


def test_a_theme_switch_redraws_the_model_card_in_its_colours(qtbot) -> None:
    view = _card(qtbot)
    assert DARK_CODE.rule not in view.toHtml().lower()
    view.set_code_palette(DARK_CODE)  # what the window does when the theme changes (set_theme)
    assert DARK_CODE.rule in view.toHtml().lower() and DARK_CODE.background.lower() in view.toHtml().lower()
    assert len(view.copy_buttons) == 2 and all(b.isVisible() for b in view.copy_buttons)
    view.show_status("Reading the model card…")
    assert view.copy_buttons == [] and view.toPlainText() == "Reading the model card…"


def _painted(tree: QTreeWidget, item: QTreeWidgetItem, column: int) -> QStyleOptionViewItem:
    index = tree.indexFromItem(item, column)
    option = QStyleOptionViewItem()
    option.initFrom(tree)
    tree.itemDelegate().initStyleOption(option, index)
    return option


def test_the_files_list_reads_as_rows_under_caption_headings_without_arrows_or_frame(qtbot) -> None:
    tree = repo_files.make_tree()
    qtbot.addWidget(tree)
    group = QTreeWidgetItem(["Q4_K_M · 1 file", "113.2 KiB", "", ""])
    tree.addTopLevelItem(group)
    row = QTreeWidgetItem(["tiny-Q4_K_M.gguf", "113.2 KiB", repo_files.DOWNLOADED, ""])
    group.addChild(row)
    group.setExpanded(True)  # as fill_tree leaves every group
    assert not tree.rootIsDecorated() and not tree.itemsExpandable() and not tree.expandsOnDoubleClick()
    heading = _painted(tree, group, repo_files.NAME)
    c = theme_colours()
    assert heading.font.pixelSize() == TYPE.caption
    assert heading.palette.color(QPalette.ColorRole.Text) == QColor(c.muted)
    assert _painted(tree, row, repo_files.NAME).font.pixelSize() != TYPE.caption
    here = _painted(tree, row, repo_files.HERE)
    assert here.palette.color(QPalette.ColorRole.Text) == QColor(c.fit_good)  # the theme's, at paint time
    tree.resize(1000, 300)
    tree.show()
    qtbot.waitExposed(tree)
    metrics = tree.fontMetrics()
    assert tree.columnWidth(repo_files.NAME) >= metrics.horizontalAdvance(row.text(0)) + tree.indentation()  # whole
    assert tree.columnWidth(repo_files.HERE) >= metrics.horizontalAdvance(repo_files.DOWNLOADED)
    row.setText(repo_files.NAME, "a-very-long-model-file-name-" * 4 + "Q4_K_M.gguf")
    tree.resize(560, 300)  # a narrow pane: "Here" gives way, the names take at most their share
    QApplication.processEvents()
    repo_files.fit_columns(tree)
    assert tree.isColumnHidden(repo_files.HERE)
    room = tree.viewport().width() - tree.columnWidth(repo_files.SIZE)
    assert tree.columnWidth(repo_files.NAME) <= room * repo_files.NAME_SHARE
    for theme in ("light", "dark"):
        sheet = style_sheet(theme)
        assert "QTreeWidget#repo-files { background: transparent; border: 2px solid transparent;" in sheet  # no frame
        focus = colours_for(theme).focus
        ring = f"QTreeWidget#repo-files:focus, QTextBrowser#model-card:focus {{ border: 2px solid {focus};"
        assert ring in sheet  # but the keyboard's ring
        assert "QTreeWidget#repo-files::branch { background: transparent; image: none; border-image: none; }" in sheet
        header = re.search(r"QTreeWidget#repo-files QHeaderView::section \{([^}]*)\}", sheet)
        assert header is not None and f"font-size: {TYPE.caption}px" in header.group(1)  # caption type
        assert "background: transparent" in header.group(1) and f"color: {colours_for(theme).muted}" in header.group(1)


def test_at_900x600_with_serve_open_each_files_fit_is_whole_or_cut_with_an_ellipsis(
        app, qtbot, tmp_path: Path, monkeypatch, hub: FakeHub) -> None:  # noqa: F811
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    names = ("Tiny-Chat-1B-Instruct-Q4_K_M.gguf", "Tiny-Chat-1B-Instruct-Q8_0.gguf")
    add_repo(hub, REPO, {n: tiny_bytes(tmp_path, n) for n in names})
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(tmp_path / "models"))))
    w.resize(900, 600)
    w.open_models()
    w.serve_action.trigger()  # the Server dock opens below the page
    w.resize(900, 600)
    page = w.models_page
    page.open_repository(REPO)
    qtbot.waitUntil(lambda: len(page.fits) == 2, timeout=WAIT)

    def badges() -> list:
        return [repo_files.badge(page.files, i) for i in repo_files.model_items(page.files)]

    qtbot.waitUntil(lambda: all(b is not None and b.verdict() for b in badges()), timeout=WAIT)
    QApplication.processEvents()
    assert w.size().width() <= 900 and w.size().height() <= 600
    viewport = page.files.viewport()
    for item in repo_files.model_items(page.files):
        page.files.scrollToItem(item)  # the list may show one row with the panel open
        QApplication.processEvents()
        badge = repo_files.badge(page.files, item)
        assert badge is not None
        chip, figures = badge.badge, badge.figures
        assert chip.visibleRegion().boundingRect() == chip.rect()  # the verdict whole, never cut
        assert chip.height() == chip.sizeHint().height()  # nor squeezed by its row: its ends stay round
        assert figures.mapTo(viewport, figures.rect().topRight()).x() < viewport.width()
        whole, shown = figures.text(), figures.shown()
        assert whole.startswith("needs ") and whole in figures.toolTip()
        assert shown == whole or shown.endswith(" GiB") and " / " in shown or shown.endswith("…"), shown
        assert figures.fontMetrics().horizontalAdvance(shown) <= figures.contentsRect().width()
