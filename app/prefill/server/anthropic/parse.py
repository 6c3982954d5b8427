"""The door for Anthropic Messages bodies (`POST /v1/messages` and `/v1/messages/count_tokens`): every
one is checked here, once, and becomes the core's `GenerationRequest`.

`system` as a string or text blocks; text, base64 (or URL) image, `tool_use` and `tool_result` blocks
(`is_error` kept in the result's words); `tools` with `input_schema`; `tool_choice` auto, any, tool,
none, with `disable_parallel_tool_use`; `thinking` with `budget_tokens` as the model's reasoning
budget; `stop_sequences`; `max_tokens`, required as Anthropic requires it. Anything malformed is a
400 `ApiError` naming the field (worded in Anthropic's shape by anthropic/errors.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from prefill.engine.message import Message, ToolCall
from prefill.engine.request import MAX_REASONING_BUDGET, TemplateOptions, Tool
from prefill.engine.settings import ServeSampling
from prefill.server.core import DEFAULTS, UNLIMITED, GenerationRequest, ToolsAsked
from prefill.server.documents.field import documents_field
from prefill.server.errors import bad_request
from prefill.server.fields import get_bool, get_float, get_int, schema_text, unicode_text
from prefill.server.images import ImageRef

MAX_STOPS = 16
MAX_TOOLS = 128
MAX_BLOCKS = 4096  # content blocks in one message
NAME = re.compile(r"[A-Za-z0-9_-]{1,128}\Z")  # Anthropic's tool names
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def parse_messages(obj: dict[str, Any], model: str, counting: bool = False) -> GenerationRequest:
    """A Messages body as the core's request; `counting`: a count_tokens body (no sampling; `max_tokens`
    optional: where it is given, a collection's passages fit the room it leaves, as they will when the
    request is sent)."""
    if not counting and obj.get("max_tokens") is None:
        raise bad_request("'max_tokens' is required.", "max_tokens")
    limit = get_int(obj, "max_tokens", None, 1)
    raw = obj.get("messages")
    if not isinstance(raw, list) or not raw:
        raise bad_request("'messages' must be a non-empty array.", "messages")
    images: list[ImageRef] = []
    messages: list[Message] = []
    system = _system(obj.get("system"))
    if system:
        messages.append(Message("system", system))
    names: dict[str, str] = {}  # tool_use id -> the tool's name, for the results that answer them
    for i, m in enumerate(raw):
        messages.extend(_message(m, i, len(messages), images, names))
    tools = _tools(obj)
    stream = get_bool(obj, "stream", False) if not counting else False
    return GenerationRequest("chat", model, messages=tuple(messages), stream=stream,
                             sampling=_sampling(obj, limit), tools=tools, images=tuple(images),
                             options=_thinking(obj.get("thinking")), documents=documents_field(obj))


def _system(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return unicode_text(raw, "system")
    if isinstance(raw, list):
        parts = []
        for j, block in enumerate(raw):
            if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
                raise bad_request(f"system[{j}] must be a text block.", "system")
            parts.append(unicode_text(block["text"], "system"))
        return "\n\n".join(parts)
    raise bad_request("'system' must be a string or an array of text blocks.", "system")


def _message(m: Any, i: int, at: int, images: list[ImageRef], names: dict[str, str]) -> list[Message]:
    """One Anthropic message as the core's messages (`at`: the index the first will have): a user's
    tool results become tool turns, before whatever else it says."""
    param = f"messages[{i}]"
    if not isinstance(m, dict):
        raise bad_request(f"{param} must be an object.", param)
    role = m.get("role")
    if role not in ("user", "assistant"):
        raise bad_request(f"{param}.role must be user or assistant.", param)
    content = m.get("content")
    if isinstance(content, str):
        return [Message(role, unicode_text(content, f"{param}.content"))]
    if not isinstance(content, list) or len(content) > MAX_BLOCKS:
        raise bad_request(f"{param}.content must be a string or an array of at most {MAX_BLOCKS} content blocks.",
                          param)
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    mine: list[tuple[int, str]] = []  # (block, url) of this message's images
    for j, block in enumerate(content):
        where = f"{param}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(unicode_text(block["text"], where))
        elif kind == "image" and role == "user":
            mine.append((j, _image_url(block.get("source"), where)))
        elif kind == "tool_use" and role == "assistant":
            calls.append(_tool_use(block, where))
            names[calls[-1].id] = calls[-1].name
        elif kind == "tool_result" and role == "user":
            results.append(_tool_result(block, where, names))
        elif kind in ("thinking", "redacted_thinking") and role == "assistant":
            continue  # an earlier turn's thinking: templates drop it from the prompt
        else:
            raise bad_request(f"{where}: a {role} message holds text, "
                              + ("image and tool_result" if role == "user" else "tool_use and thinking")
                              + " blocks.", where)
    out = list(results)
    if texts or calls or mine or not results:
        index = at + len(out)
        images.extend(ImageRef(index, j, url) for j, url in mine)
        out.append(Message(role, "".join(texts), tool_calls=tuple(calls)))
    return out


def _image_url(source: Any, where: str) -> str:
    """An image block's source as the URL the image reader takes (a base64 block as a data: URL)."""
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")
        if media not in IMAGE_TYPES or not isinstance(data, str) or not data:
            raise bad_request(f"{where}.source: a base64 image needs 'media_type' ({', '.join(IMAGE_TYPES)}) and "
                              "'data'.", where)
        return f"data:{media};base64,{unicode_text(data, where)}"
    if kind == "url" and isinstance(source.get("url"), str) and source["url"]:
        return unicode_text(source["url"], where)
    raise bad_request(f"{where}.source must be {{'type': 'base64', 'media_type', 'data'}} or "
                      "{'type': 'url', 'url'}.", where)


