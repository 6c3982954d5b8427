"""Tools in the window: the scripted caller model calls forecast__weather(city="Oslo") on every turn,
served by real MCP servers written with the SDK. The call is asked about above the input box;
Allow runs it and its result shows as a folded row, Deny gives a denied row, Stop ends a waiting
question or a running tool; the Tools dialog lists the servers, their tools and why one failed."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from prefill.engine.message import ToolCall
from prefill.mcp_tools.state import ServerStatus
from prefill.session.tool_loop import Decision
from prefill.store import HistoryStore, SettingsFile
from prefill.ui.main_window import MainWindow
from prefill.ui.tools_dialog import ServerEditor, ToolsDialog, servers_from_json
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.mcp_servers import McpServers
from prefill.ui.workers.store_worker import StoreProxy, Stores
from prefill.ui.workers.tool_gate import ApprovalGate
from tests.engine.vocab_models import write_caller, write_round_tripper
from tests.ui.conftest import ANSWER_TIMEOUT, load, small_settings

ROOT = Path(__file__).resolve().parents[2]
WEATHER = ROOT / "tests" / "commands" / "weather_mcp_server.py"
SLOW = Path(__file__).resolve().parent / "slow_mcp_server.py"
TOOL = "forecast__weather"
START_TIMEOUT = 60_000


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model that answers every turn with forecast__weather(city="Oslo") (as tests/commands/test_chat_mcp.py)."""
    return write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf", ("forecast", "__", "weather"))


def write_config(folder: Path, servers: dict[str, object]) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def started(qtbot, mcp: McpServers) -> None:
    mcp.start_all()
    qtbot.waitUntil(lambda: bool(mcp.states) and all(s.status is not ServerStatus.STARTING
                                                      for s in mcp.states.values()), timeout=START_TIMEOUT)


@pytest.fixture
def open_window(qtbot, tmp_path: Path, smollm2: Path):
    opened: list[tuple[MainWindow, EngineThread, StoreProxy, McpServers]] = []

    def make(server_script: Path) -> MainWindow:
        mcp = McpServers(write_config(tmp_path, {"forecast": {"command": sys.executable,
                                                              "args": [str(server_script)]}}))
        settings_file = SettingsFile(tmp_path / "settings.json")
        store = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), settings_file))
        engine = EngineThread()
        # the caller calls on every turn: one round, then the limit (the setting the window passes on)
        settings = small_settings().with_values({"ui.max_tool_rounds": 1})
        w = MainWindow(settings, store, engine, smollm2, mcp=mcp)
        assert engine.worker.max_tool_rounds == 1
        qtbot.addWidget(w)
        w.show()
        opened.append((w, engine, store, mcp))
        started(qtbot, mcp)
        state = mcp.states["forecast"]
        assert state.status is ServerStatus.READY, state.reason
        return w

    yield make
    for w, engine, store, mcp in opened:
        w.close()
        engine.stop()
        store.stop()
        mcp.close()


def tool_rows(w: MainWindow) -> list[int]:
    return [i for i, r in enumerate(w.transcript.rows()) if r.role == "tool"]


def ask(qtbot, w: MainWindow) -> None:
    """Send a question and wait until the call is asked about."""
    w.controller.send("What is the weather in Oslo?")
    qtbot.waitUntil(lambda: w.tool_approval.isVisible(), timeout=ANSWER_TIMEOUT)


