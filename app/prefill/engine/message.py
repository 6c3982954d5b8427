"""One turn of a chat as the engine sends it. The one Message: the store's rows carry one
(`MessageRecord.turn`), the window and the server build them. Standard library only, so every
layer may use it."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import string
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = get_args(Role)


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
class ImagePart:
    """An image in a turn: its encoded bytes as they passed the door (`engine/vision/image_door.py`
    decodes and checks them), their type, and the size they decode to. Immutable and hashable, so a
    request holding one stays a cache key; `digest` names it in the prompt and in the KV cache."""

    data: bytes = field(repr=False)
    mime: str = "image/png"
    width: int = 0
    height: int = 0

    @property
    def digest(self) -> str:
        """SHA-256 of the bytes, in hex: the same image gets the same name in every chat."""
        cached: str | None = self.__dict__.get("_digest")
        if cached is None:
            cached = hashlib.sha256(self.data).hexdigest()
            object.__setattr__(self, "_digest", cached)
        return cached

    @property
    def marker(self) -> str:
        """What stands for the image in the prompt's text: the chat engine puts the image's tokens there."""
        return f"<__image_{self.digest[:32]}__>"


IMAGE_MARKER = re.compile(r"<__image_([0-9a-f]{32})__>")


@dataclass(frozen=True)
class Message:
    """A turn: its role, its text, and (an assistant's) thinking, kept apart from its content.

    An assistant's turn may carry the tool calls it made (`tool_calls`); a `tool` turn is one call's
    result, naming the call it answers (`tool_call_id`) and the function (`name`)."""

    role: Role
    content: str
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""
    images: tuple[ImagePart, ...] = ()  # shown to the model before the text (a user's turn)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; a message is one of {', '.join(ROLES)}")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.images, tuple):
            object.__setattr__(self, "images", tuple(self.images))

    def with_image_markers(self) -> Message:
        """The message as a template renders it: each image's marker on a line of its own before the
        text (templates see text only; the chat engine puts the images' tokens where the markers are)."""
        if not self.images:
            return self
        markers = "\n".join(img.marker for img in self.images)
        return replace(self, content=f"{markers}\n{self.content}" if self.content else markers, images=())


def images_of(messages: Sequence[Message]) -> dict[str, ImagePart]:
    """The images of a conversation by digest (the key their markers carry)."""
    return {img.digest[:32]: img for m in messages for img in m.images}
