"""The door for OpenAI Responses bodies (`POST /v1/responses`): every one is checked here, once, and
becomes the core's `GenerationRequest`.

`input` as a string or a list of items: messages (user, assistant, system, developer; a string or
`input_text`, `output_text`, `refusal` and a user's `input_image` parts), `function_call` and
`function_call_output` items, and `reasoning` items (an earlier turn's thinking, which templates
drop); `instructions`; function `tools` in Responses' flat shape, `tool_choice`, `parallel_tool_calls`;
`text.format` (json_schema, json_object); `reasoning.effort` as the model's thinking; `max_output_tokens`,
`temperature`, `top_p`; `store`, `previous_response_id`, `metadata`, `user`, `stream`; `truncation: auto`
as the core's compaction. Anything malformed is a 400 `ApiError` naming the field, in OpenAI's shape.

A response continued by `previous_response_id` gives its input and output items first (`Ask.request`);
they were checked when it was kept, and are read by the same code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from prefill.engine.message import Message, Role, ToolCall
from prefill.engine.request import ResponseFormat, TemplateOptions, Tool
from prefill.engine.settings import ServeSampling
from prefill.server.core import DEFAULTS, UNLIMITED, GenerationRequest, ToolsAsked
from prefill.server.documents.field import DocumentsAsked, documents_field
from prefill.server.errors import bad_request
from prefill.server.fields import get_bool, get_float, get_int, unicode_text
from prefill.server.images import ImageRef
from prefill.server.openai.parse_tools import function_tool, response_format, tool_choice
from prefill.wire.openai_chat import MAX_TOOLS, NAME

MAX_ITEMS = 4096  # input items, and parts in one message
MAX_METADATA = 16  # OpenAI's: 16 keys of at most 64 characters, values of at most 512
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_KEYS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"}  # part: its text
UNSUPPORTED = ("background", "conversation", "prompt")  # asked for, they are refused in words


@dataclass(frozen=True)
class Ask:
    """A Responses body, checked: what it asks of the core, and what the response echoes and keeps.

    Attributes:
        input: its own input items, as they will be kept (a string input as one user message).
        previous: `previous_response_id` (None: a new conversation).
        store: keep the response (OpenAI's default: yes).
        echo: the request's settings as the response object repeats them.
    """

    model: str
    input: tuple[Any, ...]
    messages: tuple[Message, ...]
    images: tuple[ImageRef, ...]
    instructions: str
    tools: ToolsAsked
    options: TemplateOptions
    sampling: ServeSampling
    stream: bool
    previous: str | None = None
    store: bool = True
    compaction: str = "off"
    echo: dict[str, Any] = field(default_factory=dict)
    documents: DocumentsAsked | None = None

    def request(self, history: list[Any] | None = None) -> GenerationRequest:
        """The core's request: the instructions, then `history` (the input and output items of the
        response this one continues), then this body's own items."""
        before, images, names = _read_items(history or [], "previous_response_id", 0)
        system = [Message("system", self.instructions)] if self.instructions else []
        at = len(system) + len(before)
        own = tuple(replace(m, name=names.get(m.tool_call_id, m.name)) if m.role == "tool" and not m.name else m
                    for m in self.messages)
        refs = [replace(r, message=r.message + len(system)) for r in images]
        refs += [replace(r, message=r.message + at) for r in self.images]
        return GenerationRequest("chat", self.model, messages=(*system, *before, *own), stream=self.stream,
                                 sampling=self.sampling, tools=self.tools, images=tuple(refs), options=self.options,
                                 compaction=self.compaction, documents=self.documents)


def parse_responses(obj: dict[str, Any], model: str) -> Ask:
    """A Responses body as what it asks; `model`: the name it gives (already read)."""
    for key in UNSUPPORTED:
        if obj.get(key) not in (None, False):
            raise bad_request(f"'{key}' is not supported by this server.", key)
    items = _input(obj.get("input"))
    messages, images, _ = _read_items(items, "input", 0)
    if not messages:
        raise bad_request("'input' must hold at least one item.", "input")
    instructions = obj.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise bad_request("'instructions' must be a string.", "instructions")
    previous = obj.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous or len(previous) > 256):
        raise bad_request("'previous_response_id' must be the id of a stored response.", "previous_response_id")
    if previous is not None:
        unicode_text(previous, "previous_response_id")
    tools, raw_tools = _tools(obj)
    options, reasoning = _reasoning(obj.get("reasoning"))
    limit = get_int(obj, "max_output_tokens", None, 1)
    sampling = _sampling(obj, limit)
    truncation = obj.get("truncation", "disabled")
    if truncation not in (None, "disabled", "auto"):
        raise bad_request("'truncation' is \"disabled\" or \"auto\" (summarise what would not fit).", "truncation")
    metadata, user = _metadata(obj.get("metadata")), obj.get("user")
    if user is not None and (not isinstance(user, str) or len(user) > 256):
        raise bad_request("'user' must be a string of at most 256 characters.", "user")
    echo = {
        "instructions": instructions, "max_output_tokens": limit, "metadata": metadata,
        "parallel_tool_calls": tools.parallel, "previous_response_id": previous, "reasoning": reasoning,
        "temperature": sampling.temperature, "top_p": sampling.top_p, "tool_choice": _echo_choice(tools),
        "tools": raw_tools, "truncation": truncation or "disabled",
        "text": {"format": _format_echo(tools.response_format)}, "user": user and unicode_text(user, "user"),
    }
    return Ask(model, tuple(items), messages, tuple(images), unicode_text(instructions or "", "instructions"), tools,
               options, sampling, get_bool(obj, "stream", False), previous, get_bool(obj, "store", True),
               "auto" if truncation == "auto" else "off", echo, documents_field(obj))


