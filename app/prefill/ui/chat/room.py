"""The chat room wires itself: its controller to the transcript's view, the message box, the tool
approval panel, the reasoning controls and the tools button; the sidebar to the engine's figures;
and the actions its shortcuts run (ui/wiring/room_actions.py). The window hands it these parts and
connects only what passes between rooms (the model loaded, the chat list, notices).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtGui import QGuiApplication

from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.composer.reasoning_controls import ReasoningControls
from prefill.ui.chat.controller import ChatController
from prefill.ui.chat.message_actions import MessageActions
from prefill.ui.chat.sidebar.sidebar import EngineSidebar
from prefill.ui.chat.tools.chat_tools import ChatToolsButton
from prefill.ui.chat.tools.tool_approval import ToolApprovalPanel
from prefill.ui.chat.transcript.transcript_model import TranscriptModel
from prefill.ui.chat.transcript.view import ChatView
from prefill.ui.wiring.room_actions import RoomActions
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.mcp_servers import McpServers


@dataclass(frozen=True)
class ChatParts:
    """The chat room's parts, made by the window (which lays them out)."""

    controller: ChatController
    view: ChatView
    transcript: TranscriptModel
    input: InputBox
    tool_approval: ToolApprovalPanel
    reasoning: ReasoningControls
    tools_button: ChatToolsButton


def wire_chat(parts: ChatParts, actions: RoomActions, notice: Callable[[str], None],
              toast: Callable[[str], None]) -> MessageActions:
    """Connect the chat's parts to each other and offer its actions; returns the messages' buttons' runner.
    `notice` is a banner (what needs action), `toast` passing news (copied)."""
    c = parts.controller
    parts.input.stop.connect(c.stop)
    c.notice.connect(notice)
    c.busy_changed.connect(parts.input.set_generating)
    c.choices.options_changed.connect(parts.reasoning.set_options)
    parts.reasoning.changed.connect(c.choices.set_options)
    c.tool_asked.connect(parts.tool_approval.ask)
    c.tool_settled.connect(parts.tool_approval.settle)
    parts.tool_approval.answered.connect(c.answer_tool)
    parts.tools_button.changed.connect(c.choices.set_chat_tools)
    c.choices.chat_tools_changed.connect(parts.tools_button.set_chat)
    message_actions = MessageActions(c, parts.view)
    parts.view.message_action.connect(message_actions.run)
    c.row_requested.connect(parts.view.scroll_to_row)
    offer_chat_actions(parts, actions, toast)
    return message_actions


def offer_chat_actions(parts: ChatParts, actions: RoomActions, toast: Callable[[str], None]) -> None:
    """The chat's shortcut actions: on the last answer (or message), the chat, the message box."""
    c, rows = parts.controller, parts.transcript

    def last(roles: tuple[str, ...]) -> int:
        """The row of the chat's last message in `roles` (-1: none yet)."""
        found = rows.rows()
        return next((i for i in range(len(found) - 1, -1, -1) if found[i].role in roles), -1)

    def on_last_answer(do: Callable[[int], None]) -> Callable[[], None]:
        def run() -> None:
            row = last(("assistant",))
            if row >= 0:
                do(row)

        return run

    def copy(row: int) -> None:
        widget = parts.view.live_widget(row)
        if widget is not None:
            widget.copy_text()  # its Copy button says so
        else:  # scrolled far away: no button to confirm on
            QGuiApplication.clipboard().setText(rows.row(row).content)
            toast("Copied the last answer.")

    def branch() -> None:
        row = last(("user", "assistant"))
        if row >= 0:
            c.edits.branch(row)

    actions.offer("new-chat", lambda: c.new_conversation())
    actions.offer("focus-input", parts.input.editor.setFocus)
    actions.offer("stop", c.stop)
    actions.offer("regenerate", on_last_answer(c.edits.regenerate))
    actions.offer("copy-answer", on_last_answer(copy))
    actions.offer("older-version", on_last_answer(lambda row: c.edits.page(row, -1)))
    actions.offer("newer-version", on_last_answer(lambda row: c.edits.page(row, 1)))
    actions.offer("branch", branch)
    actions.offer("compact", c.compact)
    actions.offer("undo-delete", parts.view.undo_delete)


def wire_sidebar(sidebar: EngineSidebar, worker: EngineWorker) -> None:
    """The sidebar's figures from the engine: the load's progress, the KV cache, the tool rounds, and an
    answer refused or failed."""
    worker.load_progress.connect(sidebar.set_load_progress)
    worker.kv_state.connect(sidebar.set_kv)
    worker.residents_changed.connect(sidebar.set_residents)
    worker.tool_loop_finished.connect(sidebar.on_tool_loop_finished)
    worker.failed.connect(sidebar.on_request_failed)  # refused: not "…" for ever (a slot: on the GUI thread)


def wire_tools(button: ChatToolsButton, mcp: McpServers | None, worker: EngineWorker,
               manage: Callable[[], None]) -> None:
    """This chat's tools button: the MCP servers' tools as they change, their calls run by the engine's
    tool loop, and `manage` (the Tools dialog) from its menu."""
    button.manage_requested.connect(manage)
    if mcp is None:
        return
    worker.use_tools(mcp.run_tool)
    mcp.changed.connect(lambda: button.set_tools(mcp.tools, mcp.off))  # McpServers lives on the GUI thread
