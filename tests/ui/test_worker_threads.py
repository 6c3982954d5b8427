"""What a worker's signal runs in the window runs on the GUI thread. With no receiving object, PySide
runs a lambda or a plain function connected to a signal on the thread of the signal's object: for a
worker moved to its own thread (the engine's, the documents'), that thread, where a widget must not be
touched. Each kind of connection the rooms make to a worker's signals is checked here by the thread its
slot runs on; the objects that live on the GUI thread (McpServers, StoreProxy, PoolJobs) are checked
to stay safe whatever thread emits."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QWidget

from prefill.engine.events import Finished
from prefill.session.tool_loop import LoopFinished
from prefill.store import HistoryStore, SettingsFile
from prefill.ui.chat.chat_choices import ChatChoices
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.room import wire_sidebar, wire_tools
from prefill.ui.chat.sidebar.sidebar import EngineSidebar
from prefill.ui.chat.tools.chat_tools import ChatToolsButton
from prefill.ui.documents.index_panel import IndexPanel
from prefill.ui.documents.room import DocumentsRoom
from prefill.ui.workers.documents_worker import DocumentsThread
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.mcp_servers import McpServers
from prefill.ui.workers.pool_jobs import PoolJobs
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.ui.scripted_windows import OnThread


def recorder() -> tuple[list[threading.Thread], Callable[..., None]]:
    """A list of the threads a function ran on, and the function."""
    seen: list[threading.Thread] = []
    return seen, lambda *_args: seen.append(threading.current_thread())


def on_gui_thread(qtbot, seen: list[threading.Thread]) -> None:
    qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    assert seen == [threading.main_thread()]


def test_the_engine_workers_tool_rounds_reach_the_sidebar_on_the_gui_thread(qtbot) -> None:
    engine = EngineThread()
    try:
        sidebar = EngineSidebar()
        qtbot.addWidget(sidebar)
        seen, record = recorder()
        sidebar.on_tool_rounds = record  # type: ignore[method-assign]
        wire_sidebar(sidebar, engine.worker)
        end = LoopFinished("done", Finished("stop", "Done."), ())
        on_engine = OnThread(engine.thread)  # kept while its call waits
        on_engine.run.emit(lambda: engine.worker.tool_loop_finished.emit(1, end))
        on_gui_thread(qtbot, seen)
    finally:
        engine.stop()


class _ToolsWorker:
    def use_tools(self, runner: object) -> None:
        self.runner = runner


def test_the_mcp_servers_tools_reach_the_tools_button_on_the_gui_thread(qtbot, tmp_path: Path) -> None:
    """McpServers lives on the GUI thread, so its `changed`, emitted there after each pool job, would
    reach the button on the GUI thread even from a pool thread."""
    mcp = McpServers(tmp_path / "mcp.json")
    button = ChatToolsButton()
    qtbot.addWidget(button)
    seen, record = recorder()
    button.set_tools = record  # type: ignore[method-assign]
    wire_tools(button, mcp, _ToolsWorker(), lambda: None)  # type: ignore[arg-type]
    jobs = PoolJobs(1)
    jobs.run(mcp.changed.emit)  # on a pool thread
    on_gui_thread(qtbot, seen)
    jobs.close()


def test_the_documents_workers_failure_reaches_the_notice_on_the_gui_thread(qtbot, tmp_path: Path) -> None:
    store = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    documents = DocumentsThread(tmp_path / "history.sqlite3")
    window = QWidget()
    qtbot.addWidget(window)
    seen, record = recorder()
    try:
        DocumentsRoom(documents, ChatChoices(store, window), InputBox(), IndexPanel(),  # the window keeps it
                      _Documents(), record, window)  # type: ignore[arg-type]
        worker = documents.worker  # its thread started
        on_documents = OnThread(documents.thread)
        on_documents.run.emit(lambda: worker.failed.emit("The index could not be read."))
        on_gui_thread(qtbot, seen)
    finally:
        documents.stop()
        store.stop()


class _Documents:
    def use_documents(self, chats: object) -> None:
        self.chats = chats


def test_a_store_calls_answer_and_a_pool_jobs_result_come_back_on_the_gui_thread(qtbot, tmp_path: Path) -> None:
    store = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    jobs = PoolJobs(1)
    try:
        seen, record = recorder()
        store.list_conversations(then=record)
        on_gui_thread(qtbot, seen)
        done, record_done = recorder()
        jobs.run(lambda: None, then=record_done)
        on_gui_thread(qtbot, done)
    finally:
        store.stop()
        jobs.close()
