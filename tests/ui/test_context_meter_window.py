"""The context meter in the window, counted by SmolLM2's own tokenizer: its parts add up to the next
prompt, and each grows when its part comes: a system prompt, a document attached (read whole, as the turn
puts it in), an MCP server's tools. The total is the prompt the turn then sends, documents included."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from prefill.mcp_tools.state import ServerStatus
from prefill.session.prompt_parts import PromptParts
from prefill.store import HistoryStore, SettingsFile
from prefill.ui.main_window import MainWindow
from prefill.ui.workers.documents_worker import DocumentsThread
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.mcp_servers import McpServers
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.ui.conftest import ANSWER_TIMEOUT, load, small_settings
from tests.ui.test_documents_window import INDEX_TIMEOUT, WordEmbedder
from tests.ui.test_window_tools import START_TIMEOUT, WEATHER, write_config

WAIT = 20_000
QUESTION = "Who keeps the lighthouse?"


@pytest.fixture
def window(qtbot, tmp_path: Path) -> Iterator[tuple[MainWindow, McpServers]]:
    mcp = McpServers(write_config(tmp_path, {"forecast": {"command": sys.executable, "args": [str(WEATHER)]}}))
    history = tmp_path / "history.sqlite3"
    store = StoreProxy(Stores(HistoryStore(history), SettingsFile(tmp_path / "settings.json")))
    engine = EngineThread()
    w = MainWindow(small_settings(max_tokens=8), store, engine, None, mcp=mcp,
                   documents=DocumentsThread(history, WordEmbedder))
    qtbot.addWidget(w)
    w.show()
    yield w, mcp
    w.close()
    engine.stop()
    store.stop()
    mcp.close()


def _parts(qtbot, w: MainWindow, ready=lambda _p: True) -> PromptParts:
    """The meter's parts of the chat as it is now, once `ready(parts)` holds (counted on the engine thread:
    a count asked before this one, with what was typed then, is not taken)."""
    w.prompt_count.ask()
    since = w.prompt_count.newest
    qtbot.waitUntil(lambda: w.prompt_count.shown >= since and w.input.meter.parts is not None
                    and ready(w.input.meter.parts), timeout=WAIT)
    p = w.input.meter.parts
    assert p is not None
    assert p.system + p.tools + p.documents + p.conversation == p.total  # the parts add up
    assert min(p.system, p.tools, p.documents, p.conversation) >= 0
    return p


def test_the_meter_counts_system_documents_and_tools_as_the_turn_sends_them(
        qtbot, window: tuple[MainWindow, McpServers], smollm2: Path, tmp_path: Path) -> None:
    w, mcp = window
    load(qtbot, w, smollm2)
    w.input.editor.setPlainText(QUESTION)
    first = _parts(qtbot, w, lambda p: p.total > 0)
    assert (first.system, first.tools, first.documents) == (0, 0, 0) and first.n_ctx == 2048
    assert w.input.count.text().startswith(f"{first.total:,} of 2,048 tokens")

    w.controller.choices.set_system_prompt("You are a careful keeper of records. Answer in one sentence.")
    system = _parts(qtbot, w, lambda p: p.system > 0)
    # (SmolLM2's template writes a default system prompt of its own when given none: counted with the
    # conversation, never against the words given here)
    assert system.total != first.total and f"system {system.system:,}" in w.input.count.text()

    note = tmp_path / "lighthouse.md"
    note.write_text("# The lighthouse\n\nThe lighthouse on Skerry Point is kept by Ingrid Dahl since 1987.\n")
    with qtbot.waitSignal(w.documents.indexed, timeout=INDEX_TIMEOUT):
        w.documents.attach([str(note)])
    docs = _parts(qtbot, w, lambda p: p.documents > 0)
    assert docs.documents_mode == "whole" and docs.system == system.system
    assert docs.total == system.total + docs.documents
    assert f"documents {docs.documents:,}" in w.input.count.text()

    # The total is the prompt the turn sends: the documents whole under the system prompt.
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as finished:
        w.input.button.click()
    assert finished.args[0].metrics.prompt_tokens == docs.total

    # An MCP server's tools: their schemas are in every prompt from now on.
    w.input.editor.setPlainText(QUESTION)
    before = _parts(qtbot, w, lambda p: p.conversation > docs.conversation)  # the answer is in the chat now
    assert before.tools == 0
    mcp.start_all()
    qtbot.waitUntil(lambda: mcp.states.get("forecast") is not None
                    and mcp.states["forecast"].status is ServerStatus.READY, timeout=START_TIMEOUT)
    tools = _parts(qtbot, w, lambda p: p.tools > 0)
    assert tools.total == before.total + tools.tools and tools.documents == before.documents
    assert f"tools {tools.tools:,}" in w.input.count.text()


def test_when_the_tools_schemas_leave_no_room_the_meter_says_so(
        qtbot, tmp_path: Path, smollm2: Path) -> None:
    """In a 256-token context two hundred and more tokens of a tool's schema leave no room for the question
    even with every earlier turn left out: the words name the tools, not the overflow policy."""
    mcp = McpServers(write_config(tmp_path, {"forecast": {"command": sys.executable, "args": [str(WEATHER)]}}))
    history = tmp_path / "history.sqlite3"
    store = StoreProxy(Stores(HistoryStore(history), SettingsFile(tmp_path / "settings.json")))
    engine = EngineThread()
    w = MainWindow(small_settings(n_ctx=256, policy="stop", max_tokens=32), store, engine, None, mcp=mcp)
    qtbot.addWidget(w)
    w.show()
    try:
        load(qtbot, w, smollm2)
        w.input.editor.setPlainText("Will it rain in Oslo and Bergen tomorrow, and should I pack a coat?")
        fits = _parts(qtbot, w)
        assert fits.fits and fits.tools == 0 and w.input.count.property("level") == "ok"
        mcp.start_all()
        qtbot.waitUntil(lambda: mcp.states.get("forecast") is not None
                        and mcp.states["forecast"].status is ServerStatus.READY, timeout=START_TIMEOUT)
        over = _parts(qtbot, w, lambda p: p.tools > 0)
        assert not over.fits_at_all and over.tools_push_over
        words = w.input.count.text()
        assert f"the tools' schemas take {over.tools:,} of the {over.n_ctx:,}-token context" in words
        assert "Turn tools off for this chat" in words and "Settings" not in words
        assert w.input.count.property("level") == "over"
        w.controller.choices.set_chat_tools(replace(w.controller.choices.chat_tools, enabled=False))
        back = _parts(qtbot, w, lambda p: p.tools == 0)  # tools off for this chat: it fits again
        assert back.fits and back.total == fits.total
        w.controller.choices.set_chat_tools(replace(w.controller.choices.chat_tools, enabled=True))
        _parts(qtbot, w, lambda p: p.tools > 0)
        with qtbot.waitSignal(w.controller.notice, timeout=START_TIMEOUT,
                              check_params_cb=lambda text: "too long" in text) as refused:
            qtbot.keyClick(w.input.editor, Qt.Key.Key_Return)  # sent anyway: the refusal names the tools too
        said = refused.args[0]
        assert f"The tools' schemas take {over.tools:,} of them" in said and "overflow policy" not in said
    finally:
        w.close()
        engine.stop()
        store.stop()
        mcp.close()
