"""Rows of the chat history as frozen dataclasses, and the automatic title."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from prefill.engine.message import ImagePart, Message

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = get_args(Role)

DEFAULT_TITLE = "New chat"
TITLE_LENGTH = 48


@dataclass(frozen=True)
class ConversationRecord:
    """One chat.

    Attributes:
        id: Row id.
        title: Shown in the chat list.
        created_at: Seconds since the epoch.
        updated_at: Seconds since the epoch of the last change to it or its messages.
        system_prompt: The system prompt sent before the messages ("" = none).
        model: Path or name of the model last used in it ("" = none yet).
        settings: Generation settings used in it (free-form JSON object).
        uid: Its lasting identity across databases: exports carry it, imports skip a chat
            whose uid is already here.
    """

    id: int
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    model: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    uid: str = ""


@dataclass(frozen=True)
class AnswerVersion:
    """One version of a message, kept beside the one shown: an answer's (Regenerate keeps every answer)
    or a question's (an edit keeps the words it replaced), each with the turns that followed it.

    Attributes:
        content: The text.
        reasoning: Its thinking ("" = none).
        finish_reason: Why it ended, None if unknown.
        figures: Its figures, its tool calls ("tool_calls") included.
        complete: False for an answer cut off by a crash.
        later: A version not shown: the turns that followed it, as they were (its branch of the chat);
            they come back as messages when it is shown again. () for the one shown, and for a version
            that was the chat's last message.
    """

    content: str
    reasoning: str = ""
    finish_reason: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict, hash=False)
    complete: bool = True
    later: tuple[KeptTurn, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The version as a JSON object (the column's and the export's shape)."""
        return {"content": self.content, "reasoning": self.reasoning, "finish_reason": self.finish_reason,
                "figures": dict(self.figures), "complete": self.complete,
                **({"later": [t.as_dict() for t in self.later]} if self.later else {})}


@dataclass(frozen=True)
class KeptTurn:
    """A message kept inside another version of a question or an answer: one of the turns that followed
    it (a `MessageRecord` without its row, its versions and images as they were).

    Attributes are those of `MessageRecord` of the same names.
    """

    role: Role
    content: str
    created_at: float
    reasoning: str = ""
    finish_reason: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict, hash=False)
    complete: bool = True
    versions: tuple[AnswerVersion, ...] = ()
    version: int = 0
    images: tuple[ImageRef, ...] = ()

    @classmethod
    def of(cls, m: MessageRecord) -> KeptTurn:
        return cls(m.role, m.content, m.created_at, m.reasoning, m.finish_reason, m.figures, m.complete,
                   m.versions, m.version, m.images)

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "created_at": self.created_at,
                "reasoning": self.reasoning, "finish_reason": self.finish_reason, "figures": dict(self.figures),
                "complete": self.complete, "versions": [v.as_dict() for v in self.versions],
                "version": self.version, "images": [i.as_dict() for i in self.images]}

    def image_refs(self) -> list[ImageRef]:
        """Its images and those of every turn kept inside its own versions."""
        return [*self.images, *(r for v in self.versions for t in v.later for r in t.image_refs())]


@dataclass(frozen=True)
class ImageRef:
    """An image a message holds, as the history refers to it: the file is ``images/<digest>`` beside
    the database (``store/images.py``).

    Attributes:
        digest: SHA-256 of the image's bytes, in hex (``ImagePart.digest``).
        mime: Its type ("image/png", "image/jpeg", "image/webp").
        width: Its width in pixels.
        height: Its height in pixels.
        size: Its bytes.
    """

    digest: str
    mime: str
    width: int
    height: int
    size: int

    @classmethod
    def of(cls, image: ImagePart) -> ImageRef:
        """The reference to `image` once it is kept."""
        return cls(image.digest, image.mime, image.width, image.height, len(image.data))

    def as_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, "mime": self.mime, "width": self.width, "height": self.height,
                "size": self.size}


