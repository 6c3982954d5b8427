"""OpenAI's Chat Completions shapes, both ways: the one codec of a message, a call, the tools, the
choice among them and a JSON answer's format.

Out (`encode_*`, `call_fragments`): what `remote/` sends to an OpenAI-compatible server and what
Prefill's own server answers with. A turn's images go as base64 `image_url` parts before its text,
an assistant's calls under `tool_calls` (content null when it wrote no text), a tool's result names
the call it answers.

In (`decode_*`): what Prefill's server takes from a client, checked once. Every fault is a
`WireFault` naming the field (the server answers it with a 400 in the same words); text is checked
for valid Unicode. A user's `image_url` parts are not read here: the decoder hands back where each
was and its URL (`ImageRef`), for the server to fetch and check later. Decoding accepts more than
encoding writes (a `developer` turn, the legacy `functions` / `function_call`, arguments as an
object), and what the encoder writes decodes to what it was given.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from prefill.engine.message import Message, Role, ToolCall
from prefill.engine.request import ResponseFormat, Tool
from prefill.wire.checks import WireFault, schema_text, unicode_text

MAX_TOOLS = 128
MAX_CALLS = 1024  # calls in one assistant turn
NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")  # OpenAI's function names, with the dots and colons some clients use
_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                           "tool": "tool"}


@dataclass(frozen=True)
class ImageRef:
    """An image a request's message asks for: where (`message`, `part`) and its URL, unread."""

    message: int
    part: int
    url: str

    @property
    def param(self) -> str:
        return f"messages[{self.message}].content[{self.part}]"


@dataclass(frozen=True)
class ToolsAsked:
    """What a request says about tools, in any dialect: the tools, the choice among them ("auto",
    "none", "required" or a name), whether several calls may come at once, and a JSON answer's format."""

    tools: tuple[Tool, ...] = ()
    choice: str = "auto"
    parallel: bool = True
    response_format: ResponseFormat | None = None


# --- out ------------------------------------------------------------------------------------
def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def encode_message(m: Message) -> dict[str, Any]:
    """A turn as OpenAI's API takes it (its thinking is not sent)."""
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.images:
        images = [{"type": "image_url", "image_url": {"url": _data_url(img.mime, img.data)}} for img in m.images]
        out["content"] = [*images, *([{"type": "text", "text": m.content}] if m.content else [])]
    if m.role == "assistant" and m.tool_calls:
        out["tool_calls"] = [c.as_openai() for c in m.tool_calls]
        if not m.content:
            out["content"] = None
    elif m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        if m.name:  # OpenAI's own examples send it; templates that render a result by name read it
            out["name"] = m.name
    return out


def call_fragments(call: ToolCall, index: int) -> list[dict[str, Any]]:
    """A finished call as a stream's `delta.tool_calls` entries, as OpenAI streams one: its index,
    id and name first, then its arguments."""
    head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
    return [head, {"index": index, "function": {"arguments": call.arguments}}]


def encode_tool_fields(asked: ToolsAsked) -> dict[str, Any]:
    """`tools`, `tool_choice` and `parallel_tool_calls` (none of them without tools: OpenAI refuses a
    choice or a parallel flag with no tools), and `response_format`."""
    out: dict[str, Any] = {}
    if asked.tools:
        out["tools"] = [t.as_openai() for t in asked.tools]
        choice = asked.choice
        out["tool_choice"] = choice if choice in ("auto", "none", "required") else {
            "type": "function", "function": {"name": choice}}
        if not asked.parallel:
            out["parallel_tool_calls"] = False
    fmt = asked.response_format
    if fmt is not None and fmt.kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif fmt is not None:
        spec = {"name": fmt.name or "response", "schema": json.loads(fmt.schema), "strict": True}
        out["response_format"] = {"type": "json_schema", "json_schema": spec}
    return out


