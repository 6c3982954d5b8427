"""The window's layout holds: the side panels shown and hidden by button and shortcut and remembered
across a restart, the chat column's width the same before, while and after a model loads, line icons on
every tool bar action with their words beside them and nothing in the tool bar's overflow at 900 px
(a model loaded, the theme's type applied), the chat's system prompt edited in its sheet and shown above
its messages, and the Server panel opening inside the window, which fits 900×600 with it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QToolBar, QToolButton

from prefill.ui.main_window import MainWindow
from prefill.ui.panels import ACTION_ICONS
from prefill.ui.shortcuts import SHORTCUTS
from prefill.ui.widgets.dock_title import DockTitle
from prefill.ui.widgets.theme import apply_theme
from tests.ui.conftest import LOAD_TIMEOUT, load, small_settings
from tests.ui.look import restored_look


def _shortcut(w: MainWindow, name: str) -> None:
    found = [s for s in w.shortcuts if s.objectName() == f"shortcut-{name}"]
    assert len(found) == 1
    found[0].activated.emit()


def test_panels_toggle_by_button_and_shortcut_and_are_remembered(qtbot, app) -> None:
    w = app.open(small_settings())
    w.resize(1280, 720)  # room for both panels beside the chat column (a narrow window folds the chat list)
    qtbot.waitUntil(lambda: w.conversations.isVisible())
    assert {s.name for s in SHORTCUTS} >= {"toggle-chats", "toggle-sidebar"}
    chats, sidebar = w.panels.actions["chats"], w.panels.actions["sidebar"]
    bar = w.findChild(QToolBar)
    assert chats in bar.actions() and sidebar in bar.actions()
    assert w.conversations.isVisible() and w.sidebar.isVisible()
    chats.trigger()  # the tool bar's button
    assert not w.conversations.isVisible() and not chats.isChecked()
    _shortcut(w, "toggle-sidebar")
    assert not w.sidebar.isVisible() and not sidebar.isChecked()
    assert w.stack.isVisible()
    app.close(w)

    again = app.open()  # a restart on the same settings file
    again.resize(1280, 720)
    assert not again.conversations.isVisible() and not again.sidebar.isVisible()
    assert not again.panels.actions["chats"].isChecked()
    _shortcut(again, "toggle-chats")
    assert again.conversations.isVisible() and again.conversations.width() > 100  # its width back
    again.panels.actions["sidebar"].trigger()
    assert again.sidebar.isVisible() and again.panels.actions["sidebar"].isChecked()
    app.close(again)

    third = app.open()
    third.resize(1280, 720)
    qtbot.waitUntil(lambda: third.conversations.isVisible())
    assert third.conversations.isVisible() and third.sidebar.isVisible()


def test_the_chat_column_keeps_its_width_across_states(qtbot, app, smollm2) -> None:
    w = app.open(small_settings())
    w.resize(1400, 900)
    handles = w.splitter.handleWidth() * (w.splitter.count() - 1)
    qtbot.waitUntil(lambda: w.conversations.isVisible() and sum(w.splitter.sizes()) + handles == w.splitter.width())
    welcome = w.splitter.sizes()
    assert w.stack.currentWidget() is w.welcome
    w.sidebar.set_loading("a model whose name is very long indeed, " * 4)  # as while loading
    assert w.splitter.sizes() == welcome
    load(qtbot, w, smollm2)
    assert w.stack.currentWidget() is w.chat_view
    assert w.splitter.sizes() == welcome


def test_every_tool_bar_action_has_a_line_icon(qtbot, app) -> None:
    w = app.open(small_settings())
    for attribute, name in ACTION_ICONS:  # drawn for Prefill and tinted by the theme: no stock icons
        assert getattr(w, attribute).icon().name() == name, attribute
    assert [a.icon().name() for a in w.panels.actions.values()] == ["chats", "figures"]
    assert w.history_menu.button.icon().name() == "export" and w.tools_button.icon().name() == "tools"


def _words_beside_icons(w: MainWindow) -> bool:
    """Every tool bar button shown has its word beside its icon, none cut, and the bar fits the window."""
    bar = w.findChild(QToolBar)
    buttons = [b for b in bar.findChildren(QToolButton) if b.isVisible() and b.text() and not b.icon().isNull()]
    return (len(buttons) >= 7 and bar.sizeHint().width() <= w.width()
            and all(b.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonTextBesideIcon
                    and b.width() >= b.sizeHint().width() for b in buttons))


def test_tool_bar_words_stay_beside_their_icons_at_900_after_a_model_loads(qtbot, app, smollm2) -> None:
    with restored_look(QApplication.instance()) as qapp:
        apply_theme(qapp, "light")  # the type scale's sizes, as the app starts with
        w = app.open(small_settings())
        w.resize(900, 600)
        qtbot.waitUntil(lambda: w.width() == 900)
        qtbot.waitUntil(lambda: _words_beside_icons(w), timeout=2000)
        load(qtbot, w, smollm2)  # the model's name and where it runs, beside the picker
        qtbot.waitUntil(lambda: "SmolLM2" in w.load_state.text())
        qtbot.waitUntil(lambda: _words_beside_icons(w), timeout=2000)
        assert w.model_combo.width() >= 160  # the picker gives way, never below a readable width
        w.tools_action.setVisible(True)  # the MCP servers' Tools button, as the app shows it
        w.resize(901, 600)
        qtbot.waitUntil(lambda: w.width() == 901 and _words_beside_icons(w), timeout=2000)
        assert w.findChild(QToolBar).widgetForAction(w.system_action).accessibleName() == "System prompt"
        w.resize(1400, 900)
        qtbot.waitUntil(lambda: w.width() == 1400 and w.system_action.text() == "System prompt",
                        timeout=2000)  # with room, every whole word is back, and the status line
        qtbot.waitUntil(lambda: _words_beside_icons(w), timeout=2000)
        assert w.load_state.width() > 160


def test_the_tool_bar_fits_again_after_a_theme_switch_at_900(qtbot, app) -> None:
    # Before: the bar was fitted on a resize only; the dark theme's sheet laid its buttons out wider and the
    # last one (Figures) fell into the overflow until the window was resized.
    with restored_look(QApplication.instance()) as qapp:
        apply_theme(qapp, "light")
        w = app.open(small_settings())
        w.resize(900, 600)
        qtbot.waitUntil(lambda: w.width() == 900 and _words_beside_icons(w), timeout=2000)
        bar = w.findChild(QToolBar)
        for theme in ("dark", "light", "dark"):
            apply_theme(qapp, theme)
            w.set_theme(theme)
            buttons = [bar.widgetForAction(a) for a in bar.actions() if a.isVisible() and bar.widgetForAction(a)]
            qtbot.waitUntil(lambda buttons=buttons: _words_beside_icons(w) and all(b.isVisible() for b in buttons),
                            timeout=2000)


def test_nothing_falls_into_the_tool_bar_overflow_at_900(qtbot, app) -> None:
    w = app.open(small_settings())
    bar = w.findChild(QToolBar)
    for width in (900, 1400):
        w.resize(width, 600)
        qtbot.waitUntil(lambda width=width: w.width() == width)
        assert bar.sizeHint().width() <= w.width()
        buttons = [bar.widgetForAction(a) for a in bar.actions() if a.isVisible() and bar.widgetForAction(a)]
        qtbot.waitUntil(lambda buttons=buttons: all(b.isVisible() for b in buttons), timeout=2000)  # laid out
    # A long status line (a model's name and where it runs) is cut with "…", not the buttons.
    w.resize(900, 600)
    w.load_state.setText("  SmolLM2 135M Instruct · Q4_1 · CPU (no NVIDIA GPU found) · a very long name indeed")
    qtbot.waitUntil(lambda: bar.sizeHint().width() <= w.width(), timeout=2000)
    buttons = [bar.widgetForAction(a) for a in bar.actions() if a.isVisible() and bar.widgetForAction(a)]
    qtbot.waitUntil(lambda: all(b.isVisible() for b in buttons), timeout=2000)
    assert w.load_state.width() < w.load_state.sizeHint().width() or w.load_state.maximumWidth() < 16777215
    assert "very long name" in w.load_state.toolTip()


def test_the_system_prompt_is_edited_in_its_sheet_and_shown_above_the_chat(qtbot, app, smollm2) -> None:
    w = app.open(small_settings())
    load(qtbot, w, smollm2)
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=LOAD_TIMEOUT):
        w.controller.new_conversation()
    row = w.chat_view.system_row
    assert row.isHidden()
    w.system_action.trigger()  # its sheet: Esc leaves the prompt as it was
    sheet = w.system_sheet
    assert sheet is not None and sheet.isVisible() and sheet.text() == ""
    qtbot.keyClicks(sheet.field, "Talk like a parrot.")
    qtbot.keyClick(sheet.field, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not sheet.isVisible())
    assert row.isHidden() and w.controller.system_prompt == ""
    w.system_action.trigger()  # again: typed, and saved with Ctrl+Enter
    sheet = w.system_sheet
    qtbot.keyClicks(sheet.field, "Answer like a pirate.  ")
    qtbot.keyClick(sheet.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert row.isVisible() and "pirate" in row.preview.text()
    assert w.controller.system_prompt == "Answer like a pirate."
    cid = w.controller.conversation_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=LOAD_TIMEOUT):
        w.controller.new_conversation()  # a new chat starts with the same system prompt
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=LOAD_TIMEOUT):
        w.controller.open_conversation(cid)
    assert row.isVisible() and row.text == "Answer like a pirate."


def _icon_ink(action) -> int:
    """The lightness of the darkest-or-lightest drawn pixel of an action's icon (its ink)."""
    image = action.icon().pixmap(32, 32).toImage()
    inks = [image.pixelColor(x, y) for x in range(32) for y in range(32) if image.pixelColor(x, y).alpha() > 200]
    assert inks
    return inks[0].lightness()


