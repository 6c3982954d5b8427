"""Whole conversations out of and into the history, and Prefill's JSON export format.

An ``ArchivedConversation`` is a chat without row ids: what an export holds and what an
import writes. ``read_archive`` and ``write_archive`` run inside a transaction of
``HistoryStore``; the JSON document is built by ``to_document``. What comes from a file is
checked by ``history_import`` before it becomes an ``ArchivedConversation``.
"""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefill.engine.message import ImagePart
from prefill.store.errors import ConversationNotFound
from prefill.store.records import (
    CONVERSATION_COLUMNS,
    MESSAGE_COLUMNS,
    AnswerVersion,
    ImageRef,
    KeptTurn,
    Role,
    conversation_from_row,
    images_to_json,
    kept_image_refs,
    message_from_row,
    to_json,
    versions_to_json,
)

FORMAT_NAME = "prefill-history"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ArchivedMessage:
    """One turn of an exported or imported chat (see ``records.MessageRecord``)."""

    role: Role
    content: str
    created_at: float
    reasoning: str = ""
    finish_reason: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict, hash=False)
    complete: bool = True
    versions: tuple[AnswerVersion, ...] = ()
    version: int = 0
    images: tuple[ImagePart, ...] = ()  # a user's message: the images it showed, bytes and all
    kept_images: tuple[ImagePart, ...] = ()  # the images of the turns its other versions keep (`later`)


@dataclass(frozen=True)
class ArchivedConversation:
    """One exported or imported chat with its messages in order (see ``records.ConversationRecord``)."""

    uid: str
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    model: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    messages: tuple[ArchivedMessage, ...] = ()


@dataclass(frozen=True)
class ImportResult:
    """What an import did.

    Attributes:
        imported: Chats added.
        skipped: Chats left out because a chat with the same uid was already here.
        messages: Messages added.
    """

    imported: int
    skipped: int
    messages: int


LoadImages = Callable[[Sequence[ImageRef]], tuple[ImagePart, ...]]


def read_archive(
    conn: sqlite3.Connection, conversation_ids: Sequence[int] | None, load_images: LoadImages | None = None
) -> list[ArchivedConversation]:
    """Return the given chats (None: all, oldest first) with their messages (and, with
    `load_images`, their images' bytes from the history's image files).

    Raises:
        ConversationNotFound: One of the ids is not here.
    """
    if conversation_ids is None:
        ids = [
            row[0] for row in conn.execute("SELECT id FROM conversations ORDER BY created_at, id")
        ]
    else:
        ids = list(conversation_ids)
    out = []
    for conversation_id in ids:
        row = conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)
        conv = conversation_from_row(row)
        rows = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY position",
            (conversation_id,),
        )
        messages = tuple(
            ArchivedMessage(
                role=m.role,
                content=m.content,
                created_at=m.created_at,
                reasoning=m.reasoning,
                finish_reason=m.finish_reason,
                figures=m.figures,
                complete=m.complete,
                versions=m.versions,
                version=m.version,
                images=load_images(m.images) if load_images is not None and m.images else (),
                kept_images=load_images(kept) if load_images is not None and (kept := kept_image_refs(m.versions))
                else (),
            )
            for m in map(message_from_row, rows)
        )
        out.append(
            ArchivedConversation(
                uid=conv.uid,
                title=conv.title,
                created_at=conv.created_at,
                updated_at=conv.updated_at,
                system_prompt=conv.system_prompt,
                model=conv.model,
                settings=conv.settings,
                messages=messages,
            )
        )
    return out


def write_archive(
    conn: sqlite3.Connection, conversations: Iterable[ArchivedConversation]
) -> ImportResult:
    """Add every chat whose uid is not here yet, as it was (times included).

    Call it inside one transaction: a failure part-way must leave nothing behind. The messages'
    images must be in the history's image files already (``HistoryStore.import_conversations``).
    """
    imported = skipped = messages = 0
    for conv in conversations:
        if conn.execute("SELECT 1 FROM conversations WHERE uid = ?", (conv.uid,)).fetchone():
            skipped += 1
            continue
        cursor = conn.execute(
            "INSERT INTO conversations (title, created_at, updated_at, system_prompt, model,"
            " settings, uid) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                conv.title,
                conv.created_at,
                conv.updated_at,
                conv.system_prompt,
                conv.model,
                to_json(conv.settings),
                conv.uid,
            ),
        )
        conversation_id = cursor.lastrowid
        conn.executemany(
            "INSERT INTO messages (conversation_id, position, role, content, reasoning,"
            " created_at, finish_reason, figures, complete, versions, version, images)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    conversation_id,
                    position,
                    m.role,
                    m.content,
                    m.reasoning,
                    m.created_at,
                    m.finish_reason,
                    to_json(m.figures),
                    int(m.complete),
                    versions_to_json(m.versions),
                    m.version,
                    images_to_json([ImageRef.of(i) for i in m.images]),
                )
                for position, m in enumerate(conv.messages)
            ],
        )
        imported += 1
        messages += len(conv.messages)
    return ImportResult(imported, skipped, messages)


def to_document(
    conversations: Iterable[ArchivedConversation], exported_at: float
) -> dict[str, Any]:
    """Build Prefill's JSON export: every field of every chat, times in seconds since the epoch.

    Images are kept once in ``images`` (by digest: base64 bytes, type and size) and named by digest
    from the messages that show them; a file without images has neither key, as before them."""
    conversations = list(conversations)
    images = {i.digest: i for conv in conversations for m in conv.messages for i in (*m.images, *m.kept_images)}
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": exported_at,
        "conversations": [
            {
                "id": conv.uid,
                "title": conv.title,
                "created_at": conv.created_at,
                "updated_at": conv.updated_at,
                "system_prompt": conv.system_prompt,
                "model": conv.model,
                "settings": dict(conv.settings),
                "messages": [
                    {
                        "role": m.role,
                        "content": m.content,
                        "reasoning": m.reasoning,
                        "created_at": m.created_at,
                        "finish_reason": m.finish_reason,
                        "figures": dict(m.figures),
                        "complete": m.complete,
                        # Only an answer regenerated or a question edited has them (their other
                        # versions hold the turns that followed them, "later"): older Prefills read the rest alike.
                        **({"versions": [_exported_version(v) for v in m.versions], "version": m.version}
                           if m.versions else {}),
                        **({"images": [i.digest for i in m.images]} if m.images else {}),
                    }
                    for m in conv.messages
                ],
            }
            for conv in conversations
        ],
        **({"images": {d: {"mime": i.mime, "width": i.width, "height": i.height,
                            "data": base64.b64encode(i.data).decode("ascii")} for d, i in images.items()}}
           if images else {}),
    }


def _exported_version(v: AnswerVersion) -> dict[str, Any]:
    """A version as the export writes it: the turns a version keeps name their images by
    digest, as messages do."""
    out = v.as_dict()
    if v.later:
        out["later"] = [_exported_turn(t) for t in v.later]
    return out


def _exported_turn(t: KeptTurn) -> dict[str, Any]:
    out = t.as_dict()
    del out["versions"], out["version"], out["images"]
    return {**out, **({"versions": [_exported_version(v) for v in t.versions], "version": t.version}
                      if t.versions else {}),
            **({"images": [i.digest for i in t.images]} if t.images else {})}
