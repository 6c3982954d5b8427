"""The MCP client against the SDK's stdio server: tools listed, calls answered, a huge answer cut, a slow
call abandoned at its timeout or stopped by its event, and the server still usable after each."""

from __future__ import annotations

import json
import threading
import time

from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config import StdioServer
from prefill.mcp_tools.state import ServerStatus

from .conftest import stdio_entry


def test_the_tools_are_listed_with_model_names_and_schemas(tools_hub: McpClient) -> None:
    state = tools_hub.state("tools")
    assert state is not None and state.status is ServerStatus.READY and state.server_info == "test-stdio"
    tools = {t.name: t for t in tools_hub.tools()}
    assert set(tools) == {"add", "echo", "huge", "slow", "freeze", "fail", "crash"}
    add = tools["add"]
    assert add.model_name == "tools__add" and add.description == "Add two integers."
    assert json.loads(add.input_schema)["required"] == ["a", "b"]
    assert tools_hub.find_tool("tools__add") == add and tools_hub.find_tool("add") is None
    assert state.tools == tuple(tools_hub.tools())


def test_add_and_echo_answer(tools_hub: McpClient) -> None:
    result = tools_hub.call("tools", "add", {"a": 2, "b": 40})
    assert (result.text, result.is_error, result.cut_bytes) == ("42", False, 0)
    assert 0 < result.elapsed_s < 10
    text = "naïve 検索 🦊\nline two"
    assert tools_hub.call_model_tool("tools__echo", {"text": text}).text == text


def test_a_huge_answer_is_cut_with_a_note(tools_hub: McpClient) -> None:
    result = tools_hub.call("tools", "huge", {"chars": 5_000_000}, timeout_s=30)  # its message is read whole
    assert not result.is_error
    assert result.text.startswith("0123456789" * 100)
    assert len(result.text.encode()) < tools_hub.result_budget_bytes + 1024
    assert result.cut_bytes == 5_000_000 - tools_hub.result_budget_bytes
    assert "Prefill cut this result: the tool answered 4.8 MiB of text" in result.text


def test_a_slow_call_is_abandoned_at_its_timeout_and_the_server_stays(tools_hub: McpClient) -> None:
    result = tools_hub.call("tools", "slow", {"seconds": 30}, timeout_s=1.0)
    assert result.is_error and not result.stopped
    assert 1.0 <= result.elapsed_s < 4.0
    assert "did not answer within 1 s" in result.text and "still answers, so it stays on" in result.text
    assert tools_hub.state("tools").status is ServerStatus.READY  # type: ignore[union-attr]
    assert tools_hub.call("tools", "add", {"a": 1, "b": 1}).text == "2"


def test_a_call_is_stopped_by_its_event_promptly(tools_hub: McpClient) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    began = time.monotonic()
    result = tools_hub.call("tools", "slow", {"seconds": 30}, timeout_s=60, cancel=cancel)
    assert time.monotonic() - began < 1.3
    assert result.is_error and result.stopped and "was stopped before it answered" in result.text
    assert tools_hub.call("tools", "add", {"a": 1, "b": 2}).text == "3"
    already = threading.Event()
    already.set()
    assert tools_hub.call("tools", "add", {"a": 1, "b": 2}, cancel=already).stopped


def test_a_tool_error_is_an_error_result(tools_hub: McpClient) -> None:
    result = tools_hub.call("tools", "fail", {})
    assert result.is_error and "fail" in result.text


def test_wrong_calls_are_worded(tools_hub: McpClient) -> None:
    assert "has no tool 'nope'" in tools_hub.call("tools", "nope", {}).text
    assert "'ghost' is not running" in tools_hub.call("ghost", "add", {}).text
    bad = tools_hub.call("tools", "add", {"a": object()})
    assert bad.is_error and "cannot be written as JSON" in bad.text
    assert "not an object" in tools_hub.call("tools", "add", [1, 2]).text  # type: ignore[arg-type]
    assert "There is no tool named 'tools__nope'" in tools_hub.call_model_tool("tools__nope", {}).text
    refused = tools_hub.call("tools", "add", {"a": "two", "b": 1})
    assert refused.is_error and refused.text


def test_stopping_a_server_ends_its_tools(client: McpClient) -> None:
    assert client.start(stdio_entry("one")).status is ServerStatus.READY
    assert client.stop("one").status is ServerStatus.STOPPED
    assert client.tools() == []
    result = client.call("one", "add", {"a": 1, "b": 2})
    assert result.is_error and "'one' is stopped" in result.text
    off = client.start(StdioServer("off", "prefill-no-such-command", disabled=True))
    assert off.status is ServerStatus.STOPPED and "turned off in mcp.json" in off.reason
