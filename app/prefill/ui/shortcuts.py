"""Every keyboard shortcut of the main window, in one table that both installs them and fills the
shortcuts sheet (Ctrl+/), so the sheet cannot list a key the window does not have, or miss one.

Keys that belong to one widget (Enter in the message box, Escape in the inline editor) are not
window shortcuts; they are listed in :data:`PLACE_KEYS` for the sheet, and handled where they live.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

from prefill.ui.wiring.room_actions import RoomActions


@dataclass(frozen=True)
class Shortcut:
    """One window shortcut: its name (the action a room offers under it, ui/wiring/room_actions.py),
    its keys (portable text, as QKeySequence reads it) and the words the sheet shows."""

    name: str
    keys: str
    what: str


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("new-chat", "Ctrl+N", "Start a new chat"),
    Shortcut("search", "Ctrl+F", "Search the chats"),
    Shortcut("focus-input", "Ctrl+L", "Go to the message box"),
    Shortcut("stop", "Ctrl+.", "Stop the answer"),
    Shortcut("regenerate", "Ctrl+Shift+R", "Answer the last question again (the answer is kept as a version)"),
    Shortcut("copy-answer", "Ctrl+Shift+C", "Copy the last answer"),
    Shortcut("older-version", "Alt+Left", "Show the last answer's previous version"),
    Shortcut("newer-version", "Alt+Right", "Show the last answer's next version"),
    Shortcut("branch", "Ctrl+Shift+B", "Branch: a new chat with the messages up to the last one"),
    Shortcut("compact", "Ctrl+Shift+K", "Compact the chat: the model summarises the earlier turns"),
    Shortcut("undo-delete", "Ctrl+Z", "Undo the delete (while Undo is offered; in a text box, undo typing)"),
    Shortcut("settings", "Ctrl+,", "Open Settings"),
    Shortcut("models", "Ctrl+Shift+M", "Open Models: search, download and load models"),
    Shortcut("find-model", "Ctrl+K", "Find a model on this machine and load it"),
    Shortcut("system-prompt", "Ctrl+Shift+S", "Edit this chat's system prompt"),
    Shortcut("toggle-chats", "Ctrl+B", "Show or hide the chat list"),
    Shortcut("toggle-sidebar", "Ctrl+Alt+B", "Show or hide the sidebar (the model's figures)"),
    Shortcut("shortcuts", "Ctrl+/", "Show these shortcuts"),
    Shortcut("quit", "Ctrl+Q", "Quit Prefill (an answer being written is stopped and saved first)"),
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
    ("Renaming a chat", "Enter / Esc", "Rename / cancel"),
    ("System prompt", "Ctrl+Enter / Enter / Esc", "Save / a new line / cancel"),
    ("Dialogs", "Esc", "Close without changing anything"),
)


def key_text(keys: str) -> str:
    """The keys as this platform writes them (⌘ on macOS)."""
    return QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)


def sheet_rows() -> list[tuple[str, str, str]]:
    """The shortcuts sheet's rows: (keys, what they do, where), the window's shortcuts first."""
    rows = [(key_text(s.keys), s.what, "Anywhere in the window") for s in SHORTCUTS]
    return rows + [(keys, what, where) for where, keys, what in PLACE_KEYS]


def install(window: QWidget, actions: RoomActions) -> list[QShortcut]:
    """Make the window's shortcuts from :data:`SHORTCUTS` (each named ``shortcut-<name>``), each doing
    the action of its name that a room offered.

    Raises:
        KeyError: A shortcut whose action no room offers (so the sheet cannot list a key that does nothing).
    """
    missing = [s.name for s in SHORTCUTS if s.name not in actions.names()]
    if missing:
        raise KeyError(f"no room offers the actions of these shortcuts: {', '.join(missing)}")
    made = []
    for s in SHORTCUTS:
        shortcut = QShortcut(QKeySequence(s.keys), window)
        shortcut.setObjectName(f"shortcut-{s.name}")
        shortcut.setWhatsThis(s.what)
        shortcut.activated.connect(lambda name=s.name: actions.run(name))
        made.append(shortcut)
    return made
