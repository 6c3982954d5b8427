""""Always allow" stays with the tool it was said to, and only the tools offered run: against real
SDK servers (tagged_server.py). Two servers whose names are cut to the same 24 characters both
offer `delete_all` (each leaves a file named after its tag, so the test sees which one ran); an
approval given to one never runs the other, before or after the first stops, through the
terminal's tool loop; and the window hands its loop the same keyed runner."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from prefill.commands.chat_tools import TerminalTools
from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest, Tool
from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config import StdioServer
from prefill.mcp_tools.state import ServerStatus
from prefill.session.tool_loop import Decision, LoopFinished, run_tool_loop

from .conftest import HERE

READ_ONLY = "filesystem-projects-read-only"
READ_WRITE = "filesystem-projects-read-write"


def tagged(name: str, tag: str) -> StdioServer:
    return StdioServer(name, sys.executable, (str(HERE / "tagged_server.py"), tag))


def calling(call: ToolCall) -> object:
    """A model whose first round makes `call` and whose second answers "Done."."""
    ends = [Finished("tool_calls", "", tool_calls=(call,)), Finished("stop", "Done.")]

    def stream(request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        yield PrefillDone(10, 0, 10, 1.0)
        yield ends.pop(0)
    return stream


def turn(tools: TerminalTools, name: str, folder: Path) -> LoopFinished:
    call = ToolCall("c1", name, f'{{"folder": "{folder}"}}')
    request = ChatRequest((Message("user", "Tidy up."),))
    *_, end = tools.loop(calling(call), request, None)  # type: ignore[arg-type]
    assert isinstance(end, LoopFinished)
    return end


def delete_all_name(client: McpClient, server: str) -> str:
    return next(t.model_name for t in client.tools() if t.server == server and t.name == "delete_all")


def test_always_allow_never_reaches_the_other_server_of_a_colliding_name(client: McpClient, tmp_path: Path) -> None:
    assert client.start(tagged(READ_ONLY, "ro")).status is ServerStatus.READY
    assert client.start(tagged(READ_WRITE, "rw")).status is ServerStatus.READY
    ro_name, rw_name = delete_all_name(client, READ_ONLY), delete_all_name(client, READ_WRITE)
    assert ro_name == "filesystem-projects-read__delete_all" and rw_name == ro_name + "_2"
    answers = ["a"]  # always allow the read-only server's delete_all; then every other question is denied
    asked: list[str] = []

    def read_line() -> str:
        asked.append("?")
        return answers.pop(0) if answers else "n"

    tools = TerminalTools(client, out=io.StringIO(), read_line=read_line)
    turn(tools, ro_name, tmp_path)
    assert (tmp_path / "ro").exists() and len(asked) == 1

    end = turn(tools, rw_name, tmp_path)  # the other server's tool: asked, denied
    assert len(asked) == 2 and end.calls[0].denied and not (tmp_path / "rw").exists()

    assert client.stop(READ_ONLY).status is ServerStatus.STOPPED  # its names are not handed on
    end = turn(tools, delete_all_name(client, READ_WRITE), tmp_path)
    assert len(asked) == 3 and end.calls[0].denied and not (tmp_path / "rw").exists()
    end = turn(tools, ro_name, tmp_path)  # the stopped server's name: not offered, not run, not asked
    assert len(asked) == 3 and end.calls[0].not_run and not (tmp_path / "rw").exists()

    (tmp_path / "ro").unlink()
    assert client.start(tagged(READ_ONLY, "ro")).status is ServerStatus.READY  # back, with its name and approval
    assert delete_all_name(client, READ_ONLY) == ro_name
    turn(tools, ro_name, tmp_path)
    assert (tmp_path / "ro").exists() and len(asked) == 3 and not (tmp_path / "rw").exists()


def test_an_edited_entry_is_another_server_for_its_approvals(client: McpClient, tmp_path: Path) -> None:
    assert client.start(tagged("files", "first")).status is ServerStatus.READY
    answers = ["a"]
    asked: list[str] = []

    def read_line() -> str:
        asked.append("?")
        return answers.pop(0) if answers else "n"

    tools = TerminalTools(client, out=io.StringIO(), read_line=read_line)
    turn(tools, "files__delete_all", tmp_path)
    assert (tmp_path / "first").exists()
    assert client.start(tagged("files", "second")).status is ServerStatus.READY  # mcp.json's entry edited
    end = turn(tools, "files__delete_all", tmp_path)
    assert len(asked) == 2 and end.calls[0].denied and not (tmp_path / "second").exists()


def test_a_tool_the_request_did_not_offer_is_refused_without_running(client: McpClient, tmp_path: Path) -> None:
    assert client.start(tagged("tools", "tools")).status is ServerStatus.READY
    add = next(t for t in client.tools() if t.name == "add")
    request = ChatRequest((Message("user", "Add."),), tools=(Tool(add.model_name, add.description, add.input_schema),))
    call = ToolCall("c1", "tools__delete_all", f'{{"folder": "{tmp_path}"}}')
    asked: list[ToolCall] = []

    def allow(c: ToolCall) -> Decision:
        asked.append(c)
        return Decision.ALLOW_ONCE

    *_, end = run_tool_loop(calling(call), request, client.run_call, allow)  # type: ignore[arg-type]
    assert isinstance(end, LoopFinished)
    assert not (tmp_path / "tools").exists() and asked == []
    done = end.calls[0]
    assert done.not_run and done.is_error and "'tools__delete_all' is not one of the tools offered" in done.text


def test_the_window_runs_its_tools_by_key_too(qtbot: object, tmp_path: Path) -> None:
    from prefill.session.tool_loop import KeyedRunner
    from prefill.ui.workers.mcp_servers import McpServers

    servers = McpServers(tmp_path / "mcp.json")
    try:
        assert isinstance(servers.run_tool, KeyedRunner)  # what the EngineWorker's loop is handed
        client = servers.client()
        assert client.start(tagged(READ_ONLY, "ro")).status is ServerStatus.READY
        key = servers.run_tool.tool_key("filesystem-projects-read__delete_all")
        assert key is not None and key.server == tagged(READ_ONLY, "ro") and key.tool == "delete_all"
    finally:
        servers.close()
