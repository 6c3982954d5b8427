"""Render a chat with the model's own template, as transformers would, in a bounded sandbox.

A GGUF carries its chat template as Jinja source written by whoever made the file. It is
rendered with the semantics its author wrote it for (see `template_sandbox`): a template that
reaches for Python internals raises `TemplateError` and never runs code, one that refuses the
conversation (`raise_exception`) says why in words, and one that runs too long or writes too
much is stopped.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError

from prefill.engine.errors import TemplateError, TemplateRefusal
from prefill.engine.message import Message
from prefill.engine.prompt.sandbox import (
    MAX_RENDER_SECONDS,
    TemplateRefused,
    TemplateTooCostly,
    make_environment,
    render_bounded,
)
from prefill.engine.request import TemplateOptions


def merge_turns(messages: Sequence[Message]) -> list[Message]:
    """Consecutive messages of one role become one, so a template that checks alternation accepts a
    chat whose earlier answer failed (user, user) instead of refusing it from then on."""
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        if (prev is not None and prev.role == m.role and m.role in ("user", "assistant")
                and not prev.tool_calls and not m.tool_calls):
            out[-1] = Message(m.role, f"{prev.content}\n\n{m.content}", prev.reasoning or m.reasoning)
        else:
            out.append(m)
    return out


def fold_system(messages: Sequence[Message]) -> list[Message]:
    """The system prompt put at the head of the first user message, for templates without a
    system role (Gemma's refuse one)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    rest = [m for m in messages if m.role != "system"]
    for i, m in enumerate(rest):
        if m.role == "user":
            rest[i] = Message("user", f"{system}\n\n{m.content}" if system else m.content)
            break
    return rest


def _message_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.reasoning and m.role == "assistant":
        # Under both names templates read it by: `reasoning_content` (Qwen3…) and `thinking` (gpt-oss).
        d["thinking"] = d["reasoning_content"] = m.reasoning
    if m.tool_calls:  # arguments as an object, as transformers gives them
        d["tool_calls"] = [{"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments_object()}} for c in m.tool_calls]
    if m.role == "tool":
        d["tool_call_id"] = m.tool_call_id
        if m.name:
            d["name"] = m.name
    return d


def template_variables(
    messages: Sequence[Message], add_generation_prompt: bool, options: TemplateOptions,
    special_tokens: Mapping[str, str], tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """What `apply_chat_template` passes: messages, the special tokens, the tools (OpenAI function
    schemas; None when there are none, as transformers passes it), no documents, the date, and the
    switches the user set (unset ones are left to the template's own default)."""
    today = datetime.date.today()
    v: dict[str, Any] = {
        **special_tokens,
        "messages": [_message_dict(m) for m in messages],
        "add_generation_prompt": add_generation_prompt,
        "tools": [dict(t) for t in tools] or None,
        "documents": None,
        "date_string": today.strftime("%d %b %Y"),
        "current_date": today.isoformat(),
    }
    if options.think is not None:
        v["enable_thinking"] = options.think
    if options.reasoning_effort:
        v["reasoning_effort"] = options.reasoning_effort
    return v


class ChatTemplate:
    """A compiled chat template and the special tokens it is given."""

    def __init__(
        self, source: str, special_tokens: Mapping[str, str] | None = None,
        max_seconds: float = MAX_RENDER_SECONDS,
    ):
        self.source = source
        self.max_seconds = max_seconds
        self.special_tokens = dict(special_tokens or {})
        try:
            self._template = make_environment().from_string(source)
        except jinja2.TemplateError as e:
            raise TemplateError(f"the model's chat template does not compile: {e}") from e
        self.takes_thinking_switch = "enable_thinking" in source
        self.takes_reasoning_effort = "reasoning_effort" in source

    @property
    def bos_token(self) -> str:
        return self.special_tokens.get("bos_token", "")

    def variables(
        self, messages: Sequence[Message], add_generation_prompt: bool, options: TemplateOptions,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        return template_variables(messages, add_generation_prompt, options, self.special_tokens, tools)

    @property
    def takes_tools(self) -> bool:
        """Whether the template renders the `tools` it is given (one that never reads them gets them
        described in the system prompt instead)."""
        return "tools" in self.source

    def render(
        self, messages: Sequence[Message], add_generation_prompt: bool = True,
        options: TemplateOptions | None = None, cancel: threading.Event | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        """The prompt text for `messages`, ending with the assistant's turn opener.

        Raises:
            TemplateError: the template refused the conversation, failed, took too long, wrote
                too much, or tried to leave its sandbox.
        """
        variables = self.variables(messages, add_generation_prompt, options or TemplateOptions(), tools)
        try:
            try:
                return render_bounded(self._template, variables, self.max_seconds, cancel)
            except (jinja2.TemplateError, TypeError):
                if variables["tools"] is not None or not self.takes_tools:
                    raise
                # Some templates iterate `tools` unguarded and fail on transformers' None: no tools is [].
                return render_bounded(self._template, {**variables, "tools": []}, self.max_seconds, cancel)
        except TemplateRefused as e:
            raise TemplateRefusal(f"the chat template refused the conversation: {e}") from e
        except TemplateTooCostly as e:
            raise TemplateError(str(e)) from e
        except SecurityError as e:
            raise TemplateError(
                f"the model's chat template tried to leave its sandbox and was stopped ({e})"
            ) from e
        except jinja2.TemplateError as e:
            raise TemplateError(f"the model's chat template failed: {e}") from e
        except RecursionError as e:
            raise TemplateError("the model's chat template recursed too deeply") from e
        except Exception as e:  # a template can raise anything from inside the sandbox
            raise TemplateError(f"the model's chat template failed: {type(e).__name__}: {e}") from e