def test_allow_runs_the_tool_and_its_result_shows_folded(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    assert w.tools_action.isVisible()
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        ask(qtbot, w)
        panel = w.tool_approval
        assert TOOL in panel.title.text()
        assert json.loads(panel.arguments.toPlainText()) == {"city": "Oslo"}
        panel.allow_once.click()
    assert not w.tool_approval.isVisible()
    ran, past_limit = (w.transcript.row(i) for i in tool_rows(w))
    assert ran.content == "Sunny in Oslo, 21 °C." and not ran.streaming
    assert ran.figures["tool"] == TOOL and not ran.figures["is_error"] and not ran.figures["denied"]
    assert json.loads(ran.figures["arguments"]) == {"city": "Oslo"}
    assert past_limit.figures["not_run"]
    assert "tool round" in w.notice.text()
    rounds = w.sidebar.text("tools")  # where the turn's time went, the result's prefill apart
    assert rounds.startswith("1 tool round · model ") and " s · tools " in rounds, rounds
    assert "results prefilled: " in rounds, rounds
    row = tool_rows(w)[0]
    qtbot.waitUntil(lambda: w.chat_view.live_widget(row) is not None, timeout=10_000)
    section = w.chat_view.live_widget(row).tool
    assert section is not None and not section.is_open()
    assert section.title().startswith(f"Tool: {TOOL} · ") and section.title().endswith(" ms")
    section.toggle.click()
    assert section.is_open() and "Sunny in Oslo, 21 °C." in section.text() and '"Oslo"' in section.text()
    assert w.transcript.row(w.transcript.rowCount() - 1).role == "assistant"  # the answer stays last
    # The next turn's history has the calls as the loop wrote them: each round's calls, then their results.
    history = w.controller.messages()
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "tool"]
    assert history[1].tool_calls[0].name == TOOL and history[2].content == "Sunny in Oslo, 21 °C."
    assert history[2].tool_call_id == history[1].tool_calls[0].id and history[4].content.startswith("Not run")
    assert "tool_calls" not in w.transcript.row(w.transcript.rowCount() - 1).figures

    # Reopened, the chat shows its calls again: they were kept with the answer.
    cid = w.controller.conversation_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(cid)
    assert [r.role for r in w.transcript.rows()] == ["user", "tool", "tool", "assistant"]
    assert w.controller.messages() == history  # the same ids, so the prompt's prefix is the same
    again = w.transcript.row(1)
    assert again.content == "Sunny in Oslo, 21 °C." and again.figures["tool"] == TOOL and not again.streaming
    assert w.transcript.row(2).figures["not_run"]
    assert "tool_calls" not in w.transcript.row(3).figures


