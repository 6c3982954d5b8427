"""Servers that fail: a crash mid-call, a server that stops answering, a command that does not
exist or exits at start, one that never answers the handshake, one that writes garbage; and
close() leaves no process behind."""

from __future__ import annotations

import sys
import time

from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config import StdioServer
from prefill.mcp_tools.connection import PROBE_TIMEOUT_S
from prefill.mcp_tools.state import ServerStatus

from .conftest import START_S, children, raw_entry, stdio_entry


def test_a_server_that_crashes_mid_call_is_worded_and_failed(client: McpClient) -> None:
    assert client.start(stdio_entry("crashy")).status is ServerStatus.READY
    result = client.call("crashy", "crash", {}, timeout_s=20)
    assert result.is_error and result.elapsed_s < 10
    assert "stopped: its process ended" in result.text
    assert "“crashing on purpose”" in result.text  # its last words on stderr
    state = client.state("crashy")
    assert state is not None and state.status is ServerStatus.FAILED
    assert "its process ended" in state.reason and state.tools == ()
    assert client.tools() == []
    again = client.call("crashy", "add", {"a": 1, "b": 2})
    assert again.is_error and "'crashy' is not running" in again.text
    assert client.start(stdio_entry("crashy")).status is ServerStatus.READY  # and it can be started again


def test_a_server_that_stops_answering_is_failed_after_its_call_times_out(client: McpClient) -> None:
    assert client.start(stdio_entry("frozen")).status is ServerStatus.READY
    result = client.call("frozen", "freeze", {"seconds": 30}, timeout_s=1.0)
    assert 1.0 + PROBE_TIMEOUT_S <= result.elapsed_s < 1.0 + PROBE_TIMEOUT_S + 3
    assert "did not answer within 1 s" in result.text and "no longer answers at all" in result.text
    state = client.state("frozen")
    assert state is not None and state.status is ServerStatus.FAILED and "stopped answering" in state.reason


def test_a_command_that_does_not_exist(client: McpClient) -> None:
    state = client.start(StdioServer("ghost", "prefill-no-such-command-xyz", ("--stdio",)))
    assert state.status is ServerStatus.FAILED
    assert state.reason == ("MCP server 'ghost' did not start: the command 'prefill-no-such-command-xyz' was not "
                            "found; install it, or write its full path in mcp.json.")
    missing_cwd = client.start(StdioServer("nowhere", sys.executable, ("-V",), cwd="/no/such/folder"))
    assert 'the folder in "cwd" (/no/such/folder) does not exist' in missing_cwd.reason


def test_a_command_that_exits_at_start_is_quoted(client: McpClient) -> None:
    code = "import sys; print('GITHUB_TOKEN is not set', file=sys.stderr); sys.exit(2)"
    state = client.start(StdioServer("quits", sys.executable, ("-c", code)))
    assert state.status is ServerStatus.FAILED
    assert "before it finished starting" in state.reason and "“GITHUB_TOKEN is not set”" in state.reason


def test_a_server_that_never_answers_reaches_its_start_timeout(client: McpClient) -> None:
    began = time.monotonic()
    state = client.start(StdioServer("sleeper", sys.executable, ("-c", "import time; time.sleep(60)")), timeout_s=1.5)
    assert 1.5 <= time.monotonic() - began < 3.0
    assert state.status is ServerStatus.FAILED
    assert "did not finish starting within 1.5 s" in state.reason


def test_garbage_from_a_server_is_worded(client: McpClient) -> None:
    chatter = client.start(raw_entry("chatter", "chatter"), timeout_s=1.5)
    assert chatter.status is ServerStatus.FAILED
    assert "3 lines to its output that are not MCP messages (the last: “hello, I am not MCP (2)”)" in chatter.reason
    raw = client.start(raw_entry("raw", "bad-result"))
    assert raw.status is ServerStatus.READY and [t.name for t in raw.tools] == ["bad"]
    assert raw.notes == ("Left out: a second tool named 'bad'.",
                         "Left out: a tool whose name is empty, too long or unprintable ('').",
                         "Left out: 'vast', whose argument schema is larger than 64 KiB.")
    result = client.call("raw", "bad", {})
    assert result.is_error and "is not an MCP tool result (content: Input should be a valid list)" in result.text


def test_close_leaves_no_child_process() -> None:
    before = children()
    client = McpClient(start_timeout_s=START_S)
    assert client.start(stdio_entry("a")).status is ServerStatus.READY
    assert client.start(stdio_entry("b")).status is ServerStatus.READY
    client.start(StdioServer("sleeper", sys.executable, ("-c", "import time; time.sleep(60)")), timeout_s=0.5)
    client.call("a", "slow", {"seconds": 30}, timeout_s=0.2)  # abandoned, still running on the server
    assert len(children() - before) >= 2  # the sleeper may be gone already
    began = time.monotonic()
    client.close()
    assert time.monotonic() - began < 6.0
    assert children() - before == set()
    assert "shut down" in client.call("a", "add", {"a": 1, "b": 2}).text
    assert client.start(stdio_entry("c")).status is ServerStatus.FAILED
    client.close()  # twice is harmless