@dataclass(frozen=True)
class MessageRecord:
    """One stored turn of a chat: the turn itself (`turn`, the engine's one `Message`) and where
    and when it was kept.

    Attributes:
        id: Row id.
        conversation_id: The chat it belongs to.
        position: Sort key within the chat (increasing, may have gaps).
        role: "system", "user" or "assistant".
        content: The text.
        created_at: Seconds since the epoch.
        finish_reason: Why the answer ended ("stop", "length", "cancelled"…), None if unknown.
        figures: Engine figures for this answer (prompt_tokens, ttft_ms, decode_tps, …);
            free-form so the engine can add keys without a migration.
        complete: False while an answer is streaming, and forever for one cut off by a crash.
        reasoning: A reasoning model's thinking before the answer, kept apart from
            ``content`` ("" = none).
        versions: An answer's or a question's other versions, in order, without the one shown (the
            fields above), each with the turns that followed it.
        version: Where the shown one stands among all of them: 0 ≤ version ≤ len(versions).
        images: The images a user's message showed the model, in order (their bytes are files:
            ``HistoryStore.message_images``).
    """

    id: int
    conversation_id: int
    position: int
    role: Role
    content: str
    created_at: float
    finish_reason: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict, hash=False)
    complete: bool = True
    reasoning: str = ""
    versions: tuple[AnswerVersion, ...] = ()
    version: int = 0
    images: tuple[ImageRef, ...] = ()

    @property
    def shown(self) -> AnswerVersion:
        """The version shown (the record's own fields)."""
        return AnswerVersion(self.content, self.reasoning, self.finish_reason, self.figures, self.complete)

    def all_versions(self) -> list[AnswerVersion]:
        """Every version in order, the shown one at ``version``."""
        return [*self.versions[: self.version], self.shown, *self.versions[self.version :]]

    @property
    def turn(self) -> Message:
        """The turn as the engine sends it."""
        return Message(self.role, self.content, self.reasoning)


CONVERSATION_COLUMNS = "id, title, created_at, updated_at, system_prompt, model, settings, uid"
MESSAGE_COLUMNS = (
    "id, conversation_id, position, role, content, created_at, finish_reason, figures, complete,"
    " reasoning, versions, version, images"
)
MAX_VERSIONS = 1000  # of one answer: paging past this many is not a use anyone has
MAX_KEPT_DEPTH = 64  # versions kept inside turns kept inside versions…: a question edited inside an edited branch


def check_role(role: str) -> Role:
    """Return ``role`` if it is a known role.

    Raises:
        ValueError: For anything but "system", "user" or "assistant".
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    return role  # type: ignore[return-value]


def to_json(data: Mapping[str, Any] | None) -> str:
    """Encode a settings or figures mapping for a TEXT column.

    Raises:
        TypeError: If a value is not JSON-serialisable.
    """
    return json.dumps(dict(data or {}), ensure_ascii=False, sort_keys=True)


def from_json(text: str | None) -> dict[str, Any]:
    """Decode a JSON object column; anything unreadable reads as an empty mapping."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def versions_to_json(versions: Sequence[AnswerVersion]) -> str:
    """Encode an answer's other versions for the ``versions`` column.

    Raises:
        TypeError: If a figure is not JSON-serialisable.
    """
    return json.dumps([v.as_dict() for v in versions], ensure_ascii=False, sort_keys=True)


