"""One turn's inputs, as every backend takes them: the `ChatRequest`.

The messages, how to sample, what to do when the chat outgrows the context, and the template's
switches travel together, so a new input to a turn (tools, a response format, attachments) is a
field here and the places that read it, not a signature edited in every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from prefill.engine.message import Message
from prefill.engine.settings import OverflowSettings, SamplingSettings

REASONING_EFFORTS = ("low", "medium", "high")


@dataclass(frozen=True)
class TemplateOptions:
    """Switches a template may take: `think` (None: the template's default) and gpt-oss's reasoning effort."""

    think: bool | None = None
    reasoning_effort: str = ""

    def __post_init__(self) -> None:
        if self.reasoning_effort and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning effort is one of {', '.join(REASONING_EFFORTS)}")


@dataclass(frozen=True)
class ChatRequest:
    """A conversation to answer and how. `messages` ends with the user's turn; the rest has defaults.

    Attributes:
        messages: the conversation so far (kept as a tuple, so a request can be a cache key).
        sampling: how to pick tokens, with the answer's length and stop strings.
        overflow: what to do when the conversation does not fit the context.
        options: the chat template's switches (thinking, reasoning effort).
    """

    messages: tuple[Message, ...]
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    overflow: OverflowSettings = field(default_factory=OverflowSettings)
    options: TemplateOptions = field(default_factory=TemplateOptions)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))

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
