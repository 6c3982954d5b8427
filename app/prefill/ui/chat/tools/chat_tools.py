"""Tools per chat: whether the open chat offers the MCP servers' tools, and which.

The Tools dialog turns a tool off for every chat (`McpServers.off`); a chat can also go without
tools altogether, or without some of them (`ChatTools`, kept in the chat's stored settings under
"tools"). The toolbar's Tools button opens a menu of both: this chat's switches, then the dialog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from prefill.engine.request import Tool
from prefill.mcp_tools.state import McpTool


@dataclass(frozen=True)
class ChatTools:
    """A chat's tools: all those switched on in the Tools dialog (less `off`), or none.

    Attributes:
        enabled: Whether the chat offers tools at all.
        off: The model-facing names of tools this chat does not offer.
    """

    enabled: bool = True
    off: frozenset[str] = frozenset()

    def offer(self, tools: Iterable[Tool]) -> tuple[Tool, ...]:
        """The tools to offer the model in this chat, of those the app offers."""
        return tuple(t for t in tools if t.name not in self.off) if self.enabled else ()

    def as_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "off": sorted(self.off)}


def stored_chat_tools(settings: Any) -> ChatTools:
    """A chat's stored tool switches (whatever the file holds: checked here; the default when unset)."""
    t = settings.get("tools") if isinstance(settings, Mapping) else None
    if not isinstance(t, Mapping):
        return ChatTools()
    enabled = t.get("enabled")
    off = t.get("off")
    names = frozenset(n for n in off if isinstance(n, str)) if isinstance(off, list) else frozenset()
    return ChatTools(enabled if isinstance(enabled, bool) else True, names)


class ChatToolsButton(QToolButton):
    """The toolbar's Tools button: a menu of this chat's tool switches, and "Manage servers…".

    Signals:
        changed(object): the ChatTools the person chose for the open chat.
        manage_requested(): open the Tools dialog.
    """

    changed = Signal(object)
    manage_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("chat-tools")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setAccessibleName("Tools for this chat")
        self.chat = ChatTools()
        self._tools: tuple[McpTool, ...] = ()
        self._app_off: frozenset[str] = frozenset()
        menu = QMenu(self)
        menu.setToolTipsVisible(True)  # each tool's description
        menu.aboutToShow.connect(self._fill)
        self.setMenu(menu)
        self._update_text()

    def set_chat(self, chat: ChatTools) -> None:
        """The open chat's switches (a chat opened, or the person changed them)."""
        self.chat = chat
        self._update_text()

    def set_tools(self, tools: Iterable[McpTool], app_off: Iterable[str]) -> None:
        """The tools the servers offer now, and those the Tools dialog turned off for every chat."""
        self._tools, self._app_off = tuple(tools), frozenset(app_off)
        self._update_text()

    def offered_names(self) -> list[str]:
        if not self.chat.enabled:
            return []
        off = self._app_off | self.chat.off
        return [t.model_name for t in self._tools if t.model_name not in off]

    def _update_text(self) -> None:
        n = len(self.offered_names())
        if not self._tools:  # no server set up, or none answering: a count of 0 would say nothing
            self.setText("Tools")
            self.setToolTip("No tool servers yet. Click to add an MCP server: the model may then ask to call its "
                            "tools, and you approve each call.")
        elif not self.chat.enabled:
            self.setText("Tools: off")
            self.setToolTip("This chat offers the model no tools. Click to switch them on or manage servers.")
        else:
            self.setText(f"Tools: {n}")
            self.setToolTip(f"The model may ask to call {n} tool{'s' if n != 1 else ''} in this chat; "
                            "you approve each call. Click to choose them or manage MCP servers.")

    def _fill(self) -> None:
        menu = self.menu()
        menu.clear()
        use = QAction("Use tools in this chat", menu)
        use.setCheckable(True)
        use.setChecked(self.chat.enabled)
        use.toggled.connect(self._on_use_toggled)
        menu.addAction(use)
        if self._tools:
            menu.addSection("Tools offered in this chat")
        for tool in self._tools:
            label = f"{tool.server} › {tool.name}"
            item = QAction(label.replace("&", "&&"), menu)  # a server's name is not a shortcut's mnemonic
            item.setCheckable(True)
            off_everywhere = tool.model_name in self._app_off
            item.setChecked(not off_everywhere and tool.model_name not in self.chat.off)
            item.setEnabled(self.chat.enabled and not off_everywhere)
            item.setToolTip("Turned off for every chat in Manage servers and tools" if off_everywhere
                            else tool.description)
            item.toggled.connect(lambda on, name=tool.model_name: self._on_tool_toggled(name, on))
            menu.addAction(item)
        if not self._tools:
            none = menu.addAction("No tools yet: add an MCP server")
            none.setEnabled(False)
        menu.addSeparator()
        menu.addAction("Manage servers and tools…", self.manage_requested.emit)

    def _on_use_toggled(self, on: bool) -> None:
        self._choose(ChatTools(on, self.chat.off))

    def _on_tool_toggled(self, name: str, on: bool) -> None:
        self._choose(ChatTools(self.chat.enabled, self.chat.off - {name} if on else self.chat.off | {name}))

    def _choose(self, chat: ChatTools) -> None:
        self.set_chat(chat)
        self.changed.emit(chat)
