"""Tools across the wire to an OpenAI-compatible server, both ways.

Out: the turns and the tools a request offers, in OpenAI's shape, written by the one OpenAI codec
(`wire/openai_chat.py`, which Prefill's own server decodes with): `tool_fields`, `openai_message`.

Back: `CallAssembler` puts the `delta.tool_calls` fragments of a stream together by `index`.
Servers cut a call differently: OpenAI and vLLM send the id and name first, then the arguments
in pieces; Ollama sends each call whole in one chunk; llama.cpp's server may send the id after
the name; some servers repeat the id, the name or the type in every fragment, number every
call 0 (a new id then begins a new call), or send no index at all. A call is
given out once it is complete: when the stream has moved on to another call and this one has
its id, its name and arguments that close as a JSON object (so calls interleaved by index wait
for their ends), or when the answer ends (a missing id is then made up). A call without a name,
or whose arguments are not a JSON object, is reported as malformed, as the local engine reports
a call the model wrote wrongly.

What a server sends is bounded here: a call's arguments (`MAX_ARGUMENTS_BYTES`), all the calls'
arguments together, a call's name and id, and the number of calls in one answer; past a bound
`CallFault` stops the reading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prefill.engine.message import ToolCall, new_call_id
from prefill.engine.request import ChatRequest
from prefill.remote.errors import size_text
from prefill.wire.openai_chat import MAX_CALLS as MAX_CALLS
from prefill.wire.openai_chat import ToolsAsked, encode_message, encode_tool_fields

MAX_ARGUMENTS_BYTES = 2**20  # one call's arguments, its pieces joined (UTF-8 bytes)
MAX_ALL_ARGUMENTS_BYTES = 8 * 2**20  # every call's of one answer (as much as a whole JSON body)
MAX_NAME_CHARS = 1024  # a call's name, and its id
# MAX_CALLS, the calls in one answer, is the codec's: as many as Prefill's server takes back in one turn.


# --- out ------------------------------------------------------------------------------------
def tool_fields(request: ChatRequest) -> dict[str, Any]:
    """The request's tools as the codec sends them: only those it offers ("none" offers none, so
    neither tools nor a choice is sent and a server without tools still answers), and its
    `response_format`."""
    return encode_tool_fields(ToolsAsked(request.offered_tools, request.tool_choice, request.parallel_tool_calls,
                                         request.response_format))


openai_message = encode_message  # a turn as it is sent (the codec's), by the name callers know


# --- back -----------------------------------------------------------------------------------
class CallFault(ValueError):
    """A call the reading refuses: past a bound (`limit`, in bytes or characters; 0 for none) or
    added to after it was complete. The message ends a sentence that begins "the server sent"."""

    def __init__(self, message: str, limit: int = 0):
        super().__init__(message)
        self.limit = limit


_SPECIAL = re.compile(r'[{}\[\]"\\]')


class _ObjectEnd:
    """Whether JSON text streamed in pieces has closed its outermost object or array: brackets
    counted outside strings, each piece scanned once, so a call cut into a million pieces costs
    its length, not its length squared. Whether the text is valid JSON is json.loads's to say."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the last piece ended inside a string, on a backslash
        self.closed = False
        self.trailing = False  # something other than whitespace after it closed

    def feed(self, piece: str) -> None:
        if self.closed:
            self.trailing = self.trailing or bool(piece.strip())
            return
        pos = 0
        if self.escaped and piece:
            pos, self.escaped = 1, False
        while (m := _SPECIAL.search(piece, pos)) is not None:
            ch, pos = m.group(), m.end()
            if self.in_string:
                if ch == "\\":
                    if pos == len(piece):
                        self.escaped = True
                    pos += 1
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth <= 0:
                    self.closed = True
                    self.feed(piece[pos:])
                    return


Key = tuple[int, int]  # a call's index, and which call at that index (servers that number every call 0)


@dataclass
class _Partial:
    """One call as its fragments arrive."""

    key: Key
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    size: int = 0  # bytes of arguments so far
    end: _ObjectEnd = field(default_factory=_ObjectEnd)

    @property
    def complete(self) -> bool:
        return bool(self.id and self.name and self.end.closed and not self.end.trailing)