def _input(raw: Any) -> list[Any]:
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list) or len(raw) > MAX_ITEMS:
        raise bad_request(f"'input' must be a string or an array of at most {MAX_ITEMS} items.", "input")
    return raw


def _read_items(items: list[Any], param: str, at: int) -> tuple[tuple[Message, ...], list[ImageRef], dict[str, str]]:
    """Items as the core's messages (`at`: the index the first will have), their images, and each
    call's function name by its call_id. An assistant's message and the calls after it are one turn."""
    out: list[Message] = []
    images: list[ImageRef] = []
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        where = f"{param}[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object.", where)
        kind = item.get("type", "message")
        if kind == "message":
            message, parts = _message(item, where)
            images.extend(ImageRef(at + len(out), j, url) for j, url in parts)
            out.append(message)
        elif kind == "function_call":
            call = _function_call(item, where, kept=param == "previous_response_id")
            names[call.id] = call.name
            if out and out[-1].role == "assistant":
                out[-1] = replace(out[-1], tool_calls=(*out[-1].tool_calls, call))
            else:
                out.append(Message("assistant", "", tool_calls=(call,)))
        elif kind == "function_call_output":
            out.append(_call_output(item, where, names))
        elif kind == "reasoning":
            continue  # an earlier turn's thinking: templates leave it out of the prompt
        else:
            raise bad_request(f"{where}: items of type {str(kind)[:64]!r} are not read here; send messages, "
                              "function_call and function_call_output items.", where)
    return tuple(out), images, names


def _message(item: dict[str, Any], where: str) -> tuple[Message, list[tuple[int, str]]]:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise bad_request(f"{where}.role must be user, assistant, system or developer.", where)
    content = item.get("content")
    if isinstance(content, str):
        return Message(_ROLES[role], unicode_text(content, f"{where}.content")), []
    if not isinstance(content, list) or len(content) > MAX_ITEMS:
        raise bad_request(f"{where}.content must be a string or an array of at most {MAX_ITEMS} parts.", where)
    texts: list[str] = []
    images: list[tuple[int, str]] = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        key = _TEXT_KEYS.get(kind) if isinstance(kind, str) else None
        if key is not None and isinstance(part.get(key), str):
            texts.append(unicode_text(part[key], at))
        elif kind == "input_image" and role == "user":
            images.append((j, _image_url(part, at)))
        else:
            raise bad_request(f"{at}: a {role} message holds input_text, output_text"
                              + (" and input_image" if role == "user" else "") + " parts.", at)
    return Message(_ROLES[role], "".join(texts)), images


def _image_url(part: dict[str, Any], where: str) -> str:
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        raise bad_request(f"{where}: an input_image part needs 'image_url' (a data: URL; file ids are not kept "
                          "here).", where)
    if part.get("detail") not in (None, "auto", "low", "high", "original"):
        raise bad_request(f"{where}.detail must be auto, low or high.", where)
    return unicode_text(url, where)


def _function_call(item: dict[str, Any], where: str, kept: bool = False) -> ToolCall:
    """A call item. One `kept` (this server's own output, read back for previous_response_id) may carry any
    name the model wrote: the client cannot mend it, and refusing it would end the conversation."""
    call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
    named = isinstance(name, str) and (bool(name) if kept else bool(NAME.match(name)))
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not named:
        raise bad_request(f"{where}: a function_call item needs 'call_id' and a function's 'name'.", where)
    if isinstance(args, dict):
        args = json.dumps(args, ensure_ascii=False)
    if not isinstance(args, str):
        raise bad_request(f"{where}.arguments must be a string of JSON.", where)
    return ToolCall(unicode_text(call_id, where), unicode_text(name, where), unicode_text(args, f"{where}.arguments"))


