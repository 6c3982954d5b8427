"""The door for Ollama's bodies (`POST /api/chat` and `/api/generate`): every one is checked here, once,
and becomes the core's `GenerationRequest`.

`messages` with roles system, user, assistant and tool; a message's `images` (base64, a user's), an
assistant's `tool_calls` and `thinking`, a tool result's `tool_name` (its call found by name when no
`tool_call_id` comes); `tools` (OpenAI's shape, read by openai/parse_tools.py); `format` ("json" or a
JSON schema); `think` (true, false, or "low" / "medium" / "high", as the other dialects' reasoning
switches); `options` (temperature, top_p, top_k, min_p, seed, num_predict, stop, repeat_penalty,
repeat_last_n, frequency and presence penalties; those a loaded model fixes, such as num_gpu or
num_thread, and unknown ones are let pass, as Ollama lets them); `stream`, true unless false.
`/api/generate`: `prompt`, `system`, `images`, `raw` (the prompt as the model reads it, no template),
`context` (deprecated) ignored, `suffix`, `template` and `logprobs` refused in words. A chat without messages or
a generate without a prompt asks only for the model to be loaded (or, with `keep_alive` 0, unloaded).
Anything malformed is a 400 `ApiError` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from prefill.engine.message import Message, Role, ToolCall
from prefill.engine.request import REASONING_EFFORTS, ResponseFormat, TemplateOptions
from prefill.engine.settings import ServeSampling
from prefill.server.core import DEFAULTS, UNLIMITED, GenerationRequest, ToolsAsked
from prefill.server.documents.field import documents_field
from prefill.server.errors import bad_request
from prefill.server.fields import get_bool, get_float, get_int, schema_text, stop_strings, unicode_text
from prefill.server.images import ImageRef
from prefill.server.openai.parse_tools import parse_tool_calls, parse_tool_fields

ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
MAX_REPEAT_WINDOW = 65536
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class _Image(ImageRef):
    """A base64 image of an Ollama body, named where it was (`messages[1].images[0]`, `images[0]`)."""

    where: str = ""

    @property
    def param(self) -> str:
        return self.where


def load_only(req: GenerationRequest) -> bool:
    """Whether the request asks only for its model to be loaded (no messages, an empty prompt)."""
    return req.kind == "chat" and not req.messages


def parse_chat(obj: dict[str, Any], model: str) -> GenerationRequest:
    """An /api/chat body as the core's request."""
    raw = obj.get("messages")
    if raw is not None and not isinstance(raw, list):
        raise bad_request("'messages' must be an array.", "messages")
    images: list[ImageRef] = []
    pending: list[ToolCall] = []  # calls not answered yet, oldest first: a result without an id answers one
    messages = tuple(_message(m, i, images, pending) for i, m in enumerate(raw or ()))
    tools = parse_tool_fields({"tools": obj.get("tools")})
    return _request(obj, model, "chat", messages, "", tools, images)


def parse_generate(obj: dict[str, Any], model: str) -> GenerationRequest:
    """An /api/generate body as the core's request: the prompt as a user's turn in the model's template,
    or (`raw`) as it is."""
    prompt, system = _text(obj, "prompt"), _text(obj, "system")
    if _text(obj, "suffix"):
        raise bad_request("'suffix' (filling in the middle) is not supported here: send the text before the gap as "
                          "'prompt'.", "suffix")
    if _text(obj, "template"):
        raise bad_request("'template' is not supported: the model's own chat template writes the prompt (or send "
                          "'raw': true and the prompt as the model reads it).", "template")
    raw, pictures = get_bool(obj, "raw", False), obj.get("images")
    images: list[ImageRef] = []
    if raw:
        if pictures:
            raise bad_request("'images' go through the model's template: leave 'raw' off to send them.", "images")
        if obj.get("format") not in (None, ""):
            raise bad_request("'format' holds a templated answer to JSON: leave 'raw' off to use it.", "format")
        if prompt:
            return _request(obj, model, "completion", (), prompt, ToolsAsked(), images)
        return _request(obj, model, "chat", (), "", ToolsAsked(), images)
    messages: list[Message] = []
    if prompt or pictures:
        if system:
            messages.append(Message("system", system))
        if pictures is not None:
            _images(pictures, len(messages), "images", images)
        messages.append(Message("user", prompt))
    return _request(obj, model, "chat", tuple(messages), "", ToolsAsked(), images)


def _request(obj: dict[str, Any], model: str, kind: str, messages: tuple[Message, ...], prompt: str,
             tools: ToolsAsked, images: list[ImageRef]) -> GenerationRequest:
    if get_bool(obj, "logprobs", False):
        raise bad_request("'logprobs' are not supported here.", "logprobs")
    return GenerationRequest(kind, model, messages=messages, prompt=prompt, stream=get_bool(obj, "stream", True),
                             sampling=_sampling(obj.get("options")),
                             tools=replace(tools, response_format=_format(obj.get("format"))),
                             images=tuple(images), options=_think(obj.get("think")), documents=documents_field(obj))


def _text(obj: dict[str, Any], key: str) -> str:
    v = obj.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise bad_request(f"'{key}' must be a string.", key)
    return unicode_text(v, key)


