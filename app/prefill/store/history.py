"""The chat history: conversations and messages in one SQLite file.

``HistoryStore`` is meant for one worker thread. It opens its connection lazily, on first
use, in the thread that uses it; SQLite's ``check_same_thread`` then rejects use from any
other thread. Every write is one transaction. The file is in WAL mode with
``synchronous=NORMAL``: a killed process loses nothing that was committed, and a streamed
answer loses at most the text since the last ``update_answer``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

import platformdirs

from prefill.engine.message import ImagePart
from prefill.store import db, search
from prefill.store.archive import ArchivedConversation, ImportResult, read_archive, write_archive
from prefill.store.errors import (
    ConversationNotFound,
    MessageNotFound,
    StoreClosed,
)
from prefill.store.images import IMAGES_FOLDER, ImageFiles
from prefill.store.records import (
    CONVERSATION_COLUMNS,
    DEFAULT_TITLE,
    MAX_VERSIONS,
    MESSAGE_COLUMNS,
    AnswerVersion,
    ConversationRecord,
    KeptTurn,
    MessageRecord,
    check_role,
    conversation_from_row,
    images_from_json,
    images_to_json,
    kept_image_refs,
    message_from_row,
    title_from_text,
    to_json,
    versions_from_json,
    versions_to_json,
)
from prefill.store.schema import new_uid
from prefill.store.search import SearchHit

HISTORY_FILE = "history.sqlite3"


def default_history_path() -> Path:
    """Return where the history lives: the platform's data folder for "prefill"."""
    return Path(platformdirs.user_data_dir("prefill", appauthor=False)) / HISTORY_FILE


