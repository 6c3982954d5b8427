"""One turn of a chat as the engine sends it. The one Message: the store's rows carry one
(`MessageRecord.turn`), the window and the server build them. Standard library only, so every
layer may use it."""

from __future__ import annotations

from dataclasses import dataclass

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Message:
    """A turn: its role, its text, and (an assistant's) thinking, kept apart from its content."""

    role: str
    content: str
    reasoning: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; a message is one of {', '.join(ROLES)}")
