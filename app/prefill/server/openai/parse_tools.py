"""The door for what a request says about tools and JSON answers: `tools`, `tool_choice`,
`parallel_tool_calls`, the legacy `functions` / `function_call` (mapped onto tools), an
assistant turn's `tool_calls`, a `tool` turn's `tool_call_id`, and `response_format`.

Everything malformed is an `ApiError` (400) naming the field; what passes is typed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from prefill.engine.message import ToolCall
from prefill.engine.request import ResponseFormat, Tool
from prefill.server.core import ToolsAsked
from prefill.server.errors import ApiError, bad_request
from prefill.server.fields import schema_text, unicode_text

MAX_TOOLS = 128
NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")  # OpenAI's function names, with the dots and colons some clients use


def parse_tool_fields(obj: dict[str, Any]) -> ToolsAsked:
    """`tools` (or legacy `functions`), the choice among them, and the response format."""
    raw, legacy = obj.get("tools"), obj.get("functions")
    if raw is not None and legacy is not None:
        raise bad_request("Send 'tools' or the legacy 'functions', not both.", "functions")
    tools: tuple[Tool, ...] = ()
    if raw is not None:
        tools = tuple(_tool(t, f"tools[{i}]") for i, t in enumerate(_array(raw, "tools", MAX_TOOLS)))
    elif legacy is not None:
        fns = _array(legacy, "functions", MAX_TOOLS)
        tools = tuple(function_tool(f, f"functions[{i}]") for i, f in enumerate(fns))
    if len({t.name for t in tools}) != len(tools):
        raise bad_request("Two tools have the same name.", "tools")
    choice_key = "tool_choice" if obj.get("tool_choice") is not None else "function_call"
    choice = tool_choice(obj.get(choice_key), tools, choice_key)
    parallel = obj.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise bad_request("'parallel_tool_calls' must be true or false.", "parallel_tool_calls")
    return ToolsAsked(tools, choice, parallel, response_format(obj.get("response_format")))


def parse_tool_calls(raw: Any, param: str) -> tuple[ToolCall, ...]:
    """An assistant turn's `tool_calls`, as a client sends back what it was given."""
    calls = []
    for i, c in enumerate(_array(raw, f"{param}.tool_calls", 1024)):
        where = f"{param}.tool_calls[{i}]"
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(c, dict) or c.get("type", "function") != "function" or not isinstance(fn, dict):
            raise bad_request(f"{where} must be a function call object.", where)
        name, args, call_id = fn.get("name"), fn.get("arguments", "{}"), c.get("id", f"call_{i}")
        if not isinstance(name, str) or not NAME.match(name):
            raise bad_request(f"{where}.function.name must be a function name.", where)
        if isinstance(args, dict):
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(args, str) or not isinstance(call_id, str):
            raise bad_request(f"{where}: 'id' and 'function.arguments' must be strings.", where)
        calls.append(ToolCall(call_id, name, args))
    return tuple(calls)


def _array(raw: Any, param: str, limit: int) -> list[Any]:
    if not isinstance(raw, list):
        raise bad_request(f"'{param}' must be an array.", param)
    if len(raw) > limit:
        raise bad_request(f"'{param}' may hold at most {limit} entries.", param)
    return raw


def _tool(t: Any, where: str) -> Tool:
    if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(t.get("function"), dict):
        raise bad_request(f"{where} must be {{'type': 'function', 'function': {{...}}}}.", where)
    return function_tool(t["function"], f"{where}.function")


def function_tool(f: Any, where: str) -> Tool:
    """A function's name, description and parameters (Chat's `function` object, or a Responses tool)."""
    if not isinstance(f, dict):
        raise bad_request(f"{where} must be an object.", where)
    name, description, params = f.get("name"), f.get("description", ""), f.get("parameters")
    if not isinstance(name, str) or not NAME.match(name):
        raise bad_request(f"{where}.name must be 1-64 letters, digits, '_', '-', '.' or ':'.", where)
    if not isinstance(description, str):
        raise bad_request(f"{where}.description must be a string.", where)
    if params is None:
        params = {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise bad_request(f"{where}.parameters must be a JSON schema object.", where)
    return Tool(name, unicode_text(description, f"{where}.description"), schema_text(params, f"{where}.parameters"))


def tool_choice(raw: Any, tools: tuple[Tool, ...], key: str, flat: bool = False) -> str:
    """The core's choice: "auto", "none", "required" or a function's name. A named function is
    {"type": "function", "function": {"name"}} (Chat), or with `flat` {"type": "function", "name"} (Responses)."""
    if raw is None:
        return "auto" if tools else "none"
    name = None
    if isinstance(raw, str):
        if raw in ("auto", "none", "required"):
            if raw == "required" and not tools:
                raise bad_request(f"'{key}' is 'required' but no tools are given.", key)
            return raw
        raise bad_request(f"'{key}' must be 'auto', 'none', 'required' or names one function.", key)
    if isinstance(raw, dict):
        fn = raw.get("function") if key == "tool_choice" and not flat else raw
        name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or name not in {t.name for t in tools}:
        raise bad_request(f"'{key}' names a function that is not among the tools.", key)
    return name


def response_format(raw: Any, param: str = "response_format", flat: bool = False) -> ResponseFormat | None:
    """A JSON answer's format: {"type": "json_object"}, or "json_schema" with its schema under
    `json_schema` (Chat's `response_format`), or beside the type with `flat` (Responses' `text.format`)."""
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
            raise bad_request(f"'{inner}.schema' must be a JSON schema object.", param)
        name = spec.get("name", "") if isinstance(spec, dict) else ""
        name = name if isinstance(name, str) else ""
        return ResponseFormat("json_schema", schema_text(schema, param), name)
    raise bad_request(f"'{param}.type' must be 'text', 'json_object' or 'json_schema'.", param)


__all__ = ["ApiError", "ToolsAsked", "function_tool", "parse_tool_calls", "parse_tool_fields", "response_format",
           "tool_choice"]
