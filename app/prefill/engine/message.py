"""One turn of a chat as the engine sends it. The one Message: the store's rows carry one
(`MessageRecord.turn`), the window and the server build them. Standard library only, so every
layer may use it."""

from __future__ import annotations

import json
import secrets
import string
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


_ID_ALPHABET = string.ascii_letters + string.digits


def new_call_id() -> str:
    """A call id as OpenAI writes them: "call_" and 24 random letters and digits."""
    return "call_" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(24))


@dataclass(frozen=True)
class ToolCall:
    """A function the model asked to call: the call's id, the function's name, and its arguments as
    JSON text (as OpenAI's API carries them; `arguments_object` is what templates are given)."""

    id: str
    name: str
    arguments: str = "{}"

    def arguments_object(self) -> Any:
        """The arguments parsed (a template iterates them as transformers gives them); text that is
        not JSON is passed on as it is."""
        try:
            return json.loads(self.arguments)
        except ValueError:
            return self.arguments

    def as_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Message:
    """A turn: its role, its text, and (an assistant's) thinking, kept apart from its content.

    An assistant's turn may carry the tool calls it made (`tool_calls`); a `tool` turn is one call's
    result, naming the call it answers (`tool_call_id`) and the function (`name`)."""

    role: str
    content: str
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; a message is one of {', '.join(ROLES)}")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