def test_deny_gives_a_denied_row(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        ask(qtbot, w)
        w.tool_approval.deny.click()
    denied = w.transcript.row(tool_rows(w)[0])
    assert denied.figures["denied"] and "denied" in denied.content
    row = tool_rows(w)[0]
    qtbot.waitUntil(lambda: w.chat_view.live_widget(row) is not None, timeout=10_000)
    assert w.chat_view.live_widget(row).tool.title() == f"Tool: {TOOL} · denied"


def test_always_allow_is_not_asked_again(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        ask(qtbot, w)
        w.tool_approval.always.click()
    asked: list[object] = []
    w.controller.tool_asked.connect(asked.append)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.send("And tomorrow?")
    assert not asked
    ran = [w.transcript.row(i) for i in tool_rows(w) if not w.transcript.row(i).figures.get("not_run")]
    assert [r.content for r in ran] == ["Sunny in Oslo, 21 °C."] * 2


def test_stop_while_asked_denies_and_ends_the_answer(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        ask(qtbot, w)
        w.controller.stop()
    assert not w.tool_approval.isVisible() and not w.controller.busy
    rows = tool_rows(w)
    assert rows and all(w.transcript.row(i).figures["not_run"] for i in rows)


def test_stop_while_a_slow_tool_runs(open_window, qtbot, caller: Path) -> None:
    w = open_window(SLOW)
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as done:
        ask(qtbot, w)
        w.tool_approval.allow_once.click()
        qtbot.waitUntil(lambda: any(w.transcript.row(i).streaming for i in tool_rows(w)), timeout=ANSWER_TIMEOUT)
        w.controller.stop()
    assert done.args[0].reason == "cancelled" or done.args[0].reason == "tool_calls"
    stopped = w.transcript.row(tool_rows(w)[0])
    assert stopped.figures["stopped"] and stopped.figures["is_error"] and not stopped.streaming
    assert stopped.figures["elapsed_ms"] < 30_000
    assert not w.controller.busy


def test_the_dialog_lists_servers_tools_and_why_one_failed(qtbot, tmp_path: Path) -> None:
    config = write_config(tmp_path, {
        "forecast": {"command": sys.executable, "args": [str(WEATHER)]},
        "missing": {"command": str(tmp_path / "no-such-program")},
        "broken": {"command": 5},
    })
    mcp = McpServers(config, off=[])
    try:
        started(qtbot, mcp)
        dialog = ToolsDialog(mcp)
        qtbot.addWidget(dialog)
        forecast, missing = dialog.server_item("forecast"), dialog.server_item("missing")
        broken = dialog.server_item("broken")
        assert forecast is not None and missing is not None and broken is not None
        assert forecast.text(1) == "ready, 1 tool"
        tool = forecast.child(0)
        assert tool.text(0) == TOOL and "weather" in tool.text(1).lower()
        assert dialog.tree.objectName() == "tools-tree"  # a card of servers (styles/dialogs.py), not a stock tree
        assert forecast.font(0).bold() and not tool.font(0).bold()  # a server's name over its tools
        assert missing.text(1).startswith("failed: ") and len(missing.text(1)) > len("failed: ") + 10
        assert broken.text(1).startswith("refused: ")
        assert [t.name for t in mcp.offered()] == [TOOL]
        tool.setCheckState(0, tool.checkState(0).__class__.Unchecked)
        assert mcp.offered() == () and mcp.off == {TOOL}
    finally:
        mcp.close()


def test_adding_a_pasted_server_saves_it_private_and_starts_it(qtbot, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"broken": {"command": 5}})
    mcp = McpServers(config)
    try:
        mcp.start_all()
        qtbot.waitUntil(lambda: bool(mcp.config.problems), timeout=START_TIMEOUT)
        servers, problems = servers_from_json(json.dumps({"forecast": {"command": sys.executable,
                                                                       "args": [str(WEATHER)]}}))
        assert not problems
        with qtbot.waitSignal(mcp.changed, timeout=START_TIMEOUT):
            mcp.save(servers)
        qtbot.waitUntil(lambda: mcp.states.get("forecast") is not None
                        and mcp.states["forecast"].status is ServerStatus.READY, timeout=START_TIMEOUT)
        assert config.stat().st_mode & 0o777 == 0o600
        saved = json.loads(config.read_text())["mcpServers"]
        assert set(saved) == {"forecast", "broken"}  # the refused entry is kept for the person to fix
    finally:
        mcp.close()


def test_paste_refuses_what_is_not_a_server_list() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        servers_from_json("{mcpServers")
    with pytest.raises(ValueError, match="no servers"):
        servers_from_json("{}")
    servers, problems = servers_from_json('{"mcpServers": {"a": {"url": "https://example.com/mcp"}, "b": 3}}')
    assert [s.name for s in servers] == ["a"] and len(problems) == 1


def test_the_gate_takes_only_the_answer_to_its_own_question() -> None:
    gate = ApprovalGate()
    call = ToolCall("c1", TOOL, '{"city": "Oslo"}')
    asked: list[int] = []

    def show(serial: int, _call: ToolCall) -> None:
        asked.append(serial)
        gate.answer(serial - 1, Decision.ALLOW_ONCE)  # a late answer to an earlier question
        gate.answer(serial, Decision.DENY)

    assert gate.ask(call, show, None) is Decision.DENY
    cancel = threading.Event()
    cancel.set()
    assert gate.ask(call, lambda _s, _c: None, cancel) is Decision.DENY and gate.asking == 0


def test_stored_calls_are_checked_before_they_become_rows() -> None:
    from prefill.ui.chat.stored_rows import stored_tool_rows as _stored_tool_rows

    good = {"tool": TOOL, "arguments": '{"city": "Oslo"}', "result": "Sunny", "elapsed_ms": 5.0, "is_error": False}
    rows = _stored_tool_rows([good, "junk", {"tool": 3, "result": "x"}, {"tool": TOOL}, {**good, "round": [1]}], 7)
    assert [(r.role, r.content, r.position) for r in rows] == [("tool", "Sunny", 7), ("tool", "Sunny", 7)]
    assert "round" not in rows[1].figures and rows[0].figures["arguments"] == '{"city": "Oslo"}'
    assert _stored_tool_rows({"not": "a list"}, 0) == []


def test_the_server_editor_checks_its_entry_through_the_door(qtbot) -> None:
    editor = ServerEditor(None)
    qtbot.addWidget(editor)
    editor.name.setText("files")
    editor.command.setText("npx")
    editor.args.setPlainText("-y\n@modelcontextprotocol/server-filesystem\n/tmp\n")
    editor.env.setPlainText("TOKEN=abc")
    editor._on_buttons_accepted()
    assert editor.server is not None and editor.server.args == ("-y", "@modelcontextprotocol/server-filesystem", "/tmp")
    assert dict(editor.server.env) == {"TOKEN": "abc"}  # type: ignore[union-attr]
    web = ServerEditor(None)
    qtbot.addWidget(web)
    web.name.setText("web")
    web.kind.setCurrentIndex(1)
    web.url.setText("ftp://example.com/mcp")
    web._on_buttons_accepted()
    assert web.server is None and web.problem.isVisibleTo(web) and "web" in web.problem.text()
    web.url.setText("https://example.com/mcp")
    web.headers.setPlainText("Authorization: Bearer x")
    web._on_buttons_accepted()
    assert web.server is not None and dict(web.server.headers) == {"Authorization": "Bearer x"}  # type: ignore[union-attr]


def test_the_tool_rounds_setting_reaches_the_loop(qtbot, tmp_path) -> None:
    from prefill.store.app_settings import Settings

    s = Settings().with_values({"ui.max_tool_rounds": 3})
    assert s.ui.max_tool_rounds == 3
    assert Settings.from_dict({"ui": {"max_tool_rounds": 99}}).ui.max_tool_rounds == 8  # out of range: the default


def test_tools_are_switched_per_chat_and_kept_with_it(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    load(qtbot, w, caller)
    button = w.tools_button
    qtbot.waitUntil(lambda: button.text() == "Tools: 1", timeout=START_TIMEOUT)
    menu = button.menu()
    menu.aboutToShow.emit()  # the menu is built as it opens
    use, tool = menu.actions()[0], next(a for a in menu.actions() if a.text() == "forecast › weather")
    assert use.isChecked() and tool.isChecked()
    use.trigger()  # before the first chat: the choice is that chat's
    assert button.text() == "Tools: off"
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as done:
        w.controller.send("What is the weather in Oslo?")
    assert done.args[0].reason != "tool_calls" and not done.args[0].tool_calls  # no tools offered: no call
    assert not tool_rows(w) and not w.tool_approval.isVisible()
    first = w.controller.conversation_id

    with qtbot.waitSignal(w.controller.conversation_opened, timeout=ANSWER_TIMEOUT):
        w.controller.new_conversation()
    assert button.text() == "Tools: 1"  # a new chat offers the tools again
    menu.aboutToShow.emit()
    next(a for a in menu.actions() if a.text() == "forecast › weather").trigger()  # this chat: without it
    assert button.text() == "Tools: 0" and w.controller.choices.chat_tools.offer(w.mcp.offered()) == ()
    second = w.controller.conversation_id

    for cid, text in ((first, "Tools: off"), (second, "Tools: 0")):  # read back from the history file
        with qtbot.waitSignal(w.controller.conversation_opened, timeout=ANSWER_TIMEOUT):
            w.controller.open_conversation(cid)
        assert button.text() == text
    got: list[dict] = []
    w.store.conversation(second, then=lambda c: got.append(c.settings))
    qtbot.waitUntil(lambda: bool(got), timeout=ANSWER_TIMEOUT)
    assert got[0]["tools"] == {"enabled": True, "off": [TOOL]}


def test_regenerate_runs_the_rounds_again_and_keeps_one_copy(open_window, qtbot, caller: Path) -> None:
    w = open_window(WEATHER)
    load(qtbot, w, caller)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        ask(qtbot, w)
        w.tool_approval.always.click()
    roles = [r.role for r in w.transcript.rows()]
    assert roles == ["user", "tool", "tool", "assistant"]
    first_id = w.transcript.row(1).figures["id"]
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.edits.regenerate(3)  # the answer's calls go with it and are made again
    assert [r.role for r in w.transcript.rows()] == roles
    assert w.transcript.row(1).content == "Sunny in Oslo, 21 °C." and w.transcript.row(1).figures["id"] != first_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(w.controller.conversation_id)
    assert [r.role for r in w.transcript.rows()] == roles  # one copy in the history file
    assert w.transcript.row(1).figures["id"] != first_id


def test_a_round_trip_ends_with_the_models_answer(open_window, qtbot, tmp_path: Path) -> None:
    """A model that answers once the result is in: the loop ends by itself, within the round limit."""
    w = open_window(WEATHER)
    load(qtbot, w, write_round_tripper(tmp_path / "round.gguf", ("forecast", "__", "weather")))
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as done:
        ask(qtbot, w)
        w.tool_approval.allow_once.click()
    assert done.args[0].reason == "stop" and done.args[0].text == "It is sunny in Oslo."
    assert [r.role for r in w.transcript.rows()] == ["user", "tool", "assistant"]
    assert w.transcript.row(1).content == "Sunny in Oslo, 21 °C." and not w.notice.isVisible()
    assert w.sidebar.text("tools").startswith("1 tool round · model ")
    assert [m.role for m in w.controller.messages()] == ["user", "assistant", "tool", "assistant"]


def test_with_no_tool_server_the_button_says_tools_and_how_to_add_one(qtbot) -> None:
    from prefill.ui.chat.tools.chat_tools import ChatToolsButton

    button = ChatToolsButton()
    qtbot.addWidget(button)
    assert button.text() == "Tools" and "add an MCP server" in button.toolTip()  # it said "Tools: 0"
