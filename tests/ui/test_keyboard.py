"""The window with the keyboard alone: Tab's order and names, the shortcuts and their sheet, and
feedback that is true (Copy confirmed, the prompt count after every answer, "stopped", theme repaints).

No mouse event is sent here: keys go to the widget that has the focus, as they would from a keyboard.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractButton, QApplication, QToolBar, QWidget

from prefill.ui.main_window import MainWindow
from prefill.ui.settings_dialog import SettingsDialog
from prefill.ui.shortcuts import SHORTCUTS
from prefill.ui.shortcuts_sheet import ShortcutsSheet
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.styles import style_sheet
from tests.ui.conftest import ANSWER_TIMEOUT, load, small_settings

CTRL = Qt.KeyboardModifier.ControlModifier
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


def _active(qtbot, w: MainWindow) -> None:
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)  # window shortcuts answer only in the active window


def _focus() -> QWidget:
    widget = QApplication.focusWidget()
    assert widget is not None
    return widget


def _press(qtbot, key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    """A key, to whatever has the focus (as a keyboard sends it)."""
    qtbot.keyClick(_focus(), key, modifier)


def _tab_to(qtbot, target: QWidget, limit: int = 120) -> int:
    """Press Tab until `target` has the focus; returns how many presses it took."""
    for n in range(limit):
        if _focus() is target:
            return n
        _press(qtbot, Qt.Key.Key_Tab)
    raise AssertionError(f"Tab never reached {target.objectName() or target}")


def _walk(qtbot, start: QWidget, key: Qt.Key = Qt.Key.Key_Tab) -> list[QWidget]:
    """Every widget Tab (or Backtab) visits from `start` until it comes back to it."""
    start.setFocus()
    seen = [start]
    for _ in range(200):
        _press(qtbot, key)
        if _focus() is start:
            return seen
        seen.append(_focus())
    raise AssertionError("Tab never came back to where it started")


def _named(widget: QWidget) -> str:
    text = widget.text() if isinstance(widget, QAbstractButton) else ""
    return widget.accessibleName() or text


def _spy_counts(w: MainWindow) -> list[int]:
    """Each count of the next prompt the window asks the engine for (the worker still gets each)."""
    asked: list[int] = []
    counter = w.prompt_count.counter
    real = counter.ask

    def ask(question) -> None:
        asked.append(question.tag)
        real(question)

    counter.ask = ask  # type: ignore[method-assign]
    return asked


def test_a_chat_from_the_keyboard_alone(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=6))
    load(qtbot, w, smollm2)
    _active(qtbot, w)
    c, t = w.controller, w.transcript
    asked = _spy_counts(w)

    # Type, Tab to Send, press it.
    assert _focus() is w.input.editor
    qtbot.keyClicks(w.input.editor, "Say hi.")
    _tab_to(qtbot, w.input.button, limit=4)  # past the box's other buttons (Attach), if any
    assert w.input.editor.toPlainText() == "Say hi."
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        _press(qtbot, Qt.Key.Key_Space)
    # The next prompt's count is asked again once the answer is in, not only while typing.
    qtbot.waitUntil(lambda: len(asked) >= 1, timeout=5_000)
    qtbot.waitUntil(lambda: " of 2,048 tokens" in w.input.count.text(), timeout=10_000)  # the meter's words

    # A second answer, stopped with Ctrl+.: "stopped" on the message and in the sidebar.
    w.settings = small_settings(max_tokens=400)
    qtbot.keyClick(w, Qt.Key.Key_L, CTRL)
    assert _focus() is w.input.editor
    qtbot.keyClicks(w.input.editor, "Write a long story about the sea.")
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT) as stopped:
        _press(qtbot, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: t.rowCount() == 4 and len(t.row(3).content) > 10, timeout=ANSWER_TIMEOUT)
        _press(qtbot, Qt.Key.Key_Period, CTRL)
    assert stopped.args[0].reason == "cancelled"  # the engine's word; people read "stopped"
    qtbot.waitUntil(lambda: w.chat_view.live_widget(3) is not None)
    assert w.chat_view.live_widget(3).figures.text().endswith("stopped")
    assert w.sidebar.text("tokens").endswith("· stopped") and "cancelled" not in w.sidebar.text("tokens")
    before = len(asked)
    qtbot.waitUntil(lambda: len(asked) > before, timeout=5_000)

    # Ctrl+Shift+R answers again; the stopped answer stays as version 1 of 2.
    w.settings = small_settings(max_tokens=6)
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        _press(qtbot, Qt.Key.Key_R, CTRL_SHIFT)
    qtbot.waitUntil(lambda: t.row(3).versions == 2 and t.row(3).version == 1, timeout=10_000)
    regenerated = t.row(3).content

    # Page the versions: Tab to ‹ and press Space, then Alt+Right.
    answer = w.chat_view.live_widget(3)
    assert answer is not None and answer.buttons["older"].isVisible()
    before = len(asked)
    _tab_to(qtbot, answer.buttons["older"])
    _press(qtbot, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: t.row(3).version == 0, timeout=10_000)
    qtbot.waitUntil(lambda: len(asked) > before, timeout=5_000)  # the count follows the version shown
    _press(qtbot, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: t.row(3).version == 1 and t.row(3).content == regenerated, timeout=10_000)

    # Copy from the keyboard: the button says so, and Ctrl+Shift+C copies the last answer too.
    answer = w.chat_view.live_widget(3)
    _tab_to(qtbot, answer.buttons["copy"])
    _press(qtbot, Qt.Key.Key_Space)
    assert QGuiApplication.clipboard().text() == regenerated
    assert answer.buttons["copy"].text().startswith("Copied")
    qtbot.waitUntil(lambda: answer.buttons["copy"].text() == "Copy", timeout=5_000)
    QGuiApplication.clipboard().setText("")
    _press(qtbot, Qt.Key.Key_C, CTRL_SHIFT)
    assert QGuiApplication.clipboard().text() == regenerated

    # Delete the first answer with the keyboard, and Ctrl+Z brings it back.
    first = t.row(1).content
    _tab_to(qtbot, w.chat_view.live_widget(1).buttons["delete"])
    before = len(asked)
    _press(qtbot, Qt.Key.Key_Space)
    assert t.rowCount() == 3 and w.chat_view.toast.isVisible()
    qtbot.waitUntil(lambda: len(asked) > before, timeout=5_000)
    qtbot.keyClick(w, Qt.Key.Key_Z, CTRL)
    assert t.rowCount() == 4 and t.row(1).content == first and not w.chat_view.toast.isVisible()

    # Branch from the first answer: Tab to its Branch button.
    cid = c.conversation_id
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    qtbot.waitUntil(lambda: w.chat_view.live_widget(1) is not None)
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):
        _tab_to(qtbot, w.chat_view.live_widget(1).buttons["branch"])
        _press(qtbot, Qt.Key.Key_Space)
    assert c.conversation_id != cid and [r.content for r in t.rows()] == ["Say hi.", first]

    # Settings with Ctrl+, and Escape closes it; Models with Ctrl+Shift+M.
    seen: list[QWidget] = []

    def escape_settings() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(10, escape_settings)
            return
        seen.append(dialog)
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)

    QTimer.singleShot(0, escape_settings)
    settings = w.settings
    _press(qtbot, Qt.Key.Key_Comma, CTRL)
    assert len(seen) == 1 and isinstance(seen[0], SettingsDialog) and w.settings is settings
    _active(qtbot, w)
    _press(qtbot, Qt.Key.Key_M, CTRL_SHIFT)
    page = w.models_page
    assert page is not None and page.isVisible() and page.window() is w  # a tab of the window
    _press(qtbot, Qt.Key.Key_M, CTRL_SHIFT)  # and the same keys go back to the chat
    assert not page.isVisible() and w.chat_view.isVisible()


def test_tab_visits_every_part_in_order_and_every_stop_has_a_name(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=4))
    w.resize(1280, 720)  # room for the chat list beside the chat (a narrower window folds it)
    qtbot.waitUntil(lambda: w.conversations.isVisible())
    load(qtbot, w, smollm2)
    _active(qtbot, w)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.send("Say hi.")
    qtbot.waitUntil(lambda: w.chat_view.live_widget(1) is not None)
    stops = _walk(qtbot, w.input.editor)
    answer = w.chat_view.live_widget(1)
    wanted = [w.input.editor, w.input.button, w.chat_view, w.chat_view.live_widget(0).buttons["edit"],
              answer.buttons["copy"], answer.buttons["regenerate"], answer.buttons["branch"], answer.buttons["delete"],
              w.model_combo, w.history_menu.button, w.conversations.search, w.conversations.list,
              w.conversations.new_button, w.conversations.delete_button]
    assert all(x in stops for x in wanted)
    assert [stops.index(x) for x in wanted] == sorted(stops.index(x) for x in wanted)  # the parts in order
    bar = w.findChild(QToolBar)
    toolbar = [bar.widgetForAction(a) for a in (w.serve_action, w.system_action, w.settings_action,
                                                 w.shortcuts_action)]
    assert all(x in stops for x in toolbar)
    assert stops.index(w.model_combo) < stops.index(toolbar[0]) < stops.index(w.conversations.search)
    unnamed = [s.objectName() or type(s).__name__ for s in stops if not _named(s)]
    assert unnamed == []
    assert len(set(stops)) == len(stops) == len(w.focus_order.stops())
    # Shift+Tab walks the same stops backwards.
    back = _walk(qtbot, w.input.editor, Qt.Key.Key_Backtab)
    assert back == [stops[0], *reversed(stops[1:])]


def test_toolbar_actions_take_tab_and_are_named(app, qtbot) -> None:
    w = app.open()
    w.resize(1280, 720)  # the chat list shown (a narrower window folds it)
    qtbot.waitUntil(lambda: w.conversations.isVisible())
    _active(qtbot, w)
    stops = _walk(qtbot, w.input.editor)
    by_name = {_named(s): s for s in stops}
    for name in ("Serve", "System prompt", "Settings", "Shortcuts", "Model", "Send"):
        assert name in by_name, name
    assert "Models" not in by_name  # the Models tab is the one way there (and Ctrl+Shift+M)
    # The stop after the toolbar's last button (the sidebar's toggle, at its right end) is the chat list's search box.
    assert stops.index(by_name["Shortcuts"]) < stops.index(by_name["Figures"])
    assert stops.index(w.conversations.search) == stops.index(by_name["Figures"]) + 1


def test_tab_leaves_the_message_box_and_ctrl_tab_types_a_tab(app, qtbot) -> None:
    w = app.open()
    _active(qtbot, w)
    w.input.editor.setFocus()
    qtbot.keyClicks(w.input.editor, "a")
    qtbot.keyClick(w.input.editor, Qt.Key.Key_Tab, CTRL)
    qtbot.keyClicks(w.input.editor, "b")
    assert w.input.editor.toPlainText() == "a\tb" and _focus() is w.input.editor
    _press(qtbot, Qt.Key.Key_Tab)  # to the box's next button (Attach or Send), the text untouched
    assert _focus() is not w.input.editor and w.input.isAncestorOf(_focus())
    _press(qtbot, Qt.Key.Key_Backtab)
    assert _focus() is w.input.editor and w.input.editor.toPlainText() == "a\tb"
    assert _tab_to(qtbot, w.input.button, limit=4) >= 1  # Send comes before anything outside the box


def test_the_sheet_lists_every_installed_shortcut_from_the_one_table(app, qtbot) -> None:
    w = app.open()
    _active(qtbot, w)
    installed = w.findChildren(QShortcut)
    assert len(installed) == len(SHORTCUTS)
    qtbot.keyClick(w.input.editor, Qt.Key.Key_Slash, CTRL)
    sheet = w.findChild(ShortcutsSheet)
    assert sheet is not None and sheet.isVisible()
    listed = sheet.keys()
    for shortcut in installed:
        assert shortcut.key().toString(QKeySequence.SequenceFormat.NativeText) in listed, shortcut.objectName()
    assert {"Ctrl+N", "Ctrl+F", "Ctrl+L", "Ctrl+.", "Ctrl+Shift+R", "Ctrl+Shift+C", "Ctrl+,", "Ctrl+Z",
            "Ctrl+/"} <= {s.key().toString() for s in installed}
    assert "Ctrl+Q" in listed  # quitting is a shortcut too
    qtbot.waitUntil(sheet.isActiveWindow, timeout=5_000)
    assert _focus() is sheet.body  # the list takes the keyboard: the arrows scroll it
    _press(qtbot, Qt.Key.Key_Escape)
    assert not sheet.isVisible()
    w.shortcuts_action.trigger()  # the toolbar's entry shows the same sheet again
    assert w.findChildren(ShortcutsSheet) == [sheet] and sheet.isVisible()
    sheet.close()


def test_ctrl_q_closes_the_window(app, qtbot) -> None:
    w = app.open()
    _active(qtbot, w)
    with qtbot.waitSignal(w.closed, timeout=5_000):
        qtbot.keyClick(w.input.editor, Qt.Key.Key_Q, CTRL)
    assert not w.isVisible()


def test_a_theme_switch_repaints_the_kv_track_and_both_themes_ring_the_focus(app, qtbot) -> None:
    w = app.open()
    w.set_theme("dark")
    assert DARK.kv_track in w.sidebar.kv_bar.styleSheet()
    w.set_theme("light")
    assert LIGHT.kv_track in w.sidebar.kv_bar.styleSheet() and DARK.kv_track not in w.sidebar.kv_bar.styleSheet()
    for theme, colours in (("light", LIGHT), ("dark", DARK)):
        sheet = style_sheet(theme)
        assert f"QPushButton:focus {{ border: 2px solid {colours.focus}" in sheet
        assert f"QToolButton:focus {{ border: 2px solid {colours.focus}" in sheet