def _tool_use(block: dict[str, Any], where: str) -> ToolCall:
    call_id, name, args = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise bad_request(f"{where}: a tool_use block needs 'id' and 'name'.", where)
    if not isinstance(args, dict):
        raise bad_request(f"{where}.input must be an object.", where)
    return ToolCall(unicode_text(call_id, where), unicode_text(name, where),
                    unicode_text(json.dumps(args, ensure_ascii=False), f"{where}.input"))


def _tool_result(block: dict[str, Any], where: str, names: dict[str, str]) -> Message:
    call_id, content = block.get("tool_use_id"), block.get("content", "")
    if not isinstance(call_id, str) or not call_id:
        raise bad_request(f"{where}: a tool_result block needs 'tool_use_id'.", where)
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise bad_request(f"{where}.content: only text blocks are read in a tool result.", where)
            parts.append(part["text"])
        content = "".join(parts)
    if not isinstance(content, str):
        raise bad_request(f"{where}.content must be a string or an array of text blocks.", where)
    is_error = get_bool(block, "is_error", False)
    text = unicode_text(content, where)
    return Message("tool", f"Error: {text}" if is_error else text, tool_call_id=unicode_text(call_id, where),
                   name=names.get(call_id, ""))


def _tools(obj: dict[str, Any]) -> ToolsAsked:
    raw = obj.get("tools")
    tools: list[Tool] = []
    if raw is not None:
        if not isinstance(raw, list) or len(raw) > MAX_TOOLS:
            raise bad_request(f"'tools' must be an array of at most {MAX_TOOLS} tools.", "tools")
        for i, t in enumerate(raw):
            tools.append(_tool(t, f"tools[{i}]"))
    if len({t.name for t in tools}) != len(tools):
        raise bad_request("Two tools have the same name.", "tools")
    choice, parallel = _choice(obj.get("tool_choice"), tools)
    return ToolsAsked(tuple(tools), choice, parallel)


def _tool(t: Any, where: str) -> Tool:
    if not isinstance(t, dict):
        raise bad_request(f"{where} must be an object.", where)
    if t.get("type") not in (None, "custom"):
        raise bad_request(f"{where}: server tools ({str(t.get('type'))[:64]!r}) are not run here; give client "
                          "tools with 'name' and 'input_schema'.", where)
    name, description, schema = t.get("name"), t.get("description", ""), t.get("input_schema")
    if not isinstance(name, str) or not NAME.match(name):
        raise bad_request(f"{where}.name must be 1-128 letters, digits, '_' or '-'.", where)
    if not isinstance(description, str):
        raise bad_request(f"{where}.description must be a string.", where)
    if not isinstance(schema, dict):
        raise bad_request(f"{where}.input_schema must be a JSON schema object.", where)
    return Tool(name, unicode_text(description, where), schema_text(schema, f"{where}.input_schema"))


def _choice(raw: Any, tools: list[Tool]) -> tuple[str, bool]:
    """(the core's choice, whether several calls may come at once)."""
    if raw is None:
        return ("auto" if tools else "none"), True
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise bad_request("'tool_choice.type' must be auto, any, tool or none.", "tool_choice")
    parallel = not get_bool(raw, "disable_parallel_tool_use", False)
    if kind == "none" or not tools:
        if kind in ("any", "tool"):
            raise bad_request(f"'tool_choice' is {kind!r} but no tools are given.", "tool_choice")
        return "none", parallel
    if kind == "any":
        return "required", parallel
    if kind == "tool":
        name = raw.get("name")
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise bad_request("'tool_choice.name' names a tool that is not among the tools.", "tool_choice")
        return name, parallel
    return "auto", parallel


def _thinking(raw: Any) -> TemplateOptions:
    """`thinking`: {"type": "enabled", "budget_tokens": N} (thinking of at most N tokens),
    {"type": "disabled"} (none), or absent (the template's default)."""
    if raw is None:
        return TemplateOptions()
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "disabled":
        return TemplateOptions(False, "", 0)
    if kind in ("enabled", "adaptive"):
        budget = raw.get("budget_tokens")
        if budget is None and kind == "adaptive":
            return TemplateOptions(True)
        if type(budget) is not int or not 0 <= budget <= MAX_REASONING_BUDGET:
            raise bad_request(f"'thinking.budget_tokens' is a number of tokens from 0 to {MAX_REASONING_BUDGET}.",
                              "thinking")
        return TemplateOptions(True, "", budget)
    raise bad_request("'thinking.type' must be enabled or disabled.", "thinking")


def _sampling(obj: dict[str, Any], limit: int | None) -> ServeSampling:
    stop = obj.get("stop_sequences")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, list) and len(stop) <= MAX_STOPS and all(isinstance(s, str) for s in stop):
        stops = tuple(unicode_text(s, "stop_sequences") for s in stop if s)
    else:
        raise bad_request(f"'stop_sequences' must be an array of at most {MAX_STOPS} strings.", "stop_sequences")
    d = DEFAULTS
    try:
        return ServeSampling(
            temperature=get_float(obj, "temperature", d.temperature, 0.0, 1.0),
            top_p=get_float(obj, "top_p", d.top_p, 0.0, 1.0),
            top_k=get_int(obj, "top_k", d.top_k, 0),
            min_p=d.min_p,
            repeat_penalty=d.repeat_penalty,
            max_tokens=limit or UNLIMITED,
            stop=stops,
        )
    except ValueError as e:  # e.g. top_p 0: in range for JSON, not for the sampler
        raise bad_request(f"{e}.") from None