def _message(m: Any, i: int, images: list[ImageRef], pending: list[ToolCall]) -> Message:
    param = f"messages[{i}]"
    if not isinstance(m, dict):
        raise bad_request(f"{param} must be an object.", param)
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise bad_request(f"{param}.role must be system, user, assistant or tool.", param)
    content = m.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise bad_request(f"{param}.content must be a string.", param)
    content = unicode_text(content, f"{param}.content")
    if m.get("images"):
        if role != "user":
            raise bad_request(f"{param}.images: only a user's message carries images.", param)
        _images(m["images"], i, f"{param}.images", images)
    if role == "tool":
        return _tool_result(m, param, content, pending)
    thinking = m.get("thinking")
    if thinking is not None and not isinstance(thinking, str):
        raise bad_request(f"{param}.thinking must be a string.", param)
    calls: tuple[ToolCall, ...] = ()
    if m.get("tool_calls"):
        if role != "assistant":
            raise bad_request(f"{param}.tool_calls: only an assistant's message carries tool calls.", param)
        given = parse_tool_calls(m["tool_calls"], param)
        # Ollama's calls carry no id: each gets one, so its result finds it
        calls = tuple(c if isinstance(m["tool_calls"][j].get("id"), str) and m["tool_calls"][j]["id"]
                      else ToolCall(f"call_{i}_{j}", c.name, c.arguments) for j, c in enumerate(given))
        pending.extend(calls)
    reasoning = unicode_text(thinking, f"{param}.thinking") if thinking and role == "assistant" else ""
    return Message(ROLES[role], content, reasoning=reasoning, tool_calls=calls)


def _tool_result(m: dict[str, Any], param: str, content: str, pending: list[ToolCall]) -> Message:
    """A tool's result, answering the call its `tool_call_id` names, else the oldest unanswered call of
    the tool `tool_name` (or `name`) names, else the oldest unanswered one."""
    name, call_id = m.get("tool_name", m.get("name")) or "", m.get("tool_call_id") or ""
    if not isinstance(name, str) or not isinstance(call_id, str):
        raise bad_request(f"{param}: 'tool_name' and 'tool_call_id' must be strings.", param)
    answered = next((c for c in pending if c.id == call_id), None) if call_id else \
        next((c for c in pending if c.name == name or not name), None)
    if answered is not None:
        pending.remove(answered)
        call_id, name = answered.id, name or answered.name
    return Message("tool", content, tool_call_id=unicode_text(call_id or f"call_{param}", param),
                   name=unicode_text(name, param))


def _images(raw: Any, at: int, where: str, images: list[ImageRef]) -> None:
    """Base64 images (Ollama sends the bytes, any format the door reads), to be read later as data: URLs."""
    if not isinstance(raw, list):
        raise bad_request(f"'{where}' must be an array of base64 strings.", where)
    for j, data in enumerate(raw):
        if not isinstance(data, str) or not data or not data.isascii():
            raise bad_request(f"{where}[{j}] must be an image as a base64 string.", where)
        images.append(_Image(at, j, f"data:;base64,{data}", f"{where}[{j}]"))


def _format(raw: Any) -> ResponseFormat | None:
    if raw is None or raw == "":
        return None
    if raw == "json":
        return ResponseFormat("json_object")
    if isinstance(raw, dict):
        return ResponseFormat("json_schema", schema_text(raw, "format"))
    raise bad_request("'format' is \"json\" or a JSON schema object.", "format")


def _think(raw: Any) -> TemplateOptions:
    """`think`: true (the model thinks), false (it does not: no thinking tokens), "low" / "medium" /
    "high" (its reasoning effort, as a budget where the template takes none), absent (the template's
    default)."""
    if raw is None:
        return TemplateOptions()
    if raw is True:
        return TemplateOptions(True)
    if raw is False:
        return TemplateOptions(False, "", 0)
    if isinstance(raw, str) and raw in REASONING_EFFORTS:
        return TemplateOptions(True, raw)
    raise bad_request("'think' is true, false, or one of \"low\", \"medium\", \"high\".", "think")


def _sampling(raw: Any) -> ServeSampling:
    """`options`, as far as they sample: the server's defaults for those left out."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise bad_request("'options' must be an object.", "options")
    w, d = "options", DEFAULTS
    if get_int(raw, "mirostat", 0, 0, w):
        raise bad_request("'options.mirostat' is not supported here (tokens are sampled with top_k, top_p, min_p "
                          "and temperature): leave it 0.", "options.mirostat")
    get_int(raw, "num_ctx", None, 1, w)  # the slots' context is set when the server starts (--ctx)
    predict = get_int(raw, "num_predict", None, -2, w)  # -1: no limit; -2: until the context is full
    window = get_int(raw, "repeat_last_n", d.repeat_last_n, -1, w)  # -1: the whole context
    seed = get_int(raw, "seed", None, None, w)
    try:
        return ServeSampling(
            temperature=get_float(raw, "temperature", d.temperature, 0.0, 5.0, w),
            top_p=get_float(raw, "top_p", d.top_p, 0.0, 1.0, w),
            top_k=get_int(raw, "top_k", d.top_k, 0, w, high=INT32_MAX),  # llama.cpp takes an int32
            min_p=get_float(raw, "min_p", d.min_p, 0.0, 1.0, w),
            repeat_penalty=get_float(raw, "repeat_penalty", d.repeat_penalty, 0.0, 10.0, w),
            repeat_last_n=MAX_REPEAT_WINDOW if window < 0 else window,
            frequency_penalty=get_float(raw, "frequency_penalty", 0.0, -2.0, 2.0, w),
            presence_penalty=get_float(raw, "presence_penalty", 0.0, -2.0, 2.0, w),
            seed=seed % 2**31 if seed is not None and seed >= 0 else -1,
            max_tokens=predict if predict is not None and predict > 0 else UNLIMITED,
            stop=stop_strings(raw.get("stop"), "options.stop"),
        )
    except ValueError as e:  # a repeat penalty of 0: a number in range for JSON, not for the sampler
        raise bad_request(f"'options': {e}.", "options") from None