def test_a_theme_switch_redraws_the_panel_icons_and_the_muted_row(qtbot, app) -> None:
    from PySide6.QtGui import QPalette

    from prefill.ui.widgets.colours import DARK, LIGHT

    w = app.open(small_settings())
    body = w.chat_view.system_row.body

    def muted() -> str:
        return body.palette().color(QPalette.ColorRole.WindowText).name()

    with restored_look(QApplication.instance()) as qapp:
        w.set_theme(apply_theme(qapp, "light"))
        qtbot.waitUntil(lambda: muted() == LIGHT.muted)
        light_ink = _icon_ink(w.panels.actions["chats"])
        w.set_theme(apply_theme(qapp, "dark"))
        qtbot.waitUntil(lambda: muted() == DARK.muted)  # the system prompt's row follows the theme
        assert _icon_ink(w.panels.actions["chats"]) > light_ink  # light ink on the dark tool bar


def _inside(w: MainWindow, part) -> bool:
    """`part` is shown whole inside the window, at no less than its smallest size."""
    from PySide6.QtCore import QRect

    at = part.mapTo(w, part.rect().topLeft())
    hint = part.minimumSizeHint()
    return (part.isVisible() and w.rect().contains(QRect(at, part.size()))
            and part.height() >= hint.height() and part.width() >= hint.width())


