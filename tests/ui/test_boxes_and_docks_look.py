"""Spin boxes, trees and docks in the design system: a spin box's arrows and a tree's branch arrows are
drawn from the line icons in both themes; a dock's title bar is ours (its title in the type scale, its
float and close buttons line icons that work); the Settings dialog's sections have headings over rows
of a label beside its field, and it fits a 900 px screen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QDockWidget, QFormLayout, QLabel, QMainWindow, QSpinBox, QTextEdit

from prefill.store.app_settings import Settings
from prefill.ui.settings_dialog import SettingsDialog
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.dock_title import DOCK_TIP, FLOAT_TIP, DockTitle, titled_dock
from prefill.ui.widgets.icon_shapes import SHAPES
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.theme import apply_theme
from prefill.ui.widgets.tokens import SPACE, TYPE
from tests.ui.look import restored_look
from tests.ui.test_settings_per_model import MODEL

THEMES = [("light", LIGHT), ("dark", DARK)]


@pytest.fixture
def app(qapp: QApplication) -> Iterator[QApplication]:
    with restored_look(qapp):
        yield qapp


def _rule_image(sheet: str, selector: str) -> Path:
    """The file a rule of the sheet draws its image from."""
    found = re.search(re.escape(selector) + r" \{ image: url\(([^)]+)\)", sheet)
    assert found is not None, f"no image for {selector}"
    return Path(found.group(1))


@pytest.mark.parametrize(("theme", "colours"), THEMES)
def test_a_spin_box_s_arrows_and_a_tree_s_branches_are_line_icons_in_the_theme(app, theme: str, colours) -> None:
    sheet = style_sheet(theme)
    for selector, name in (("QAbstractSpinBox::up-arrow", "chevron-up"),
                           ("QAbstractSpinBox::down-arrow", "chevron-down"),
                           ("QTreeView::branch:has-children:closed", "chevron-right"),
                           ("QTreeView::branch:has-children:open", "chevron-down")):
        drawn = _rule_image(sheet, selector).read_text()
        assert SHAPES[name] in drawn and f'stroke="{colours.muted}"' in drawn, selector
    for selector, name in (("QAbstractSpinBox::up-arrow:off, QAbstractSpinBox::up-arrow:disabled", "chevron-up"),
                           ("QAbstractSpinBox::down-arrow:off, QAbstractSpinBox::down-arrow:disabled", "chevron-down")):
        drawn = _rule_image(sheet, selector).read_text()  # at its limit or disabled: fainter, in the border's ink
        assert SHAPES[name] in drawn and f'stroke="{colours.border}"' in drawn, selector


def _has_ink(image, x0: int, colour: str) -> bool:
    """Whether the image right of `x0` has a pixel of `colour` (the arrow's stroke, within antialiasing)."""
    want = QColor(colour)
    return any(max(abs(c.red() - want.red()), abs(c.green() - want.green()), abs(c.blue() - want.blue())) <= 24
               for c in (image.pixelColor(x, y) for x in range(x0, image.width()) for y in range(image.height())))


@pytest.mark.parametrize(("theme", "colours"), THEMES)
def test_a_spin_box_draws_its_arrows_in_the_muted_ink_and_its_number_off_the_border(app, qtbot, theme: str,
                                                                                    colours) -> None:
    apply_theme(app, theme)
    spin = QSpinBox()
    qtbot.addWidget(spin)
    spin.resize(160, 36)
    spin.show()
    qtbot.waitExposed(spin)
    image = spin.grab().toImage()
    assert _has_ink(image, image.width() - 28, colours.muted)  # the chevrons, in the muted role's colour
    assert spin.lineEdit().textMargins().left() == SPACE.sm  # the number off the left border, as in a line edit


@pytest.mark.parametrize(("theme", "colours"), THEMES)
def test_a_check_box_is_outlined_in_the_muted_ink_and_ticked_on_the_accent(app, qtbot, theme: str, colours) -> None:
    # Before: Fusion's own box, which the dark palette drew nearly black on black.
    from PySide6.QtWidgets import QCheckBox

    apply_theme(app, theme)
    box = QCheckBox("Serve over HTTP")
    qtbot.addWidget(box)
    box.show()
    qtbot.waitExposed(box)
    assert _has_ink(box.grab().toImage(), 0, colours.muted)  # the box's outline
    box.setChecked(True)
    ticked = box.grab().toImage()
    assert _has_ink(ticked, 0, colours.highlight) and _has_ink(ticked, 0, colours.highlighted_text)


@pytest.fixture
def docked(app, qtbot) -> Iterator[tuple[QMainWindow, DockTitle]]:
    apply_theme(app, "light")
    window = QMainWindow()
    window.setCentralWidget(QTextEdit())
    dock = titled_dock("Server", window, "server-dock")
    dock.setWidget(QTextEdit())
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    bar = dock.titleBarWidget()
    assert isinstance(bar, DockTitle)
    yield window, bar


def test_a_dock_s_title_bar_has_its_title_in_the_type_scale_and_line_icon_buttons(docked) -> None:
    _window, bar = docked
    assert bar.title.text() == "Server" and bar.title.textFormat() == Qt.TextFormat.PlainText
    assert bar.title.font().pixelSize() == TYPE.small and bar.title.font().bold()
    assert bar.float_button.icon().name() == "pop-out" and bar.close_button.icon().name() == "close"
    assert bar.float_button.toolTip() == FLOAT_TIP and bar.close_button.accessibleName() == "Close Server"


def test_a_dock_s_buttons_float_it_dock_it_and_close_it(docked, qtbot) -> None:
    window, bar = docked
    dock = window.findChild(QDockWidget, "server-dock")
    bar.float_button.click()
    qtbot.waitUntil(dock.isFloating)
    assert bar.float_button.toolTip() == DOCK_TIP  # the same button puts it back
    bar.float_button.click()
    qtbot.waitUntil(lambda: not dock.isFloating())
    assert bar.float_button.toolTip() == FLOAT_TIP
    bar.close_button.click()
    qtbot.waitUntil(lambda: not dock.isVisible())
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable)  # may not float: no Float button
    assert bar.float_button.isHidden() and not bar.close_button.isHidden()


def _headings(d: SettingsDialog) -> list[str]:
    return [label.text() for label in d.findChildren(QLabel) if label.objectName() in ("heading", "model-scope")
            and not label.isHidden()]


def test_the_settings_sections_have_headings_and_each_label_sits_beside_its_field(qtbot) -> None:
    d = SettingsDialog(Settings(), model=MODEL)
    qtbot.addWidget(d)
    assert _headings(d) == ["For SmolLM2 135M Instruct · Q8_0", "For every model"]
    forms = [page.layout() for page in (d.tabs.widget(i) for i in range(d.tabs.count()))]
    assert all(isinstance(f, QFormLayout) and f.rowWrapPolicy() == QFormLayout.RowWrapPolicy.DontWrapRows
               for f in forms)
    alone = SettingsDialog(d.original)  # no model: one heading says it is every model's, not two
    qtbot.addWidget(alone)
    assert _headings(alone) == ["For every model"]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_settings_dialog_fits_a_900_px_screen(app, qtbot, theme: str) -> None:
    apply_theme(app, theme)  # the body type and the controls' padding
    d = SettingsDialog(Settings(), model=MODEL)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitExposed(d)
    assert d.width() <= 900 and d.minimumSizeHint().width() <= 900, d.size()
