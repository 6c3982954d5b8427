"""The design system holds in the window's frame and doors: their modules write no colour and no pixel
size of their own and use no Qt stock icon; every line icon draws, in the theme's text colour, and
follows a theme switch; dialog buttons carry words alone; the body text is the type scale's size."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QIcon
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QProxyStyle, QStyle, QStyleFactory

from prefill.ui.widgets.app_style import PrefillStyle
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.icon_shapes import SHAPES
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.theme import apply_theme
from prefill.ui.widgets.tokens import RADIUS, TYPE
from tests.ui.look import restored_look

UI = Path(__file__).resolve().parents[2] / "app" / "prefill" / "ui"
# The window's frame, dialogs and doors: they take sizes from the tokens and colours from the roles.
FRAME_MODULES = ("main_window.py", "panels.py", "app.py", "settings_dialog.py", "settings_editors.py",
                 "tools_dialog.py", "shortcuts.py", "shortcuts_sheet.py", "welcome.py", "history/room.py",
                 "history/menu.py", "history/conversation_list.py")
COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b")
SHEET_WITH_PX = re.compile(r"setStyleSheet\([^)]*\d\s*px", re.DOTALL)
STOCK = re.compile(r"standardIcon|StandardPixmap|\bSP_[A-Z]|QInputDialog")


@pytest.fixture
def app(qapp: QApplication) -> Iterator[QApplication]:
    with restored_look(qapp):
        yield qapp


@pytest.mark.parametrize("module", FRAME_MODULES)
def test_the_frame_writes_no_colour_pixel_size_or_stock_icon_of_its_own(module: str) -> None:
    source = (UI / module).read_text()
    assert not COLOUR.findall(source), "a colour belongs in ui/widgets/colours.py as a role"
    assert not SHEET_WITH_PX.findall(source), "a size belongs in ui/widgets/tokens.py and a style sheet piece"
    assert not STOCK.findall(source), "icons come from ui/widgets/icons.py; texts are asked for in a TextSheet"


def _ink(pixmap_icon: QIcon, size: int = 48) -> QColor:
    """The most opaque pixel an icon draws (its stroke's own colour), failing if it draws nothing."""
    image = pixmap_icon.pixmap(size, size).toImage()
    best = max((image.pixelColor(x, y) for x in range(size) for y in range(size)), key=lambda c: c.alpha())
    assert best.alpha() > 200, "the icon drew nothing"
    return best


def _close(a: QColor, b: str) -> bool:
    want = QColor(b)
    return max(abs(a.red() - want.red()), abs(a.green() - want.green()), abs(a.blue() - want.blue())) <= 3


@pytest.mark.parametrize(("theme", "colours"), [("light", LIGHT), ("dark", DARK)])
def test_every_icon_draws_in_the_theme_s_text_colour(app: QApplication, theme: str, colours) -> None:
    apply_theme(app, theme)
    for name in SHAPES:
        drawn = icon(name)
        assert not drawn.isNull() and drawn.name() == name
        assert _close(_ink(drawn), colours.text), name


def test_an_unknown_icon_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        icon("no-such-icon")


def test_an_icon_follows_a_theme_switch_without_being_made_again(app: QApplication) -> None:
    apply_theme(app, "light")
    serve = icon("serve")
    assert _close(_ink(serve), LIGHT.text)
    apply_theme(app, "dark")
    assert _close(_ink(serve), DARK.text)  # the same QIcon, drawn again in the dark theme's ink


def test_an_icon_is_drawn_once_per_size_and_theme_and_kept(app: QApplication, monkeypatch) -> None:
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QImage, QPainter

    from prefill.ui.widgets import icons

    # Counted by the pixmaps kept for this test's size, 47 px: widgets an earlier test left open repaint
    # their own icons on a theme switch, at their sizes.
    monkeypatch.setattr(icons, "_kept", {}, raising=False)
    svg, draws = icons._svg, []
    monkeypatch.setattr(icons, "_svg", lambda shape, colour: draws.append(colour) or svg(shape, colour))

    def drawn() -> list[str]:
        return [k[4] for k in icons._kept if k[0] == "copy" and k[1] == 47]

    apply_theme(app, "light")
    copy = icon("copy")
    for _ in range(3):  # a streaming answer repaints the same Copy icons again and again
        image = QImage(64, 64, QImage.Format.Format_ARGB32_Premultiplied)
        painter = QPainter(image)
        copy.paint(painter, QRect(0, 0, 47, 47))
        painter.end()
        icon("copy").pixmap(47, 47)  # another QIcon of the same name shares the kept pixmap
    assert len(drawn()) == 1
    apply_theme(app, "dark")
    assert _close(_ink(copy, 47), DARK.text) and len(drawn()) == 2  # a new colour: drawn again
    apply_theme(app, "light")
    assert _close(_ink(copy, 47), LIGHT.text) and len(drawn()) == 2  # the light one was kept
    assert len(draws) == len(icons._kept)  # no pixmap of any size was drawn twice


class _IconsOnButtons(QProxyStyle):
    """A platform that asks for icons on dialog buttons, as KDE and most X11 desktops do."""

    def styleHint(self, hint, option=None, widget=None, returnData=None):  # noqa: N802 (Qt's name)
        if hint == QStyle.StyleHint.SH_DialogButtonBox_ButtonsHaveIcons:
            return 1
        return super().styleHint(hint, option, widget, returnData)


def _ok_icon(app: QApplication, style: QStyle) -> QIcon:
    app.setStyle(style)
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    return box.button(QDialogButtonBox.StandardButton.Ok).icon()


def test_dialog_buttons_carry_no_icons_even_where_the_platform_asks_for_them(app: QApplication) -> None:
    assert not _ok_icon(app, _IconsOnButtons(QStyleFactory.create("Fusion"))).isNull()  # what Qt would do
    try:
        app.setStyleSheet(style_sheet("light"))  # the sheet leaves them out, over a platform asking for them
        assert _ok_icon(app, PrefillStyle(_IconsOnButtons(QStyleFactory.create("Fusion")))).isNull()
    finally:
        app.setStyleSheet("")
    apply_theme(app, "light")  # the application's own style and sheet
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
    assert box.button(QDialogButtonBox.StandardButton.Ok).icon().isNull()
    app.setStyleSheet("")  # the style sheet wraps the style; under it is ours, over Fusion
    assert isinstance(app.style(), PrefillStyle) and app.style().baseStyle().name().lower() == "fusion"
    assert "styleHint" not in vars(PrefillStyle)  # answered by the sheet: Qt asks thousands of times at start


def test_qt_s_own_pictures_are_line_icons(app: QApplication) -> None:
    apply_theme(app, "dark")
    question = app.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxQuestion)
    assert question.name() == "question" and _close(_ink(question), DARK.text)
    assert app.style().standardIcon(QStyle.StandardPixmap.SP_LineEditClearButton).name() == "close"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_body_text_and_every_control_follow_the_tokens(app: QApplication, theme: str) -> None:
    apply_theme(app, theme)
    assert app.font().pixelSize() == TYPE.body
    sheet = style_sheet(theme)
    colours = LIGHT if theme == "light" else DARK
    for control in ("QPushButton {", "QToolButton {", "QLineEdit, QPlainTextEdit", "QComboBox {", "QTabBar::tab {",
                    "QAbstractItemView {", "QScrollBar::handle {", "QMenu {", "QToolTip {", "QHeaderView::section {"):
        assert control in sheet, control
    assert f"border-radius: {RADIUS.sm}px" in sheet.split("QPushButton {", 1)[1].split("}", 1)[0]
    assert f"background: {colours.card}" in sheet.split("QMenu {", 1)[1].split("}", 1)[0]
    assert f"color: {colours.danger}" in sheet.split("QLabel#setting-fault", 1)[1].split("}", 1)[0]