class HistoryStore:
    """Chat history on disk.

    Args:
        path: The database file; created with its folder when missing.
            Defaults to ``default_history_path()``.
        use_fts: Keep a full-text index for search. None: when SQLite has FTS5.
        clock: Returns seconds since the epoch; tests pass their own.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        use_fts: bool | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.path = Path(path) if path is not None else default_history_path()
        self.use_fts = search.fts5_available() if use_fts is None else use_fts
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self.images = ImageFiles(self.path.parent / IMAGES_FOLDER)  # what the messages' images refer to

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; later calls raise StoreClosed. Closing twice is harmless.

        Call it in the thread that used the store: SQLite refuses any other.
        """
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosed(f"the history at {self.path} is closed")
        if self._conn is None:
            self._conn = db.connect(self.path, self.use_fts)
        return self._conn

    def create_conversation(
        self,
        title: str = DEFAULT_TITLE,
        system_prompt: str = "",
        model: str = "",
        settings: Mapping[str, Any] | None = None,
    ) -> ConversationRecord:
        """Start a chat and return it."""
        now = self._clock()
        with db.transaction(self._db) as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt,"
                " model, settings, uid) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (title, now, now, system_prompt, model, to_json(settings), new_uid()),
            )
            return self._conversation(conn, int(cursor.lastrowid or 0))

    def conversation(self, conversation_id: int) -> ConversationRecord:
        """Return one chat. Raises ConversationNotFound."""
        return self._conversation(self._db, conversation_id)

    def list_conversations(self) -> list[ConversationRecord]:
        """Return every chat, the most recently updated first."""
        rows = self._db.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations ORDER BY updated_at DESC, id DESC"
        )
        return [conversation_from_row(row) for row in rows]

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        """Set a chat's title. Raises ConversationNotFound."""
        self._update_conversation(conversation_id, "title", title)

    def set_system_prompt(self, conversation_id: int, system_prompt: str) -> None:
        """Set a chat's system prompt. Raises ConversationNotFound."""
        self._update_conversation(conversation_id, "system_prompt", system_prompt)

    def set_conversation_model(self, conversation_id: int, model: str) -> None:
        """Record the model (path or name) a chat now uses. Raises ConversationNotFound."""
        self._update_conversation(conversation_id, "model", model)

    def set_conversation_settings(self, conversation_id: int, settings: Mapping[str, Any]) -> None:
        """Record the generation settings a chat uses (a JSON-serialisable mapping).

        Raises:
            ConversationNotFound: No such chat.
            TypeError: A value is not JSON-serialisable.
        """
        self._update_conversation(conversation_id, "settings", to_json(settings))

    def delete_conversation(self, conversation_id: int) -> None:
        """Delete a chat and all its messages. Raises ConversationNotFound."""
        with db.transaction(self._db) as conn:
            found = conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount
        if not found:
            raise ConversationNotFound(conversation_id)
        self.sweep_images()

    def _update_conversation(self, conversation_id: int, column: str, value: object) -> None:
        # ``column`` is always a literal from this class, never user input.
        with db.transaction(self._db) as conn:
            cursor = conn.execute(
                f"UPDATE conversations SET {column} = ?, updated_at = ? WHERE id = ?",
                (value, self._clock(), conversation_id),
            )
            if cursor.rowcount:
                return
        raise ConversationNotFound(conversation_id)

    @staticmethod
    def _conversation(conn: sqlite3.Connection, conversation_id: int) -> ConversationRecord:
        row = conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)
        return conversation_from_row(row)

    def messages(
        self, conversation_id: int, last: int | None = None, before: int | None = None
    ) -> list[MessageRecord]:
        """Return a chat's messages in order: all, the `last` N, or those before position `before`.
        (A long chat opens with its last screen, then the rest.) Raises ConversationNotFound."""
        conn = self._db
        self._conversation(conn, conversation_id)
        where, args = "conversation_id = ?", [conversation_id]
        if before is not None:
            where, args = where + " AND position < ?", [*args, before]
        if last is None:
            rows = conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY position", args)
            return [message_from_row(row) for row in rows]
        rows = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY position DESC LIMIT ?", [*args, last]
        )
        return [message_from_row(row) for row in reversed(rows.fetchall())]

    def message(self, message_id: int) -> MessageRecord:
        """Return one message. Raises MessageNotFound."""
        return self._message(self._db, message_id)

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        *,
        finish_reason: str | None = None,
        figures: Mapping[str, Any] | None = None,
        complete: bool = True,
        reasoning: str = "",
        images: Sequence[ImagePart] = (),
    ) -> MessageRecord:
        """Append a message to a chat and return it.

        The first user message of a chat still titled "New chat" also names the chat
        (see ``title_from_text``). ``reasoning`` is a reasoning model's thinking; ``images``
        (checked at the image door) are kept as files by digest before the row refers to them.

        Raises:
            ConversationNotFound: No such chat.
            ValueError: ``role`` is not "system", "user" or "assistant".
            OSError: An image could not be written.
        """
        check_role(role)
        refs = images_to_json([self.images.put(i) for i in images])
        with db.transaction(self._db) as conn:
            message_id = self._append(
                conn, conversation_id, role, content, finish_reason, figures, complete, reasoning, refs
            )
            if role == "user":
                self._title_from_first_user_message(conn, conversation_id, content)
            return self._message(conn, message_id)

    def edit_message(self, message_id: int, content: str) -> MessageRecord:
        """Give a question (or an answer) new words as a new version of it: the words it had and every
        message after it are kept as its version before (paged back with ``show_version``); it shows the
        new words, with nothing after it yet (the answer to them is generated anew). A summary (a
        "system" message) has its text replaced in place. Nothing is deleted.

        Raises:
            MessageNotFound: No such message.
        """
        with db.transaction(self._db) as conn:
            message = self._message(conn, message_id)
            if message.role in ("user", "assistant"):
                every = [*self._kept_shown(conn, message), AnswerVersion(content)][-MAX_VERSIONS:]
                return self._show_kept(conn, message, every, len(every) - 1)
            conn.execute(
                "UPDATE messages SET content = ?, complete = 1 WHERE id = ?", (content, message_id)
            )
            self._touch(conn, message.conversation_id)
            return self._message(conn, message_id)

    def delete_message(self, message_id: int) -> None:
        """Delete one message. Raises MessageNotFound."""
        with db.transaction(self._db) as conn:
            message = self._message(conn, message_id)
            conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            self._touch(conn, message.conversation_id)
        if message.images or kept_image_refs(message.versions):  # its own, or those of the turns it kept
            self.sweep_images()

    def message_images(self, message: MessageRecord) -> tuple[ImagePart, ...]:
        """The images of a stored message, read from their files (one missing or damaged is left out)."""
        return self.images.load_all(message.images)

    def sweep_images(self) -> int:
        """Remove the image files no message refers to any more (after a delete; an image another
        chat still shows stays); return how many went."""
        used = {ref.digest for (text,) in self._db.execute("SELECT images FROM messages WHERE images != '[]'")
                for ref in images_from_json(text)}
        # and the images of the turns other versions keep
        used |= {ref.digest for (text,) in self._db.execute("SELECT versions FROM messages WHERE versions LIKE"
                                                            " '%\"later\"%'")
                 for ref in kept_image_refs(versions_from_json(text))}
        return self.images.sweep(used)

    def delete_messages_after(self, message_id: int) -> int:
        """Delete every message after this one in its chat; return how many went.

        Raises:
            MessageNotFound: No such message.
        """
        with db.transaction(self._db) as conn:
            gone = self._delete_after(conn, message_id)
        self.sweep_images()
        return gone

    def begin_answer(self, conversation_id: int) -> int:
        """Append an empty, incomplete assistant message and return its id.

        Raises:
            ConversationNotFound: No such chat.
        """
        with db.transaction(self._db) as conn:
            return self._append(conn, conversation_id, "assistant", "", None, None, False, "")

    def update_answer(self, message_id: int, content: str, reasoning: str = "") -> None:
        """Save the text and the reasoning streamed so far: one UPDATE, committed at once.

        Cheap enough for a few calls a second; the chat's ``updated_at`` waits for
        ``finish_answer``. Raises MessageNotFound.
        """
        cursor = self._db.execute(
            "UPDATE messages SET content = ?, reasoning = ? WHERE id = ?",
            (content, reasoning, message_id),
        )
        if not cursor.rowcount:
            raise MessageNotFound(message_id)

    def finish_answer(
        self,
        message_id: int,
        content: str,
        finish_reason: str | None,
        figures: Mapping[str, Any] | None = None,
        reasoning: str = "",
    ) -> MessageRecord:
        """Save the whole answer, its reasoning, why it ended and its figures; mark it complete.

        Raises:
            MessageNotFound: No such message.
            TypeError: A figure is not JSON-serialisable.
        """
        with db.transaction(self._db) as conn:
            cursor = conn.execute(
                "UPDATE messages SET content = ?, reasoning = ?, finish_reason = ?, figures = ?,"
                " complete = 1 WHERE id = ?",
                (content, reasoning, finish_reason, to_json(figures), message_id),
            )
            if not cursor.rowcount:
                raise MessageNotFound(message_id)
            message = self._message(conn, message_id)
            self._touch(conn, message.conversation_id)
            return message

    def regenerate_answer(self, message_id: int) -> MessageRecord:
        """Start a new version of an answer: what it showed joins its other versions, with every message
        after it kept as that version's own turns (paged back with ``show_version``, they come back), and
        it becomes empty and incomplete (streamed into as ``begin_answer``'s row is). Nothing is deleted.

        Raises:
            MessageNotFound: No such message.
            ValueError: It is not an answer.
        """
        with db.transaction(self._db) as conn:
            message = self._message(conn, message_id)
            if message.role != "assistant":
                raise ValueError(f"only an answer has versions, not a {message.role} message")
            every = [*self._kept_shown(conn, message), AnswerVersion("", complete=False)][-MAX_VERSIONS:]
            return self._show_kept(conn, message, every, len(every) - 1)

    def show_version(self, message_id: int, index: int, drop_shown: bool = False) -> MessageRecord:
        """Show another version of an answer or a question (its place among them all, clamped to those
        there are). The turns after the version shown now are kept with it, and the version shown comes
        back with the turns that followed it (its branch of the chat).

        Args:
            message_id: The answer or question.
            index: The version to show, 0 the first.
            drop_shown: Forget the version shown now (an answer that failed), unless it is the only one
                or turns followed it. ``index`` counts without it.

        Raises:
            MessageNotFound: No such message.
        """
        with db.transaction(self._db) as conn:
            message = self._message(conn, message_id)
            every = self._kept_shown(conn, message)
            if drop_shown and len(every) > 1:
                if every[message.version].later:  # turns followed it: it stays, and `index` counts it again
                    index += 1 if index >= message.version else 0
                else:
                    del every[message.version]
            return self._show_kept(conn, message, every, index)

    def _kept_shown(self, conn: sqlite3.Connection, message: MessageRecord) -> list[AnswerVersion]:
        """A message's versions, the one shown holding the messages after it (which leave the chat)."""
        after = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? AND position > ? ORDER BY position",
            (message.conversation_id, message.position),
        ).fetchall()
        every = message.all_versions()
        if after:
            every[message.version] = replace(
                every[message.version], later=tuple(KeptTurn.of(message_from_row(row)) for row in after))
            self._delete_after(conn, message.id)
        return every

    def _show_kept(
        self, conn: sqlite3.Connection, message: MessageRecord, every: list[AnswerVersion], index: int
    ) -> MessageRecord:
        """Show a message's version `index` and put back the turns kept with it (`_kept_shown` first)."""
        index = min(max(0, index), len(every) - 1)
        later = every[index].later
        every[index] = replace(every[index], later=())
        record = self._show(conn, message.id, every, index)
        conn.executemany(
            "INSERT INTO messages (conversation_id, position, role, content, created_at, finish_reason, figures,"
            " complete, reasoning, versions, version, images) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(message.conversation_id, message.position + 1 + n, t.role, t.content, t.created_at, t.finish_reason,
              to_json(t.figures), int(t.complete), t.reasoning, versions_to_json(t.versions), t.version,
              images_to_json(t.images)) for n, t in enumerate(later)],
        )
        if later:
            self._touch(conn, message.conversation_id)
        return record

    def branch_conversation(self, message_id: int) -> ConversationRecord:
        """Make a chat of this message's chat up to and including it, titled "Branch of <title>".

        It has the same system prompt, model and settings; its messages keep their versions and times.

        Raises:
            MessageNotFound: No such message.
        """
        with db.transaction(self._db) as conn:
            message = self._message(conn, message_id)
            source = self._conversation(conn, message.conversation_id)
            now = self._clock()
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, model, settings, uid)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (f"Branch of {source.title}", now, now, source.system_prompt, source.model,
                 to_json(source.settings), new_uid()),
            )
            branch = int(cursor.lastrowid or 0)
            conn.execute(
                "INSERT INTO messages (conversation_id, position, role, content, created_at, finish_reason,"
                " figures, complete, reasoning, versions, version, images) SELECT ?, position, role, content,"
                " created_at, finish_reason, figures, complete, reasoning, versions, version, images FROM messages"
                " WHERE conversation_id = ? AND position <= ? ORDER BY position",
                (branch, source.id, message.position),
            )
            return self._conversation(conn, branch)

    def export_conversations(
        self, conversation_ids: list[int] | None = None
    ) -> list[ArchivedConversation]:
        """Return chats whole, for an export: these ids in this order, or None for all.

        Raises:
            ConversationNotFound: One of the ids is not here.
        """
        # One read transaction, so a chat and its messages are read as of one moment.
        with db.transaction(self._db) as conn:
            return read_archive(conn, conversation_ids, self.images.load_all)

    def import_conversations(self, conversations: Iterable[ArchivedConversation]) -> ImportResult:
        """Add chats from an export in one transaction; one whose uid is here already is skipped.

        The records must come from ``history_import`` (the door that checks a file, each image
        through the image door). They may come one at a time (an ``ImportStream`` reads a file so):
        each is written as it comes, its images first; a fault raised while they come rolls the
        whole import back, and leaves the images written to the next sweep.
        """
        with db.transaction(self._db) as conn:
            return write_archive(conn, self._with_images(conversations))

    def _with_images(self, conversations: Iterable[ArchivedConversation]) -> Iterator[ArchivedConversation]:
        for conv in conversations:
            for m in conv.messages:
                for image in (*m.images, *m.kept_images):
                    self.images.put(image)
            yield conv

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Find chats by title and messages by text; every word must match.

        Any input is safe: words are quoted, never read as query syntax. The last word
        also matches as a prefix when the FTS5 index is used.

        Args:
            query: What the person typed.
            limit: At most this many title hits and this many message hits.

        Returns:
            Title hits first, then message hits, each best first.
        """
        return search.search(self._db, query, self.use_fts, limit)

    def _append(
        self,
        conn: sqlite3.Connection,
        conversation_id: int,
        role: str,
        content: str,
        finish_reason: str | None,
        figures: Mapping[str, Any] | None,
        complete: bool,
        reasoning: str,
        images: str = "[]",
    ) -> int:
        self._conversation(conn, conversation_id)
        now = self._clock()
        cursor = conn.execute(
            "INSERT INTO messages (conversation_id, position, role, content, created_at,"
            " finish_reason, figures, complete, reasoning, images) VALUES (?, (SELECT"
            " COALESCE(MAX(position), -1) + 1 FROM messages WHERE conversation_id = ?),"
            " ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conversation_id,
                conversation_id,
                role,
                content,
                now,
                finish_reason,
                to_json(figures),
                int(complete),
                reasoning,
                images,
            ),
        )
        self._touch(conn, conversation_id)
        return int(cursor.lastrowid or 0)

    def _title_from_first_user_message(
        self, conn: sqlite3.Connection, conversation_id: int, content: str
    ) -> None:
        title = title_from_text(content)
        users = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND role = 'user'",
            (conversation_id,),
        ).fetchone()[0]
        if title and users == 1:
            conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ? AND title = ?",
                (title, conversation_id, DEFAULT_TITLE),
            )

    def _delete_after(self, conn: sqlite3.Connection, message_id: int) -> int:
        message = self._message(conn, message_id)
        cursor = conn.execute(
            "DELETE FROM messages WHERE conversation_id = ? AND position > ?",
            (message.conversation_id, message.position),
        )
        self._touch(conn, message.conversation_id)
        return cursor.rowcount

    def _show(
        self, conn: sqlite3.Connection, message_id: int, every: list[AnswerVersion], index: int
    ) -> MessageRecord:
        index = min(max(0, index), len(every) - 1)
        shown, others = every[index], every[:index] + every[index + 1 :]
        conn.execute(
            "UPDATE messages SET content = ?, reasoning = ?, finish_reason = ?, figures = ?, complete = ?,"
            " versions = ?, version = ? WHERE id = ?",
            (shown.content, shown.reasoning, shown.finish_reason, to_json(shown.figures), int(shown.complete),
             versions_to_json(others), index, message_id),
        )
        return self._message(conn, message_id)

    def _touch(self, conn: sqlite3.Connection, conversation_id: int) -> None:
        conn.execute(
            "UPDATE conversations SET updated_at = ? WHERE id = ?", (self._clock(), conversation_id)
        )

    @staticmethod
    def _message(conn: sqlite3.Connection, message_id: int) -> MessageRecord:
        row = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,)
        ).fetchone()
        if row is None:
            raise MessageNotFound(message_id)
        return message_from_row(row)
