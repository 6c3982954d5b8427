"""Tool calls in a model's answer, read as the text streams, and the generic form for models
without their own.

`ToolCallParser` is fed answer text (thinking already split off) and gives back, in order, the
plain text to stream on, each completed call as a `ToolCall`, and a `MalformedCall` for a call
that does not parse (the caller keeps its text as answer text and reports it). Text that could be
the start of a call's marker is held back until it is known, as `reasoning.ReasoningParser` does,
so a marker never reaches the text; whitespace between a call and what surrounds it is dropped.

What a family writes is described by a `CallSyntax` (its markers, where a call ends, how its text
reads); the families and their detection are in `tool_formats.py`. A model whose template does
not render tools is told about them by `generic_tool_system_prompt` and calls them in the generic
form, `<tool_call>{"name": …, "arguments": {…}}</tool_call>`; `render_call_as_text` and
`render_result_as_text` write earlier rounds into plain turns for such a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from prefill.engine.message import Message, ToolCall, new_call_id
from prefill.engine.request import Tool

GENERIC_OPEN, GENERIC_CLOSE = "<tool_call>", "</tool_call>"
@dataclass(frozen=True)
class MalformedCall:
    """A call the model began but wrote wrongly: its text as written (markers included) and why
    it does not parse."""

    text: str
    reason: str


Item = str | ToolCall | MalformedCall


class RawCall(NamedTuple):
    """A call as a family's reader found it, before it is checked: the name, the arguments (an
    object, JSON text of one, or None for none) and the id the model wrote, if any."""

    name: Any
    arguments: Any = None
    id: str = ""


class Unreadable(ValueError):
    """A call's text does not parse; the message says why."""


Read = list[str | RawCall]


@dataclass(frozen=True)
class CallSyntax:
    """How one family writes its calls, for `ToolCallParser`.

    Attributes:
        opens: the markers that begin a call; the call's text runs from one to where `end` says.
        end: the length of a call's text, given the text from its opener on (or from where
            `leading` said a call begins) and the call's `CallScan`; None while the call is not
            complete.
        read: a call's whole text -> what it holds: calls, or text when it turns out to be none.
            Raises `Unreadable`.
        drops: markers removed wherever they stand (section markers, stray closers).
        leading: for a call written with no marker at a boundary (the answer's start when
            `first`, or right after a call): True if one begins here, False if not, None while
            unknown.
    """

    opens: tuple[str, ...]
    end: Callable[[str, CallScan], int | None]
    read: Callable[[str], Read]
    drops: tuple[str, ...] = ()
    leading: Callable[[str, bool], bool | None] | None = None


class ToolCallParser:
    """Feed answer text; get plain text, `ToolCall`s and `MalformedCall`s, in the order written."""

    def __init__(self, syntax: CallSyntax, new_id: Callable[[], str] = new_call_id, tools: Sequence[Tool] = ()):
        self.syntax = syntax
        self.new_id = new_id
        self.schemas = _parameter_schemas(tools)  # how each function's bare-text arguments read
        self.markers = syntax.opens + syntax.drops
        self.held = ""  # undecided text: a marker's possible start, or a call not yet complete
        self.in_call = False
        self.boundary = True  # at the answer's start or right after a call
        self.first = True  # nothing but whitespace has come yet
        self.after_call = False  # whitespace from here on is dropped
        self.space = ""  # trailing whitespace of the text, held until what follows is known
        self.scan = CallScan()  # the open call's

    def feed(self, text: str) -> list[Item]:
        out: list[Item] = []
        self._run(self.held + text, out, final=False)
        return out

    def finish(self) -> list[Item]:
        """The end of the answer: a call still open is read as it stands, held text is text."""
        out: list[Item] = []
        buf, self.held = self.held, ""
        self._run(buf, out, final=True)
        if not self.after_call and self.space:
            _push(out, self.space)
        self.space = ""
        return out

    # --- internals -----------------------------------------------------------------
    def _run(self, buf: str, out: list[Item], final: bool) -> None:
        syntax = self.syntax
        while buf:
            if not self.in_call:
                if self.boundary and syntax.leading is not None:
                    lead = syntax.leading(buf, self.first)
                    if lead is None and not final:
                        self.held = buf
                        return
                    self.boundary = False
                    self.in_call = bool(lead)
                if not self.in_call:
                    hit = first_marker(buf, self.markers)
                    if hit is None:
                        keep = 0 if final else _held_prefix(buf, self.markers)
                        self._text(buf[: len(buf) - keep], out)
                        self.held = buf[len(buf) - keep :]
                        return
                    i, marker = hit
                    self._text(buf[:i], out)
                    buf = buf[i:]
                    if marker in syntax.drops and marker not in syntax.opens:
                        buf = buf[len(marker) :]
                        continue
                    self.in_call = True
                self.scan = CallScan()
            n = syntax.end(buf, self.scan)
            if n is None:
                if final:
                    self._call(buf, out, cut_off=True)
                    buf = ""
                    break
                self.held = buf
                return
            n = max(n, 1)  # a call is never empty: the scan always moves on
            self._call(buf[:n], out, cut_off=False)
            buf = buf[n:]
        self.held = ""

    def _call(self, text: str, out: list[Item], cut_off: bool) -> None:
        self.in_call, self.boundary, self.first = False, True, False
        items: list[Item]
        try:
            found = self.syntax.read(text)
            items = [x if isinstance(x, str) else self._checked(x) for x in found]
        except Unreadable as e:
            reason = f"{e} (the answer ended inside it)" if cut_off else str(e)
            items = [MalformedCall(text, reason)]
        for x in items:
            if isinstance(x, str):
                self._text(x, out)
            else:
                self.space, self.after_call = "", True
                out.append(x)

    def _checked(self, raw: RawCall) -> ToolCall:
        name, args = raw.name, raw.arguments
        if not isinstance(name, str) or not name.strip():
            raise Unreadable("the call names no function")
        if args is None:
            args = {}
        elif isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise Unreadable(f"the arguments of {name.strip()} are not JSON") from None
        if not isinstance(args, dict):
            raise Unreadable(f"the arguments of {name.strip()} are not a JSON object")
        if any(isinstance(v, BareValue) for v in args.values()):
            props = self.schemas.get(name.strip(), {})
            args = {k: typed_value(v, props.get(k)) if isinstance(v, BareValue) else v for k, v in args.items()}
        return ToolCall(str(raw.id) if raw.id else self.new_id(), name.strip(), compact_json(args))

    def _text(self, text: str, out: list[Item]) -> None:
        if not text:
            return
        if self.after_call:
            text = text.lstrip()
            if not text:
                return
            self.after_call = False
        if text.strip():
            self.first = False
        whole = self.space + text
        body = whole.rstrip()
        self.space = whole[len(body) :]
        if body:
            _push(out, body)