def _call_output(item: dict[str, Any], where: str, names: dict[str, str]) -> Message:
    call_id, output = item.get("call_id"), item.get("output", "")
    if not isinstance(call_id, str) or not call_id:
        raise bad_request(f"{where}: a function_call_output item needs the 'call_id' it answers.", where)
    if isinstance(output, list):  # parts: only text is read
        texts = []
        for part in output:
            if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text") \
                    or not isinstance(part.get("text"), str):
                raise bad_request(f"{where}.output: only input_text parts are read in a function's output.", where)
            texts.append(part["text"])
        output = "".join(texts)
    if not isinstance(output, str):
        raise bad_request(f"{where}.output must be a string or an array of input_text parts.", where)
    return Message("tool", unicode_text(output, f"{where}.output"), tool_call_id=unicode_text(call_id, where),
                   name=names.get(call_id, ""))


def _tools(obj: dict[str, Any]) -> tuple[ToolsAsked, list[dict[str, Any]]]:
    """The tools and the choice among them, and the tools as the response echoes them."""
    raw = obj.get("tools")
    if raw is None:
        raw = []
    if not isinstance(raw, list) or len(raw) > MAX_TOOLS:
        raise bad_request(f"'tools' must be an array of at most {MAX_TOOLS} tools.", "tools")
    tools: list[Tool] = []
    echo: list[dict[str, Any]] = []
    for i, t in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(t, dict) or t.get("type") != "function":
            kind = t.get("type") if isinstance(t, dict) else None
            raise bad_request(f"{where}: only function tools are run here ({str(kind)[:64]!r} is not); give "
                              "{'type': 'function', 'name', 'parameters'}.", where)
        tool = function_tool(t, where)
        tools.append(tool)
        strict = t.get("strict")
        echo.append({"type": "function", "name": tool.name, "description": tool.description or None,
                     "parameters": json.loads(tool.parameters), "strict": strict if isinstance(strict, bool) else None})
    if len({t.name for t in tools}) != len(tools):
        raise bad_request("Two tools have the same name.", "tools")
    choice = tool_choice(obj.get("tool_choice"), tuple(tools), "tool_choice", flat=True)
    parallel = get_bool(obj, "parallel_tool_calls", True)
    text = obj.get("text")
    if text is not None and not isinstance(text, dict):
        raise bad_request("'text' must be an object ({'format': ...}).", "text")
    fmt = response_format(text.get("format"), "text.format", flat=True) if text is not None else None
    return ToolsAsked(tuple(tools), choice, parallel, fmt), echo


def _format_echo(fmt: ResponseFormat | None) -> dict[str, Any]:
    """`text.format` as the response repeats it."""
    if fmt is None or fmt.kind != "json_schema":
        return {"type": fmt.kind if fmt is not None else "text"}
    return {"type": "json_schema", "name": unicode_text(fmt.name, "text.format.name") or "response",
            "schema": json.loads(fmt.schema), "strict": None}


def _echo_choice(tools: ToolsAsked) -> Any:
    return tools.choice if tools.choice in ("auto", "none", "required") else {"type": "function", "name": tools.choice}


def _reasoning(raw: Any) -> tuple[TemplateOptions, dict[str, Any] | None]:
    """`reasoning.effort` as the model's thinking, as Anthropic's `thinking` is: "none", no thinking;
    minimal, low, medium, high (xhigh) think with the budget of that effort (or a template's own
    effort, gpt-oss's); absent, the template's default."""
    if raw is None:
        return TemplateOptions(), None
    if not isinstance(raw, dict):
        raise bad_request("'reasoning' must be an object ({'effort': ...}).", "reasoning")
    effort, summary = raw.get("effort"), raw.get("summary")
    if summary not in (None, "auto", "concise", "detailed"):
        raise bad_request("'reasoning.summary' is auto, concise or detailed.", "reasoning")
    echo = {"effort": effort, "summary": summary}
    if effort is None:
        return TemplateOptions(), echo
    if effort == "none":
        return TemplateOptions(False, "", 0), echo
    if not isinstance(effort, str) or effort not in EFFORTS:
        raise bad_request("'reasoning.effort' is none, minimal, low, medium, high or xhigh.", "reasoning")
    return TemplateOptions(True, EFFORTS[effort]), echo


def _metadata(raw: Any) -> dict[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) > MAX_METADATA or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512 for k, v in raw.items()):
        raise bad_request(f"'metadata' is at most {MAX_METADATA} string keys (64 characters) and values "
                          "(512 characters).", "metadata")
    return {unicode_text(k, "metadata"): unicode_text(v, "metadata") for k, v in raw.items()}


def _sampling(obj: dict[str, Any], limit: int | None) -> ServeSampling:
    d = DEFAULTS
    try:
        return ServeSampling(
            temperature=get_float(obj, "temperature", d.temperature, 0.0, 2.0),
            top_p=get_float(obj, "top_p", d.top_p, 0.0, 1.0),
            top_k=d.top_k,
            min_p=d.min_p,
            repeat_penalty=d.repeat_penalty,
            max_tokens=limit or UNLIMITED,
        )
    except ValueError as e:  # e.g. top_p 0: in range for JSON, not for the sampler
        raise bad_request(f"{e}.") from None
