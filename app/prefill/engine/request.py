"""One turn's inputs, as every backend takes them: the `ChatRequest`.

The messages, how to sample, what to do when the chat outgrows the context, and the template's
switches travel together, so a new input to a turn (tools, a response format, attachments) is a
field here and the places that read it, not a signature edited in every backend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefill.engine.message import Message
from prefill.engine.settings import OverflowSettings, SamplingSettings

REASONING_EFFORTS = ("low", "medium", "high")
TOOL_CHOICES = ("auto", "none", "required")  # or the name of one function
MAX_REASONING_BUDGET = 1_048_576


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, what it does, and its parameters' JSON schema (as
    JSON text, so a request stays immutable and hashable)."""

    name: str
    description: str = ""
    parameters: str = '{"type": "object", "properties": {}}'

    def as_openai(self) -> dict[str, Any]:
        """The OpenAI function schema, as templates are given it (`tools` in apply_chat_template)."""
        function: dict[str, Any] = {"name": self.name, "parameters": json.loads(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ResponseFormat:
    """An answer that must be JSON: any object (`json_object`), or one that fits `schema` (JSON text)."""

    kind: str  # "json_object" or "json_schema"
    schema: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("json_object", "json_schema"):
            raise ValueError("a response format is json_object or json_schema")
        if self.kind == "json_schema" and not self.schema:
            raise ValueError("a json_schema response format needs its schema")


@dataclass(frozen=True)
class TemplateOptions:
    """How a reasoning model thinks: the template's switches, `think` (None: the template's default)
    and gpt-oss's reasoning effort, and a budget of thinking tokens (None: no limit; 0: no thinking),
    which the decode loops keep (prompt/thinking_budget.py)."""

    think: bool | None = None
    reasoning_effort: str = ""
    reasoning_budget: int | None = None

    def __post_init__(self) -> None:
        if self.reasoning_effort and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning effort is one of {', '.join(REASONING_EFFORTS)}")
        if self.reasoning_budget is not None and not 0 <= self.reasoning_budget <= MAX_REASONING_BUDGET:
            raise ValueError(f"a reasoning budget is 0 to {MAX_REASONING_BUDGET:,} tokens")


@dataclass(frozen=True)
class ChatRequest:
    """A conversation to answer and how. `messages` ends with the user's turn; the rest has defaults.

    Attributes:
        messages: the conversation so far (kept as a tuple, so a request can be a cache key).
        sampling: how to pick tokens, with the answer's length and stop strings.
        overflow: what to do when the conversation does not fit the context.
        options: the chat template's switches (thinking, reasoning effort).
        tools: the functions the model may call (none: it can only talk).
        tool_choice: "auto" (the model decides), "none", "required" (it must call one), or one
            function's name (it must call that one).
        response_format: the answer must be JSON (fitting a schema), or None for free text.
        parallel_tool_calls: False: at most one call in the answer (the grammar then lets it only end).
    """

    messages: tuple[Message, ...]
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    overflow: OverflowSettings = field(default_factory=OverflowSettings)
    options: TemplateOptions = field(default_factory=TemplateOptions)
    tools: tuple[Tool, ...] = ()
    tool_choice: str = "auto"
    response_format: ResponseFormat | None = None
    parallel_tool_calls: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        names = {t.name for t in self.tools}
        if self.tool_choice not in TOOL_CHOICES and self.tool_choice not in names:
            raise ValueError(f"tool_choice {self.tool_choice!r} is none of {', '.join(TOOL_CHOICES)} "
                             "nor the name of a tool given")

    @property
    def offered_tools(self) -> tuple[Tool, ...]:
        """The tools the template is shown: none when tool_choice is "none"."""
        return () if self.tool_choice == "none" else self.tools

    @property
    def may_constrain(self) -> bool:
        """Whether a grammar may keep the answer in: tools offered or a response format asked for
        (`prompt.grammar.constraint_for` gives None without either)."""
        return bool(self.offered_tools) or self.response_format is not None

    @classmethod
    def of(
        cls, messages: Sequence[Message], sampling: SamplingSettings | None = None,
        overflow: OverflowSettings | None = None, options: TemplateOptions | None = None,
    ) -> ChatRequest:
        """A request for `messages`; a field given as None keeps its default."""
        return cls(tuple(messages), sampling or SamplingSettings(), overflow or OverflowSettings(),
                   options or TemplateOptions())

    def with_messages(self, messages: Sequence[Message]) -> ChatRequest:
        """The same request for other messages (a fitted or extended conversation)."""
        return replace(self, messages=tuple(messages))
