"""Typed errors of the store. They carry what a person needs; the UI words them."""

from __future__ import annotations

from pathlib import Path

# One schema, one error: the settings rules live with the engine's sections.
from prefill.engine.errors import InvalidSetting

__all__ = [
    "ConversationNotFound",
    "HistoryUnavailable",
    "InvalidSetting",
    "MessageNotFound",
    "SchemaTooNew",
    "SettingsError",
    "StoreClosed",
    "StoreError",
]


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class HistoryUnavailable(StoreError):
    """The history database could not be opened or brought up to date.

    Attributes:
        path: The database file.
        reason: What SQLite or the file system said.
    """

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cannot open the chat history at {path}: {reason}")


class SchemaTooNew(HistoryUnavailable):
    """The database was written by a newer Prefill whose schema this one does not know."""

    def __init__(self, path: Path, found: int, known: int):
        self.found = found
        self.known = known
        super().__init__(
            path, f"it has schema version {found}, this Prefill knows up to {known}; update Prefill"
        )


class StoreClosed(StoreError):
    """The store was used after close()."""


class ConversationNotFound(StoreError, LookupError):
    """No conversation has this id (it may have been deleted)."""

    def __init__(self, conversation_id: int):
        self.conversation_id = conversation_id
        super().__init__(f"no conversation with id {conversation_id}")


class MessageNotFound(StoreError, LookupError):
    """No message has this id (it may have been deleted)."""

    def __init__(self, message_id: int):
        self.message_id = message_id
        super().__init__(f"no message with id {message_id}")


class ImportRejected(StoreError, ValueError):
    """A history file was refused at the door; nothing of it was imported.

    Attributes:
        path: The file.
        reason: What is wrong with it, and where.
    """

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cannot import {path}: {reason}; nothing was imported")


class SettingsError(StoreError):
    """The settings file could not be read or written (not: it held bad values).

    Attributes:
        path: The settings file.
    """

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cannot use the settings file {path}: {reason}")
