"""The door for what a request says about tools and JSON answers: `tools`, `tool_choice`,
`parallel_tool_calls`, the legacy `functions` / `function_call` (mapped onto tools), an
assistant turn's `tool_calls`, and `response_format`.

The shapes are decoded by the one OpenAI codec (`wire/openai_chat.py`, which `remote/` encodes with);
here each of its faults becomes an `ApiError` (400) naming the field. What passes is typed.
"""

from __future__ import annotations

from typing import Any

from prefill.engine.message import ToolCall
from prefill.engine.request import ResponseFormat, Tool
from prefill.server.errors import ApiError, wire_faults
from prefill.wire import openai_chat as codec
from prefill.wire.openai_chat import ToolsAsked


def parse_tool_fields(obj: dict[str, Any]) -> ToolsAsked:
    """`tools` (or legacy `functions`), the choice among them, and the response format."""
    with wire_faults():
        return codec.decode_tool_fields(obj)


def parse_tool_calls(raw: Any, param: str) -> tuple[ToolCall, ...]:
    """An assistant turn's `tool_calls`, as a client sends back what it was given."""
    with wire_faults():
        return codec.decode_tool_calls(raw, param)


def function_tool(f: Any, where: str) -> Tool:
    """A function's name, description and parameters (Chat's `function` object, or a Responses tool)."""
    with wire_faults():
        return codec.decode_function(f, where)


def tool_choice(raw: Any, tools: tuple[Tool, ...], key: str, flat: bool = False) -> str:
    """The core's choice: "auto", "none", "required" or a function's name. A named function is
    {"type": "function", "function": {"name"}} (Chat), or with `flat` {"type": "function", "name"} (Responses)."""
    with wire_faults():
        return codec.decode_tool_choice(raw, tools, key, flat)


def response_format(raw: Any, param: str = "response_format", flat: bool = False) -> ResponseFormat | None:
    """A JSON answer's format: {"type": "json_object"}, or "json_schema" with its schema under
    `json_schema` (Chat's `response_format`), or beside the type with `flat` (Responses' `text.format`)."""
    with wire_faults():
        return codec.decode_response_format(raw, param, flat)


__all__ = ["ApiError", "ToolsAsked", "function_tool", "parse_tool_calls", "parse_tool_fields", "response_format",
           "tool_choice"]