class CallAssembler:
    """Feed each chunk's `delta.tool_calls`; get the calls that are complete, in index order.

    Attributes:
        calls: every call given out, in order.
        malformed: why each call that came in pieces could not be given out.
    """

    def __init__(self, new_id: Callable[[], str] = new_call_id):
        self.new_id = new_id
        self.calls: list[ToolCall] = []
        self.malformed: list[str] = []
        self._open: dict[Key, _Partial] = {}
        self._done: set[Key] = set()  # calls given out (or reported malformed)
        self._current: _Partial | None = None  # the call the last fragment wrote to
        self._ids: dict[str, Key] = {}  # each id given, to its call
        self._latest: dict[int, int] = {}  # each index, to the last call begun at it
        self._size = 0  # bytes of arguments, every call's

    def feed(self, fragments: Any) -> list[ToolCall]:
        """One delta's `tool_calls` (a list of fragments; anything else is ignored).

        Raises:
            CallFault: past a bound, or more arguments for a call already complete.
        """
        if not isinstance(fragments, list):
            return []
        out: list[ToolCall] = []
        for frag in fragments:
            if not isinstance(frag, dict):
                continue
            call = self._call_for(frag)
            if call is None:  # a repeat of what a complete call already said
                continue
            if call is not self._current:
                self._current = call
                out += self._give(final=False)
            self._add(call, frag)
        return out

    def finish(self) -> list[ToolCall]:
        """The answer ended: every call still open, in index order."""
        self._current = None
        return self._give(final=True)

    def _call_for(self, frag: dict[str, Any]) -> _Partial | None:
        key = self._key_for(frag)
        if key in self._done:
            fn = frag.get("function")
            args = fn.get("arguments") if isinstance(fn, dict) else None
            if isinstance(args, str) and args.strip():
                raise CallFault(f"more arguments for tool call {key[0]} after it was complete")
            return None
        call = self._open.get(key)
        if call is None:
            if len(self._open) + len(self._done) >= MAX_CALLS:
                raise CallFault(f"more than {MAX_CALLS} tool calls in one answer", MAX_CALLS)
            call = self._open[key] = _Partial(key)
            self._latest[key[0]] = key[1]
        return call

    def _key_for(self, frag: dict[str, Any]) -> Key:
        """The call a fragment belongs to: the one with its id; else by its index, but a new call
        where that index's call has another id; else (no index) `_key_without_index`."""
        index, call_id = frag.get("index"), frag.get("id")
        call_id = call_id if isinstance(call_id, str) else ""
        if call_id in self._ids:
            return self._ids[call_id]
        if not (isinstance(index, int) and not isinstance(index, bool) and index >= 0):
            return self._key_without_index(frag, call_id)
        key = (index, self._latest.get(index, 0))
        known = self._open[key].id if key in self._open else ("?" if key in self._done else "")
        if call_id and known and known != call_id:
            key = (index, key[1] + 1)
        return key

    def _key_without_index(self, frag: dict[str, Any], call_id: str) -> Key:
        """A fragment without an index: the call being written, unless the fragment brings a new
        id or a second name, which begin a new call after every other."""
        fn = frag.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        current = self._current
        if current is not None and not (call_id and current.id) and not (
                isinstance(name, str) and name and current.name and name != current.name):
            return current.key
        return (max((k[0] for k in (*self._open, *self._done)), default=-1) + 1, 0)

    def _add(self, call: _Partial, frag: dict[str, Any]) -> None:
        call_id, fn = frag.get("id"), frag.get("function")
        if isinstance(call_id, str) and call_id and not call.id:  # the first id stands; repeats are ignored
            call.id = _bounded(call_id, "id")
            self._ids.setdefault(call.id, call.key)
        if not isinstance(fn, dict):
            return
        name, args = fn.get("name"), fn.get("arguments")
        if isinstance(name, str) and name and name != call.name:
            # A repeat is ignored, a longer one replaces, a piece is appended (as the openai client does).
            call.name = _bounded(name if name.startswith(call.name) else call.name + name, "name")
        if isinstance(args, (dict, list)):  # a server that sends the arguments as an object
            args = json.dumps(args, ensure_ascii=False)
        if isinstance(args, str) and args:
            size = len(args.encode("utf-8"))
            call.size += size
            self._size += size
            if call.size > MAX_ARGUMENTS_BYTES:
                raise CallFault(f"a tool call ({call.name[:64] or 'unnamed'}) with arguments of more than "
                                f"{size_text(MAX_ARGUMENTS_BYTES)}", MAX_ARGUMENTS_BYTES)
            if self._size > MAX_ALL_ARGUMENTS_BYTES:
                raise CallFault(f"tool calls whose arguments together come to more than "
                                f"{size_text(MAX_ALL_ARGUMENTS_BYTES)}", MAX_ALL_ARGUMENTS_BYTES)
            call.arguments.append(args)
            call.end.feed(args)

    def _give(self, final: bool) -> list[ToolCall]:
        """The calls that can go out now: in index order, each once every call before it has gone;
        at the end, all of them."""
        out: list[ToolCall] = []
        for key in sorted(self._open):
            call = self._open[key]
            if not final and (call is self._current or not (call.complete or _broken(call))):
                break
            del self._open[key]
            self._done.add(key)
            made = self._checked(call)
            if made is not None:
                self.calls.append(made)
                out.append(made)
        return out

    def _checked(self, call: _Partial) -> ToolCall | None:
        name = call.name.strip()
        text = "".join(call.arguments).strip() or "{}"
        if not name:
            self.malformed.append(f"tool call {call.key[0]} names no function")
            return None
        try:
            args = json.loads(text)
        except ValueError:
            self.malformed.append(f"the arguments of {name[:64]} are not JSON: {_clip(text)}")
            return None
        if not isinstance(args, dict):
            self.malformed.append(f"the arguments of {name[:64]} are not a JSON object: {_clip(text)}")
            return None
        return ToolCall(call.id or self.new_id(), name, text)


def _broken(call: _Partial) -> bool:
    """A call whose arguments closed and then went on: no later piece can mend it."""
    return call.end.trailing


def _bounded(text: str, what: str) -> str:
    if len(text) > MAX_NAME_CHARS:
        raise CallFault(f"a tool call whose {what} is longer than {MAX_NAME_CHARS} characters", MAX_NAME_CHARS)
    return text


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n] + "…"