# --- in -------------------------------------------------------------------------------------
def decode_messages(raw: Any) -> tuple[tuple[Message, ...], tuple[ImageRef, ...]]:
    """A request's `messages`, and the image parts they hold (unread), in order.

    Raises:
        WireFault: anything malformed, naming the message.
    """
    if raw is None:
        raise WireFault("'messages' is required.", "messages")
    if not isinstance(raw, list) or not raw:
        raise WireFault("'messages' must be a non-empty array.", "messages")
    images: list[ImageRef] = []
    messages = tuple(decode_message(m, i, images) for i, m in enumerate(raw))
    return messages, tuple(images)


def decode_message(m: Any, i: int, images: list[ImageRef]) -> Message:
    """Message `i`; its image_url parts (a user's) are appended to `images`, to be read later."""
    param = f"messages[{i}]"
    if not isinstance(m, dict):
        raise WireFault(f"{param} must be an object.", param)
    role = m.get("role")
    if not isinstance(role, str) or role not in _ROLES:  # a list or an object is unhashable
        raise WireFault(f"{param}.role must be one of system, developer, user, assistant, tool.", param)
    content = m.get("content")
    if content is None and role == "assistant":
        content = ""
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "image_url" and role == "user":
                images.append(ImageRef(i, j, image_url_of(part, f"{param}.content[{j}]")))
                continue
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise WireFault(f"{param}.content: only text parts (and a user's image_url parts) are supported.",
                                param)
            parts.append(part["text"])
        content = "".join(parts)
    if not isinstance(content, str):
        raise WireFault(f"{param}.content must be a string or an array of content parts.", param)
    content = unicode_text(content, f"{param}.content")
    if role == "tool":
        call_id, name = m.get("tool_call_id", ""), m.get("name", "")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
            raise WireFault(f"{param}: a tool message needs its 'tool_call_id'.", param)
        return Message("tool", content, tool_call_id=unicode_text(call_id, param), name=unicode_text(name, param))
    calls = decode_tool_calls(m["tool_calls"], param) if role == "assistant" and m.get("tool_calls") else ()
    return Message(_ROLES[role], content, tool_calls=calls)


def image_url_of(part: dict[str, Any], param: str) -> str:
    """The URL of an `image_url` part (`{"type": "image_url", "image_url": {"url": ...}}`, or the URL as
    a string), checked for shape only."""
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url:
        raise WireFault(f"{param}: an image_url part needs 'image_url': {{'url': ...}}.", param)
    if isinstance(value, dict) and value.get("detail") not in (None, "auto", "low", "high"):
        raise WireFault(f"{param}.image_url.detail must be auto, low or high.", param)
    return unicode_text(url, param)


def decode_tool_calls(raw: Any, param: str) -> tuple[ToolCall, ...]:
    """An assistant turn's `tool_calls`, as a client sends back what it was given (`param`: the turn)."""
    calls = []
    for i, c in enumerate(_array(raw, f"{param}.tool_calls", MAX_CALLS)):
        where = f"{param}.tool_calls[{i}]"
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(c, dict) or c.get("type", "function") != "function" or not isinstance(fn, dict):
            raise WireFault(f"{where} must be a function call object.", where)
        name, args, call_id = fn.get("name"), fn.get("arguments", "{}"), c.get("id", f"call_{i}")
        if not isinstance(name, str) or not NAME.match(name):
            raise WireFault(f"{where}.function.name must be a function name.", where)
        if isinstance(args, dict):
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(args, str) or not isinstance(call_id, str):
            raise WireFault(f"{where}: 'id' and 'function.arguments' must be strings.", where)
        calls.append(ToolCall(unicode_text(call_id, where), name, unicode_text(args, where)))
    return tuple(calls)


