"""The Tools dialog: mcp.json's servers and their state, the tools chats are offered, and editing
the list (add, edit, remove a server; paste an existing `mcpServers` block).

Everything shown from a server or the file (names, descriptions, reasons) is plain text. Entries
are checked by the one door for mcp.json (`mcp_tools/config.py`); saving and starting run on pool
jobs (`McpServers`), so the dialog never waits on a server or the disk.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from prefill.mcp_tools.config import HttpServer, McpServer, StdioServer, config_document, parse_config
from prefill.mcp_tools.state import ServerState, ServerStatus
from prefill.ui.widgets.plain_text import inform, plain_label, tooltip
from prefill.ui.widgets.text_sheet import primary
from prefill.ui.widgets.tokens import COLUMN, SPACE
from prefill.ui.workers.mcp_servers import McpServers

MAX_PASTE_CHARS = 1 << 20
EDITOR_LINES = 3  # the lines an entry's arguments, environment or headers box shows
FULL_TEXT = Qt.ItemDataRole.UserRole + 1  # a row's whole text (a failure's reason, a tool's description)


def state_text(state: ServerState | None, disabled: bool = False) -> str:
    """A server's state in a few words: starting, ready with N tools, stopped, or failed and why."""
    if state is None:
        return "turned off" if disabled else "not started"
    if state.status is ServerStatus.READY:
        n = len(state.tools)
        return f"ready, {n} tool{'' if n == 1 else 's'}"
    if state.status is ServerStatus.STARTING:
        return "starting…"
    return f"{state.status.value}: {state.reason}" if state.reason else state.status.value


def servers_from_json(text: str) -> tuple[list[McpServer], list[str]]:
    """The servers of a pasted block: `{"mcpServers": {…}}`, or the `{name: entry}` object inside it.

    Returns:
        The usable servers, and a sentence per refused entry.

    Raises:
        ValueError: Not JSON, or not either shape (worded).
    """
    if len(text) > MAX_PASTE_CHARS:
        raise ValueError("the text is too long for a server list")
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"it is not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError("it is nested too deeply") from None
    if isinstance(data, dict) and "mcpServers" not in data and all(isinstance(v, dict) for v in data.values()):
        data = {"mcpServers": data}
    config = parse_config(data)
    if not config.servers and not config.problems:
        raise ValueError('it holds no servers: paste the "mcpServers" block of a client\'s config')
    return list(config.servers), [p.message for p in config.problems]


