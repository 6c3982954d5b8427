"""The tool loop approves and runs a call as the tool it stands for, and runs only what was offered.

On a scripted stream and runners faked here: "always allow" is kept by the runner's key for a
name, looked up once per call and run as that key, so it never reaches another tool that later
carries the same name; a call to a tool the request did not offer is answered, never run."""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest, Tool
from prefill.session.tool_loop import (
    Decision,
    KeyedRunner,
    LoopFinished,
    ToolApprovals,
    not_offered_text,
    run_tool_loop,
)

SCHEMA = json.dumps({"type": "object"})
ERASE = Tool("files__erase", "Erase everything.", SCHEMA)
LOOK = Tool("files__look", "Look around.", SCHEMA)
ASK = ChatRequest((Message("user", "Tidy up."),), tools=(ERASE,))


@dataclass(frozen=True)
class Result:
    text: str
    is_error: bool = False


def calling(*calls: ToolCall) -> object:
    """A stream whose first round calls `calls` and whose second answers "Done."."""
    ends = [Finished("tool_calls", "", tool_calls=calls), Finished("stop", "Done.")]

    def stream(request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        yield PrefillDone(10, 0, 10, 1.0)
        yield ends.pop(0)
    return stream


def end_of(events: list[object]) -> LoopFinished:
    assert isinstance(events[-1], LoopFinished)
    return events[-1]


class Servers:
    """A keyed runner: model-facing names point at (server, tool) keys, and the test moves them."""

    def __init__(self, names: dict[str, tuple[str, str]]):
        self.names = dict(names)
        self.ran: list[tuple[str, str]] = []

    def __call__(self, call: ToolCall, cancel: threading.Event | None) -> Result:
        raise AssertionError("a keyed runner is run by key")

    def tool_key(self, name: str) -> Hashable | None:
        return self.names.get(name)

    def run_keyed(self, key: Hashable, call: ToolCall, cancel: threading.Event | None) -> Result:
        assert isinstance(key, tuple)
        self.ran.append(key)
        return Result(f"{key[0]} ran {key[1]}")


def test_always_allow_stays_with_the_tool_when_its_name_moves_to_another() -> None:
    servers = Servers({"files__erase": ("read-only", "erase")})
    assert isinstance(servers, KeyedRunner)
    approvals = ToolApprovals()
    asked: list[str] = []

    def always(call: ToolCall) -> Decision:
        asked.append(call.name)
        return Decision.ALWAYS_ALLOW

    erase = ToolCall("c1", "files__erase", "{}")
    end_of(list(run_tool_loop(calling(erase), ASK, servers, always, approvals=approvals)))
    assert asked == ["files__erase"] and servers.ran == [("read-only", "erase")]
    assert approvals.keys() == {("read-only", "erase")}

    servers.names = {"files__erase": ("read-write", "erase")}  # the first server stopped: the name moved

    def deny(call: ToolCall) -> Decision:
        asked.append(call.name)
        return Decision.DENY

    end = end_of(list(run_tool_loop(calling(erase), ASK, servers, deny, approvals=approvals)))
    assert asked == ["files__erase", "files__erase"]  # asked again: another tool
    assert servers.ran == [("read-only", "erase")] and end.calls[0].denied

    servers.names = {"files__erase": ("read-only", "erase")}  # and back: the approval holds for its tool
    end = end_of(list(run_tool_loop(calling(erase), ASK, servers, deny, approvals=approvals)))
    assert len(asked) == 2 and servers.ran[-1] == ("read-only", "erase") and end.calls[0].text == "read-only ran erase"


def test_a_call_is_run_as_the_key_it_was_approved_for() -> None:
    servers = Servers({"files__erase": ("read-only", "erase")})

    def moved_while_asked(call: ToolCall) -> Decision:
        servers.names["files__erase"] = ("read-write", "erase")
        return Decision.ALLOW_ONCE

    end_of(list(run_tool_loop(calling(ToolCall("c1", "files__erase", "{}")), ASK, servers, moved_while_asked)))
    assert servers.ran == [("read-only", "erase")]


def test_a_name_with_no_tool_behind_it_now_is_not_run() -> None:
    servers = Servers({})
    end = end_of(list(run_tool_loop(calling(ToolCall("c1", "files__erase", "{}")), ASK, servers,
                                    lambda call: Decision.ALLOW_ONCE)))
    assert servers.ran == [] and end.calls[0].not_run and "no longer running" in end.calls[0].text


def test_a_tool_the_request_did_not_offer_is_refused_as_its_result() -> None:
    ran: list[str] = []
    asked: list[str] = []

    def run(call: ToolCall, cancel: threading.Event | None) -> Result:
        ran.append(call.name)
        return Result("ran")

    def allow(call: ToolCall) -> Decision:
        asked.append(call.name)
        return Decision.ALLOW_ONCE

    look, erase = ToolCall("c1", "files__look", "{}"), ToolCall("c2", "files__erase", "{}")
    end = end_of(list(run_tool_loop(calling(look, erase), ASK, run, allow)))
    assert ran == ["files__erase"] and asked == ["files__erase"]  # only the tool offered
    refused = end.calls[0]
    assert refused.not_run and refused.is_error and refused.text == not_offered_text(look)
    assert "'files__look' is not one of the tools offered" in refused.text
    assert [m.role for m in end.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert end.messages[2].tool_call_id == "c1"  # answered, so the conversation stays well-formed
