"""Themes: the override beats the system, palettes differ, the KV bar changes colour."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from prefill.ui.markdown.rich_text import DARK_CODE, LIGHT_CODE
from prefill.ui.widgets.app_style import PrefillStyle
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.theme import (
    ThemeFollower,
    apply_theme,
    code_palette,
    effective_theme,
    kv_bar_style,
    system_theme,
)
from tests.ui.look import restored_look


@pytest.fixture
def app(qapp: QApplication) -> Iterator[QApplication]:
    """The test QApplication, its style, palette, style sheet and font restored afterwards."""
    with restored_look(qapp):
        yield qapp


def _window_lightness(app: QApplication) -> int:
    return app.palette().color(QPalette.ColorRole.Window).lightness()


def test_override_dark_and_light(app: QApplication) -> None:
    assert apply_theme(app, "dark") == "dark"
    assert _window_lightness(app) < 80
    assert app.palette().color(QPalette.ColorRole.Text).name() == DARK.text
    assert DARK.user_bubble in app.styleSheet()
    assert apply_theme(app, "light") == "light"
    assert _window_lightness(app) > 200
    assert LIGHT.user_bubble in app.styleSheet()
    app.setStyleSheet("")  # the style sheet wraps the style; under it is ours, over Fusion
    assert isinstance(app.style(), PrefillStyle) and app.style().baseStyle().name().lower() == "fusion"


def test_system_follows_the_style_hints(app: QApplication) -> None:
    expected = system_theme(app)
    assert expected in ("light", "dark")
    assert apply_theme(app, "system") == expected
    assert effective_theme(app, "system") == expected
    colours = DARK if expected == "dark" else LIGHT
    assert app.palette().color(QPalette.ColorRole.Window).name() == colours.window


def test_unknown_choice_is_refused(app: QApplication) -> None:
    with pytest.raises(ValueError):
        apply_theme(app, "purple")
    with pytest.raises(ValueError):
        kv_bar_style(0.5, "system")


@pytest.mark.parametrize(
    ("fraction", "colour"),
    [(0.0, "kv_green"), (0.59, "kv_green"), (0.6, "kv_amber"), (0.84, "kv_amber"),
     (0.85, "kv_red"), (1.0, "kv_red")],
)
@pytest.mark.parametrize("effective", ["light", "dark"])
def test_kv_bar_changes_colour_as_it_fills(fraction: float, colour: str, effective: str) -> None:
    colours = LIGHT if effective == "light" else DARK
    sheet = kv_bar_style(fraction, effective)
    chunk = sheet.split("::chunk", 1)[1]
    assert getattr(colours, colour) in chunk
    others = {"kv_green", "kv_amber", "kv_red"} - {colour}
    assert not any(getattr(colours, other) in chunk for other in others)


def test_code_palette_matches_the_theme() -> None:
    assert code_palette("light") is LIGHT_CODE
    assert code_palette("dark") is DARK_CODE
    assert LIGHT_CODE.background != DARK_CODE.background


def test_style_sheet_styles_bubbles_and_cards() -> None:
    sheet = style_sheet("dark")
    for selector in ("QFrame#message-bubble", "QFrame#message-assistant", "QFrame#sidebar-card"):
        assert selector in sheet
    assert f"QFrame#message-bubble {{ background: {DARK.user_bubble}" in sheet  # a question's soft bubble
    assert DARK.user_bubble != DARK.window


def test_follower_applies_and_reports_changes(app: QApplication, qtbot) -> None:
    follower = ThemeFollower(app, "light")
    assert follower.effective == "light"
    with qtbot.waitSignal(follower.theme_changed, timeout=1000) as blocker:
        assert follower.set_choice("dark") == "dark"
    assert blocker.args == ["dark"]
    assert _window_lightness(app) < 80
    with qtbot.assertNotEmitted(follower.theme_changed):
        follower.set_choice("dark")
    with pytest.raises(ValueError):
        follower.set_choice("sepia")
    assert follower.choice == "dark"
    follower.deleteLater()