def _push(out: list[Item], item: Item) -> None:
    if isinstance(item, str) and out and isinstance(out[-1], str):
        out[-1] += item
    else:
        out.append(item)


def first_marker(buf: str, markers: Sequence[str]) -> tuple[int, str] | None:
    """The first marker in `buf` (the longer where two start at one place)."""
    best: tuple[int, str] | None = None
    for m in markers:
        i = buf.find(m)
        if i >= 0 and (best is None or i < best[0] or (i == best[0] and len(m) > len(best[1]))):
            best = (i, m)
    return best


def _held_prefix(buf: str, markers: Sequence[str]) -> int:
    """The length of the longest end of `buf` that begins some marker."""
    keep = 0
    for m in markers:
        for k in range(min(len(m) - 1, len(buf)), keep, -1):
            if buf.endswith(m[:k]):
                keep = k
                break
    return keep


# --- helpers the families' readers share --------------------------------------------------
def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_STRUCTURE = re.compile(r'[{}\[\]"]')
_IN_STRING = re.compile(r'["\\]')


def skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


class CallScan:
    """What is known of an open call's text: how far a closer was looked for, and how far the JSON
    objects and arrays in it were read.

    A call's text only grows while it is open, so each look goes on from where the last one
    stopped: a long call costs its length once, not once per token. Brackets are counted outside
    strings; whether the value is valid JSON is the reader's to say.
    """

    def __init__(self) -> None:
        self.searched = 0  # no closer starts before here
        self._at: dict[int, tuple[int, int, bool]] = {}  # where a value opens -> (pos, depth, in a string)

    def end(self, text: str, i: int) -> int | None:
        """Just past the object or array that opens at `text[i]`; None while it is still open."""
        pos, depth, in_string = self._at.get(i, (i, 0, False))
        if depth <= 0 and pos > i:  # closed on an earlier scan
            return pos
        n = len(text)
        while True:
            m = (_IN_STRING if in_string else _STRUCTURE).search(text, pos)
            if m is None:
                pos = n
                break
            c = m.group()
            if in_string:
                if c == "\\":
                    if m.end() >= n:  # the escaped character has not come yet
                        pos = m.start()
                        break
                    pos = m.end() + 1
                else:
                    in_string, pos = False, m.end()
                continue
            pos = m.end()
            if c == '"':
                in_string = True
                continue
            depth += 1 if c in "{[" else -1
            if depth <= 0:
                self._at[i] = (pos, depth, False)
                return pos
        self._at[i] = (pos, depth, in_string)
        return None

    def value_end(self, text: str, i: int) -> int | None:
        """Like `end`, after any whitespace at `i`; where no object or array opens there (something
        else was written), the call ends at once, at `i`, for its reader to refuse."""
        j = skip_space(text, i)
        if j == len(text):
            return None
        return self.end(text, j) if text[j] in "{[" else i