def test_serve_opens_inside_the_window_and_the_window_fits_900x600_with_it(qtbot, app, tmp_path,
                                                                          monkeypatch) -> None:
    from dataclasses import replace

    from PySide6.QtCore import QSize

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the Models page opens without the network
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(tmp_path / "models"))))
    w.resize(1280, 720)
    qtbot.waitUntil(lambda: w.size() == QSize(1280, 720))
    w.open_models()  # the Models page's panes: the tallest thing the window shows
    w.serve_action.setChecked(True)
    qtbot.waitUntil(lambda: w.server_dock is not None and w.server_dock.isVisible() and w.server_dock.height() > 0)
    assert w.size() == QSize(1280, 720)  # the Server panel opened inside the window: it did not grow
    bar = w.server_dock.titleBarWidget()  # our title bar: line-icon buttons, not the platform's
    assert isinstance(bar, DockTitle) and bar.close_button.icon().name() == "close"
    for tab in (w.tabs.show_models, w.tabs.show_chat):
        tab()
        hint = w.minimumSizeHint()
        assert hint.width() <= 900 and hint.height() <= 600, hint
        assert w.minimumSize().width() <= 900 and w.minimumSize().height() <= 600, w.minimumSize()
    w.resize(900, 600)
    qtbot.waitUntil(lambda: w.size() == QSize(900, 600))
    qtbot.waitUntil(lambda: _inside(w, w.server_dock) and _inside(w, w.input), timeout=2000)  # nothing cut off
    w.tabs.show_models()
    qtbot.waitUntil(lambda: _inside(w, w.server_dock) and w.size() == QSize(900, 600), timeout=2000)


def _words_whole(w: MainWindow) -> bool:
    """The welcome's wrapped paragraphs each as tall as their lines at the width they were given."""
    labels = [w.welcome.findChild(QLabel, name) for name in ("welcome-text", "welcome-more")]
    return all(label is not None and label.isVisible() and label.height() >= label.heightForWidth(label.width())
               for label in labels)


def test_the_welcome_shows_its_paragraphs_whole_at_every_size(qtbot, app) -> None:
    # Before: the column was centred by alignment, which gives a widget its size hint and ignores the height
    # its wrapped words need at that width: at 1280x800 both paragraphs were cut to two and a half lines.
    with restored_look(QApplication.instance()) as qapp:
        apply_theme(qapp, "light")  # the type scale's sizes, as the app starts with
        w = app.open(small_settings())
        assert w.stack.currentWidget() is w.welcome
        for width, height in ((1280, 800), (1400, 900), (900, 600)):
            w.resize(width, height)
            qtbot.waitUntil(lambda width=width: w.width() == width)
            qtbot.waitUntil(lambda: _words_whole(w), timeout=2000)