def decode_tool_fields(obj: dict[str, Any]) -> ToolsAsked:
    """`tools` (or the legacy `functions`), the choice among them (`tool_choice`, or the legacy
    `function_call`), `parallel_tool_calls` and `response_format` of a request body."""
    raw, legacy = obj.get("tools"), obj.get("functions")
    if raw is not None and legacy is not None:
        raise WireFault("Send 'tools' or the legacy 'functions', not both.", "functions")
    tools: tuple[Tool, ...] = ()
    if raw is not None:
        tools = tuple(decode_tool(t, f"tools[{i}]") for i, t in enumerate(_array(raw, "tools", MAX_TOOLS)))
    elif legacy is not None:
        fns = _array(legacy, "functions", MAX_TOOLS)
        tools = tuple(decode_function(f, f"functions[{i}]") for i, f in enumerate(fns))
    if len({t.name for t in tools}) != len(tools):
        raise WireFault("Two tools have the same name.", "tools")
    choice_key = "tool_choice" if obj.get("tool_choice") is not None else "function_call"
    choice = decode_tool_choice(obj.get(choice_key), tools, choice_key)
    parallel = obj.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise WireFault("'parallel_tool_calls' must be true or false.", "parallel_tool_calls")
    return ToolsAsked(tools, choice, parallel, decode_response_format(obj.get("response_format")))


def _array(raw: Any, param: str, limit: int) -> list[Any]:
    if not isinstance(raw, list):
        raise WireFault(f"'{param}' must be an array.", param)
    if len(raw) > limit:
        raise WireFault(f"'{param}' may hold at most {limit} entries.", param)
    return raw


def decode_tool(t: Any, where: str) -> Tool:
    """One entry of `tools`: {"type": "function", "function": {...}}."""
    if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(t.get("function"), dict):
        raise WireFault(f"{where} must be {{'type': 'function', 'function': {{...}}}}.", where)
    return decode_function(t["function"], f"{where}.function")


def decode_function(f: Any, where: str) -> Tool:
    """A function's name, description and parameters (a tool's `function`, or a legacy `functions` entry)."""
    if not isinstance(f, dict):
        raise WireFault(f"{where} must be an object.", where)
    name, description, params = f.get("name"), f.get("description", ""), f.get("parameters")
    if not isinstance(name, str) or not NAME.match(name):
        raise WireFault(f"{where}.name must be 1-64 letters, digits, '_', '-', '.' or ':'.", where)
    if not isinstance(description, str):
        raise WireFault(f"{where}.description must be a string.", where)
    if params is None:
        params = {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise WireFault(f"{where}.parameters must be a JSON schema object.", where)
    return Tool(name, unicode_text(description, f"{where}.description"), schema_text(params, f"{where}.parameters"))


def decode_tool_choice(raw: Any, tools: tuple[Tool, ...], key: str = "tool_choice", flat: bool = False) -> str:
    """"auto", "none", "required" or a function's name. A named function is {"type": "function",
    "function": {"name"}} under `tool_choice`, {"name"} under the legacy `function_call`, and with
    `flat` {"type": "function", "name"} (OpenAI's Responses)."""
    if raw is None:
        return "auto" if tools else "none"
    name = None
    if isinstance(raw, str):
        if raw in ("auto", "none", "required"):
            if raw == "required" and not tools:
                raise WireFault(f"'{key}' is 'required' but no tools are given.", key)
            return raw
        raise WireFault(f"'{key}' must be 'auto', 'none', 'required' or names one function.", key)
    if isinstance(raw, dict):
        fn = raw.get("function") if key == "tool_choice" and not flat else raw
        name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or name not in {t.name for t in tools}:
        raise WireFault(f"'{key}' names a function that is not among the tools.", key)
    return name


def decode_response_format(raw: Any, param: str = "response_format", flat: bool = False) -> ResponseFormat | None:
    """A JSON answer's format: {"type": "json_object"}, or "json_schema" with its schema under
    `json_schema` (Chat's `response_format`), or beside the type with `flat` (Responses' `text.format`);
    None for "text" or nothing."""
    if raw is None:
        return None
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat("json_object")
    if kind == "json_schema":
        spec = raw if flat else raw.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        inner = param if flat else f"{param}.json_schema"
        if not isinstance(schema, dict):
            raise WireFault(f"'{inner}.schema' must be a JSON schema object.", param)
        name = spec.get("name", "") if isinstance(spec, dict) else ""
        name = name if isinstance(name, str) else ""
        return ResponseFormat("json_schema", schema_text(schema, param), unicode_text(name, param))
    raise WireFault(f"'{param}.type' must be 'text', 'json_object' or 'json_schema'.", param)

