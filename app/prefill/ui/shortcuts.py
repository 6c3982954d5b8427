"""Every keyboard shortcut of the main window, in one table that both installs them and fills the
shortcuts sheet (Ctrl+/), so the sheet cannot list a key the window does not have, or miss one.

Keys that belong to one widget (Enter in the message box, Escape in the inline editor) are not
window shortcuts; they are listed in :data:`PLACE_KEYS` for the sheet, and handled where they live.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut

if TYPE_CHECKING:
    from prefill.ui.main_window import MainWindow


@dataclass(frozen=True)
class Shortcut:
    """One window shortcut: its keys (portable text, as QKeySequence reads it), the words the sheet
    shows, and what it does to the window."""

    name: str
    keys: str
    what: str
    run: Callable[[MainWindow], None]


def _last_answer(w: MainWindow) -> int:
    """The row of the chat's last answer (-1: none yet)."""
    rows = w.transcript.rows()
    return next((i for i in range(len(rows) - 1, -1, -1) if rows[i].role == "assistant"), -1)


def _last_message(w: MainWindow) -> int:
    rows = w.transcript.rows()
    return next((i for i in range(len(rows) - 1, -1, -1) if rows[i].role in ("user", "assistant")), -1)


def _regenerate(w: MainWindow) -> None:
    row = _last_answer(w)
    if row >= 0:
        w.controller.regenerate(row)


def _copy(w: MainWindow) -> None:
    row = _last_answer(w)
    if row < 0:
        return
    widget = w.chat_view.live_widget(row)
    if widget is not None:
        widget.copy_text()  # its Copy button says so
    else:  # scrolled far away: no button to confirm on
        QGuiApplication.clipboard().setText(w.transcript.row(row).content)
        w.show_notice("Copied the last answer.")


def _page(step: int) -> Callable[[MainWindow], None]:
    def page(w: MainWindow) -> None:
        row = _last_answer(w)
        if row >= 0:
            w.controller.page(row, step)

    return page


def _branch(w: MainWindow) -> None:
    row = _last_message(w)
    if row >= 0:
        w.controller.branch(row)


def _search(w: MainWindow) -> None:
    w.conversations.search.setFocus()
    w.conversations.search.selectAll()


def _undo(w: MainWindow) -> None:
    if w.chat_view.toast.isVisible():  # only while Undo is offered: Ctrl+Z means nothing otherwise
        w.chat_view.toast.undo.click()


def _new_chat(w: MainWindow) -> None:
    w.controller.new_conversation()


def _focus_input(w: MainWindow) -> None:
    w.input.editor.setFocus()


def _stop(w: MainWindow) -> None:
    w.controller.stop()


def _trigger(action: str) -> Callable[[MainWindow], None]:
    """Do what the tool bar's `action` (a QAction attribute of the window) does."""
    def trigger(w: MainWindow) -> None:
        getattr(w, action).trigger()

    return trigger


def _toggle(panel: str) -> Callable[[MainWindow], None]:
    """Show or hide a side panel ("chats" or "sidebar"), as its tool bar button does."""
    def toggle(w: MainWindow) -> None:
        w.panels.toggle(panel)

    return toggle


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("new-chat", "Ctrl+N", "Start a new chat", _new_chat),
    Shortcut("search", "Ctrl+F", "Search the chats", _search),
    Shortcut("focus-input", "Ctrl+L", "Go to the message box", _focus_input),
    Shortcut("stop", "Ctrl+.", "Stop the answer", _stop),
    Shortcut("regenerate", "Ctrl+Shift+R", "Answer the last question again (the answer is kept as a version)",
             _regenerate),
    Shortcut("copy-answer", "Ctrl+Shift+C", "Copy the last answer", _copy),
    Shortcut("older-version", "Alt+Left", "Show the last answer's previous version", _page(-1)),
    Shortcut("newer-version", "Alt+Right", "Show the last answer's next version", _page(1)),
    Shortcut("branch", "Ctrl+Shift+B", "Branch: a new chat with the messages up to the last one", _branch),
    Shortcut("compact", "Ctrl+Shift+K", "Compact the chat: the model summarises the earlier turns",
             _trigger("compact_action")),
    Shortcut("undo-delete", "Ctrl+Z", "Undo the delete (while Undo is offered; in a text box, undo typing)",
             _undo),
    Shortcut("settings", "Ctrl+,", "Open Settings", _trigger("settings_action")),
    Shortcut("models", "Ctrl+Shift+M", "Open Models: search, download and load models",
             _trigger("models_action")),
    Shortcut("system-prompt", "Ctrl+Shift+S", "Edit this chat's system prompt", _trigger("system_action")),
    Shortcut("toggle-chats", "Ctrl+B", "Show or hide the chat list", _toggle("chats")),
    Shortcut("toggle-sidebar", "Ctrl+Alt+B", "Show or hide the sidebar (the model's figures)", _toggle("sidebar")),
    Shortcut("shortcuts", "Ctrl+/", "Show these shortcuts", _trigger("shortcuts_action")),
)

# Keys handled by one part of the window, for the sheet: (where, keys, what they do).
PLACE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("Message box", "Enter", "Send"),
    ("Message box", "Shift+Enter", "A new line"),
    ("Message box", "Ctrl+Tab", "A tab character"),
    ("Message box", "Esc", "Stop the answer"),
    ("Everywhere", "Tab / Shift+Tab", "Next / previous: message box, Send, the messages and their buttons, "
                                      "the toolbar, the chats, the sidebar"),
    ("Buttons", "Space", "Press the button that has the keyboard"),
    ("Editing a message", "Enter / Shift+Enter / Esc", "Save / a new line / cancel"),
    ("Dialogs", "Esc", "Close without changing anything"),
)


def key_text(keys: str) -> str:
    """The keys as this platform writes them (⌘ on macOS)."""
    return QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)


def sheet_rows() -> list[tuple[str, str, str]]:
    """The shortcuts sheet's rows: (keys, what they do, where), the window's shortcuts first."""
    rows = [(key_text(s.keys), s.what, "Anywhere in the window") for s in SHORTCUTS]
    return rows + [(keys, what, where) for where, keys, what in PLACE_KEYS]


def install(window: MainWindow) -> list[QShortcut]:
    """Make the window's shortcuts from :data:`SHORTCUTS` (each named ``shortcut-<name>``)."""
    made = []
    for s in SHORTCUTS:
        shortcut = QShortcut(QKeySequence(s.keys), window)
        shortcut.setObjectName(f"shortcut-{s.name}")
        shortcut.setWhatsThis(s.what)
        shortcut.activated.connect(lambda s=s: s.run(window))
        made.append(shortcut)
    return made