def _json_list(text: str | None) -> list[Any]:
    """A JSON list column's entries; [] for an empty, unreadable or non-list one."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def versions_from_json(text: str | None) -> tuple[AnswerVersion, ...]:
    """Decode the ``versions`` column; an entry that is not a version is left out (the column is ours,
    written by ``versions_to_json``, so that is a damaged file, not a shape to honour)."""
    return _versions(_json_list(text), 0)


def _versions(raw: list[Any], depth: int) -> tuple[AnswerVersion, ...]:
    out = []
    for v in raw[:MAX_VERSIONS]:
        if not isinstance(v, dict) or not isinstance(v.get("content"), str):
            continue
        reason, figures, later = v.get("finish_reason"), v.get("figures"), v.get("later")
        out.append(AnswerVersion(
            v["content"],
            v["reasoning"] if isinstance(v.get("reasoning"), str) else "",
            reason if isinstance(reason, str) else None,
            figures if isinstance(figures, dict) else {},
            v["complete"] if isinstance(v.get("complete"), bool) else True,
            _kept_turns(later, depth + 1) if isinstance(later, list) and depth < MAX_KEPT_DEPTH else (),
        ))
    return tuple(out)


def _kept_turns(raw: list[Any], depth: int) -> tuple[KeptTurn, ...]:
    out = []
    for t in raw:
        if not isinstance(t, dict) or t.get("role") not in ROLES or not isinstance(t.get("content"), str):
            continue
        when, reason, figures = t.get("created_at"), t.get("finish_reason"), t.get("figures")
        versions = _versions(t["versions"], depth) if isinstance(t.get("versions"), list) else ()
        version = t.get("version")
        out.append(KeptTurn(
            t["role"], t["content"],
            float(when) if isinstance(when, int | float) and not isinstance(when, bool) else 0.0,
            t["reasoning"] if isinstance(t.get("reasoning"), str) else "",
            reason if isinstance(reason, str) else None,
            figures if isinstance(figures, dict) else {},
            t["complete"] if isinstance(t.get("complete"), bool) else True,
            versions,
            min(max(0, version), len(versions)) if isinstance(version, int) and not isinstance(version, bool) else 0,
            _image_refs(t["images"]) if isinstance(t.get("images"), list) else (),
        ))
    return tuple(out)


def kept_image_refs(versions: Sequence[AnswerVersion]) -> list[ImageRef]:
    """The images of every turn kept inside these versions (at any depth)."""
    return [r for v in versions for t in v.later for r in t.image_refs()]


def images_to_json(images: Sequence[ImageRef]) -> str:
    """Encode a message's image references for the ``images`` column."""
    return json.dumps([i.as_dict() for i in images], sort_keys=True)


DIGEST = re.compile(r"[0-9a-f]{64}")  # an image's SHA-256 in hex: its name in images/


def images_from_json(text: str | None) -> tuple[ImageRef, ...]:
    """Decode the ``images`` column; an entry that is not a reference is left out (a damaged file)."""
    return _image_refs(_json_list(text))


def _image_refs(raw: list[Any]) -> tuple[ImageRef, ...]:
    out = []
    for v in raw:
        if not isinstance(v, dict) or not isinstance(v.get("digest"), str) or not DIGEST.fullmatch(v["digest"]):
            continue
        numbers: list[Any] = [v.get(k) for k in ("width", "height", "size")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            continue
        mime = v.get("mime")
        out.append(ImageRef(v["digest"], mime if isinstance(mime, str) else "image/png", *numbers))
    return tuple(out)


def conversation_from_row(row: sqlite3.Row) -> ConversationRecord:
    """Build a ConversationRecord from a row selected with CONVERSATION_COLUMNS."""
    return ConversationRecord(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        system_prompt=row["system_prompt"],
        model=row["model"],
        settings=from_json(row["settings"]),
        uid=row["uid"],
    )


def message_from_row(row: sqlite3.Row) -> MessageRecord:
    """Build a MessageRecord from a row selected with MESSAGE_COLUMNS."""
    return MessageRecord(
        id=row["id"],
        conversation_id=row["conversation_id"],
        position=row["position"],
        role=row["role"],
        content=row["content"],
        created_at=row["created_at"],
        finish_reason=row["finish_reason"],
        figures=from_json(row["figures"]),
        complete=bool(row["complete"]),
        reasoning=row["reasoning"],
        versions=(versions := versions_from_json(row["versions"])),
        version=min(max(0, int(row["version"] or 0)), len(versions)),
        images=images_from_json(row["images"]),
    )


def title_from_text(text: str, limit: int = TITLE_LENGTH) -> str:
    """Make a chat title from the first user message.

    Whitespace is collapsed; a text longer than ``limit`` is cut on a word boundary
    (or mid-word when the first word alone is too long) and ends with "…".

    Args:
        text: The message.
        limit: The longest title returned, the ellipsis included.

    Returns:
        The title, "" when the text holds only whitespace.
    """
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