class ServerEditor(QDialog):
    """One server's entry: a name, then a program to start (command, arguments, environment) or
    the URL of a running one (and headers). OK checks it through the config's door."""

    def __init__(self, server: McpServer | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Edit MCP server" if server else "Add MCP server")
        self.server: McpServer | None = None
        self.name = QLineEdit(server.name if server else "")
        self.kind = QComboBox()
        self.kind.addItems(["Program (stdio)", "URL (HTTP)"])
        self.command = QLineEdit()
        self.args = QPlainTextEdit()
        self.args.setPlaceholderText("one argument per line")
        self.env = QPlainTextEdit()
        self.env.setPlaceholderText("NAME=value, one per line")
        self.url = QLineEdit()
        self.url.setPlaceholderText("https://example.com/mcp")
        self.headers = QPlainTextEdit()
        self.headers.setPlaceholderText("Name: value, one per line")
        for box in (self.args, self.env, self.headers):
            box.setFixedHeight(box.fontMetrics().lineSpacing() * EDITOR_LINES + 2 * SPACE.sm)
        if isinstance(server, StdioServer):
            self.command.setText(server.command)
            self.args.setPlainText("\n".join(server.args))
            self.env.setPlainText("\n".join(f"{k}={v}" for k, v in server.env))
        elif isinstance(server, HttpServer):
            self.kind.setCurrentIndex(1)
            self.url.setText(server.url)
            self.headers.setPlainText("\n".join(f"{k}: {v}" for k, v in server.headers))
        self.problem = plain_label()
        self.problem.setObjectName("server-problem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        form = QFormLayout()
        form.addRow(plain_label("Name"), self.name)
        form.addRow(plain_label("Kind"), self.kind)
        self._rows: dict[str, list[QWidget]] = {"stdio": [], "http": []}
        for kind, label, widget in (("stdio", "Command", self.command), ("stdio", "Arguments", self.args),
                                    ("stdio", "Environment", self.env), ("http", "URL", self.url),
                                    ("http", "Headers", self.headers)):
            title = plain_label(label)
            form.addRow(title, widget)
            self._rows[kind] += [title, widget]
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        primary(buttons.button(QDialogButtonBox.StandardButton.Ok))
        buttons.accepted.connect(self._on_buttons_accepted)
        buttons.rejected.connect(self.reject)
        lay = _roomy(QVBoxLayout(self))
        lay.addLayout(form)
        lay.addWidget(self.problem)
        lay.addWidget(buttons)
        self.kind.currentIndexChanged.connect(self._show_kind)
        self._show_kind()

    def entry(self) -> dict[str, Any]:
        """The entry as mcp.json would hold it."""
        if self.kind.currentIndex() == 0:
            out: dict[str, Any] = {"command": self.command.text().strip()}
            args = [a for a in self.args.toPlainText().splitlines() if a.strip()]
            env = dict(_pair(line, "=") for line in self.env.toPlainText().splitlines() if line.strip())
            if args:
                out["args"] = args
            if env:
                out["env"] = env
            return out
        out = {"url": self.url.text().strip()}
        headers = dict(_pair(line, ":") for line in self.headers.toPlainText().splitlines() if line.strip())
        if headers:
            out["headers"] = headers
        return out

    def _show_kind(self) -> None:
        stdio = self.kind.currentIndex() == 0
        for w in self._rows["stdio"]:
            w.setVisible(stdio)
        for w in self._rows["http"]:
            w.setVisible(not stdio)

    def _on_buttons_accepted(self) -> None:
        config = parse_config({"mcpServers": {self.name.text().strip(): self.entry()}})
        if config.problems:
            self.problem.setText(config.problems[0].message)
            self.problem.show()
            return
        self.server = config.servers[0]
        self.accept()


def _roomy(lay: QVBoxLayout) -> QVBoxLayout:
    """A dialog's layout with the design system's margins and gaps."""
    lay.setContentsMargins(SPACE.xl, SPACE.lg, SPACE.xl, SPACE.lg)
    lay.setSpacing(SPACE.md)
    return lay


def _pair(line: str, sep: str) -> tuple[str, str]:
    key, _, value = line.partition(sep)
    return key.strip(), value.strip()


class ToolsDialog(QDialog):
    """The servers of mcp.json with their state and tools; a checked tool is offered in chats."""

    def __init__(self, mcp: McpServers, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Tools")
        self.resize(640, 460)
        self.mcp = mcp
        intro = plain_label("Tools from MCP servers (mcp.json). A checked tool is offered to the model in chats; "
                            "each call asks you first unless you always allow that tool.")
        intro.setObjectName("tools-intro")
        intro.setWordWrap(True)
        self.error = plain_label()
        self.error.setObjectName("tools-error")
        self.error.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("tools-tree")  # a card of servers, each over its tools (styles/dialogs.py)
        self.tree.setColumnCount(2)
        self.tree.setHeaderHidden(True)  # a server's row says its state, a tool's its description
        self.tree.setColumnWidth(0, COLUMN.min_width // 2)
        self.tree.itemChanged.connect(self._on_tree_item_changed)
        self.tree.currentItemChanged.connect(self._on_tree_current_item_changed)
        self.detail = plain_label()  # the chosen row's whole text (a failure's reason is long)
        self.detail.setObjectName("tools-detail")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.add_button = QPushButton("Add…")
        self.edit_button = QPushButton("Edit…")
        self.remove_button = QPushButton("Remove")
        self.paste_button = QPushButton("Paste JSON…")
        self.add_button.clicked.connect(lambda: self._edit(None))
        self.edit_button.clicked.connect(lambda: self._edit(self.selected_server()))
        self.remove_button.clicked.connect(self._remove)
        self.paste_button.clicked.connect(self._paste)
        row = QHBoxLayout()
        for b in (self.add_button, self.edit_button, self.remove_button, self.paste_button):
            row.addWidget(b)
        row.addStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        lay = _roomy(QVBoxLayout(self))
        lay.addWidget(intro)
        lay.addWidget(self.error)
        lay.addWidget(self.tree, 1)
        lay.addWidget(self.detail)
        lay.addLayout(row)
        lay.addWidget(close)
        self._filling = False
        mcp.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Show the servers, their states and tools as the app knows them now."""
        self._filling = True
        chosen = self.selected_name()
        self.tree.clear()
        self.error.setText(self.mcp.config_error)
        self.error.setVisible(bool(self.mcp.config_error))
        for server in self.mcp.config.servers:
            state = self.mcp.states.get(server.name)
            item = QTreeWidgetItem([server.name, state_text(state, server.disabled)])
            item.setData(0, Qt.ItemDataRole.UserRole, server.name)
            _bold(item)
            _set_full_text(item, item.text(1))
            for tool in (t for t in self.mcp.tools if t.server == server.name):
                child = QTreeWidgetItem([tool.model_name, tool.description.split("\n")[0]])
                child.setFlags(child.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                child.setCheckState(0, Qt.CheckState.Unchecked if tool.model_name in self.mcp.off
                                    else Qt.CheckState.Checked)
                _set_full_text(child, tool.description)
                item.addChild(child)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)
            if server.name == chosen:
                self.tree.setCurrentItem(item)
        if self.tree.currentItem() is None:  # show a failure's reason whole, else the first server's state
            failed = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
            chosen_item = next((i for i in failed if i is not None and i.text(1).startswith("failed")), None)
            if chosen_item is not None:
                self.tree.setCurrentItem(chosen_item)
        for problem in self.mcp.config.problems:
            item = QTreeWidgetItem([problem.name, f"refused: {problem.message}"])
            item.setData(0, Qt.ItemDataRole.UserRole, problem.name)
            _set_full_text(item, problem.message)
            self.tree.addTopLevelItem(item)
        self._filling = False

    def selected_name(self) -> str:
        item = self.tree.currentItem()
        while item is not None and item.parent() is not None:
            item = item.parent()
        return str(item.data(0, Qt.ItemDataRole.UserRole) or "") if item is not None else ""

    def selected_server(self) -> McpServer | None:
        return self.mcp.config.server(self.selected_name())

    def server_item(self, name: str) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == name:
                return item
        return None

    def _on_tree_current_item_changed(self, item: QTreeWidgetItem | None, _previous: object) -> None:
        self.detail.setText(f"{item.text(0)}: {item.data(0, FULL_TEXT) or item.text(1)}" if item is not None else "")

    def _on_tree_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._filling or item.parent() is None or column != 0:
            return
        name = item.text(0)
        if item.checkState(0) == Qt.CheckState.Checked:
            self.mcp.off.discard(name)
        else:
            self.mcp.off.add(name)

    def _edit(self, server: McpServer | None) -> None:
        editor = ServerEditor(server, self)
        if editor.exec() != QDialog.DialogCode.Accepted or editor.server is None:
            return
        servers = [s for s in self.mcp.config.servers if server is None or s.name != server.name]
        servers = [s for s in servers if s.name != editor.server.name] + [editor.server]
        removed = [server.name] if server is not None and server.name != editor.server.name else []
        self._save(servers, removed)

    def _remove(self) -> None:
        name = self.selected_name()
        if not name:
            return
        self._save([s for s in self.mcp.config.servers if s.name != name], [name])

    def _paste(self) -> None:
        box = PasteDialog(self)
        if box.exec() != QDialog.DialogCode.Accepted:
            return
        names = {s.name for s in box.servers}
        self._save([s for s in self.mcp.config.servers if s.name not in names] + box.servers, [])

    def _save(self, servers: list[McpServer], removed: list[str]) -> None:
        self.mcp.save(servers, error=lambda e: inform(self, "Tools", f"The server list was not saved: {e}"),
                      removed=removed)


def _bold(item: QTreeWidgetItem) -> None:
    """A server's row in bold: its tools are listed under it."""
    font = item.font(0)
    font.setBold(True)
    item.setFont(0, font)


def _set_full_text(item: QTreeWidgetItem, text: str) -> None:
    item.setData(0, FULL_TEXT, text)
    item.setToolTip(1, tooltip(text))  # a tooltip guesses rich text: escaped by the one helper


class PasteDialog(QDialog):
    """A box for an existing `mcpServers` block (from Claude Desktop, Cursor…); OK checks it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Paste MCP servers")
        self.servers: list[McpServer] = []
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText(json.dumps(config_document([StdioServer("example", "npx", ("-y", "server"))]),
                                                indent=2))
        self.problem = plain_label()
        self.problem.setObjectName("paste-problem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        primary(buttons.button(QDialogButtonBox.StandardButton.Ok))
        buttons.accepted.connect(self._on_buttons_accepted)
        buttons.rejected.connect(self.reject)
        lay = _roomy(QVBoxLayout(self))
        lay.addWidget(plain_label('Paste the "mcpServers" block of another client\'s config:'))
        lay.addWidget(self.text, 1)
        lay.addWidget(self.problem)
        lay.addWidget(buttons)

    def _on_buttons_accepted(self) -> None:
        try:
            servers, problems = servers_from_json(self.text.toPlainText())
        except ValueError as e:
            self.problem.setText(f"Not added: {e}")
            self.problem.show()
            return
        if problems:
            self.problem.setText("Not added: " + " ".join(problems))
            self.problem.show()
            return
        self.servers = servers
        self.accept()