def closer_end(*closers: str) -> Callable[[str, CallScan], int | None]:
    """`CallSyntax.end` for calls that end with a marker: just past the first closer."""

    longest = max(len(c) for c in closers)

    def end(text: str, scan: CallScan) -> int | None:
        start = max(0, scan.searched - longest + 1)
        hits = [(i, c) for c in closers if (i := text.find(c, start)) >= 0]
        scan.searched = len(text)
        if not hits:
            return None
        i, c = min(hits, key=lambda h: (h[0], -len(h[1])))
        return i + len(c)

    return end


_DECODER = json.JSONDecoder()


def load_json(text: str, what: str = "the call") -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise Unreadable(f"{what} is not valid JSON") from None


def load_json_values(text: str) -> Any:
    """One JSON value, or several written one after another (as a list): some models put two
    calls in one block."""
    values, i = [], skip_space(text, 0)
    try:
        while i < len(text):
            value, i = _DECODER.raw_decode(text, i)
            values.append(value)
            i = skip_space(text, i)
    except ValueError:
        raise Unreadable("the call is not valid JSON") from None
    if not values:
        raise Unreadable("the call is empty")
    return values[0] if len(values) == 1 else values


class BareValue(str):
    """An argument written as bare text between tags (XML-style formats: Qwen3-Coder, GLM): what
    it means depends on the parameter's type, so the parser reads it once it knows the function."""


def value_or_text(text: str) -> Any:
    """An argument written as bare text: its JSON value where it parses as one, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def typed_value(text: str, schema: Any) -> Any:
    """A bare argument read as its parameter's schema says, as llama.cpp's XML readers do: text for
    a string parameter ("007" stays "007", "true" stays "true"), otherwise its JSON value where it
    parses as one (a number, a boolean, an object…), else the text."""
    kinds = schema.get("type") if isinstance(schema, dict) else None
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if "string" in kinds and not {"null", "number", "integer", "boolean", "object", "array"} & set(kinds):
        return str(text)
    return value_or_text(str(text))


def _parameter_schemas(tools: Sequence[Tool]) -> dict[str, dict[str, Any]]:
    """Each offered function's parameters' schemas by name (what a bare value is read against)."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        try:
            props = json.loads(tool.parameters).get("properties")
        except (ValueError, AttributeError):
            continue
        if isinstance(props, dict):
            out[tool.name] = props
    return out


def json_calls(value: Any, name: str = "name", args: tuple[str, ...] = ("arguments", "parameters"),
               id_key: str = "") -> list[str | RawCall]:
    """Calls written as a JSON object, or an array of them: {"name": …, "arguments": {…}}."""
    objects = value if isinstance(value, list) else [value]
    if not objects:
        raise Unreadable("the call list is empty")
    calls: list[str | RawCall] = []
    for obj in objects:
        if not isinstance(obj, dict):
            raise Unreadable("a call is not a JSON object")
        arguments = next((obj[k] for k in args if k in obj), None)
        carried = obj.get(id_key) if id_key else None
        calls.append(RawCall(obj.get(name), arguments, carried if isinstance(carried, str) else ""))
    return calls


# --- the generic form, for models whose template does not render tools --------------------
def generic_tool_system_prompt(tools: Sequence[Tool]) -> str:
    """The system prompt that tells a model without its own tool format which functions it may
    call, as JSON schemas, and how to call them in the generic form."""
    schemas = "\n".join(json.dumps(t.as_openai()["function"], ensure_ascii=False) for t in tools)
    example = render_call_as_text(ToolCall("", "function_name", '{"argument": "value"}'))
    return (
        "You can call functions to help you answer. Each function you may call is described "
        "here by a JSON schema of its name, what it does and its parameters:\n"
        f"<tools>\n{schemas}\n</tools>\n\n"
        "To call a function, write the call in exactly this form: the function's name, and its "
        "arguments as one JSON object that fits the function's parameters:\n"
        f"{example}\n"
        "To call several functions, write one such block for each. After your calls, stop and "
        "wait: each result comes back to you in a <tool_response> block, and you then answer "
        "with it. Call a function only when you need what it returns; otherwise answer directly, "
        "without any <tool_call> block."
    )


def render_call_as_text(call: ToolCall) -> str:
    """An earlier call written in the generic form, for a plain assistant turn."""
    body = json.dumps({"name": call.name, "arguments": call.arguments_object()}, ensure_ascii=False)
    return f"{GENERIC_OPEN}\n{body}\n{GENERIC_CLOSE}"


def render_result_as_text(msg: Message) -> str:
    """A tool's result (a `tool` message) written as text, naming the function it answers."""
    head = f"<tool_response name={json.dumps(msg.name, ensure_ascii=False)}>" if msg.name else "<tool_response>"
    return f"{head}\n{msg.content}\n</tool_response>"
