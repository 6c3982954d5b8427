"""The transcript of one conversation as a Qt list model.

A streamed flush changes one row and emits `dataChanged` for that row only; the
text is kept as a list of chunks so appending never copies the whole answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from PySide6.QtCore import QAbstractListModel, QByteArray, QModelIndex, QPersistentModelIndex, Qt

from prefill.engine.message import ImagePart
from prefill.ui.chat.sources.cited import CitedSource

Index = QModelIndex | QPersistentModelIndex


class Roles(IntEnum):
    ROLE = Qt.ItemDataRole.UserRole + 1  # "user", "assistant", "system", "notice", "tool", "summary"
    CONTENT = Qt.ItemDataRole.UserRole + 2
    FIGURES = Qt.ItemDataRole.UserRole + 3  # dict of the answer's figures
    FINISH_REASON = Qt.ItemDataRole.UserRole + 4
    STREAMING = Qt.ItemDataRole.UserRole + 5
    MESSAGE_ID = Qt.ItemDataRole.UserRole + 6  # the row in the history database, or -1
    REASONING = Qt.ItemDataRole.UserRole + 7  # the model's thinking, kept apart from the answer
    VERSION = Qt.ItemDataRole.UserRole + 8  # which of an answer's versions is shown, 0 the first
    VERSIONS = Qt.ItemDataRole.UserRole + 9  # how many versions the answer has (1: never regenerated)
    IMAGES = Qt.ItemDataRole.UserRole + 10  # a user's message: the ImageParts it showed the model
    SOURCES = Qt.ItemDataRole.UserRole + 11  # an answer: the sources it cites (CitedSource), by number


@dataclass
class Row:
    role: str
    chunks: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""
    streaming: bool = False
    message_id: int = -1
    reasoning_chunks: list[str] = field(default_factory=list)
    position: int = -1  # its place in the stored chat (-1: not stored yet)
    version: int = 0  # of an answer's versions, the one shown
    versions: int = 1  # an answer's versions (Regenerate keeps every one)
    images: tuple[ImagePart, ...] = ()  # a user's message: what it showed the model, sent again each turn
    sources: tuple[CitedSource, ...] = ()  # an answer: the sources its marks point at
    _joined: str | None = None

    @property
    def content(self) -> str:
        if self._joined is None:
            self._joined = "".join(self.chunks)
        return self._joined

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_chunks)


class TranscriptModel(QAbstractListModel):
    """Rows are messages; the last one may be streaming."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[Row] = []

    # --- Qt model ---------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        r = self._rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Roles.CONTENT):
            return r.content
        if role == Roles.ROLE:
            return r.role
        if role == Roles.FIGURES:
            return dict(r.figures)
        if role == Roles.FINISH_REASON:
            return r.finish_reason
        if role == Roles.STREAMING:
            return r.streaming
        if role == Roles.MESSAGE_ID:
            return r.message_id
        if role == Roles.REASONING:
            return r.reasoning
        if role == Roles.VERSION:
            return r.version
        if role == Roles.VERSIONS:
            return r.versions
        if role == Roles.IMAGES:
            return r.images
        if role == Roles.SOURCES:
            return r.sources
        return None

    def roleNames(self) -> dict[int, QByteArray]:
        return {int(r): QByteArray(r.name.lower().encode()) for r in Roles}

    # --- edits from the GUI thread -----------------------------------------------------
    def set_rows(self, rows: list[Row]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def prepend_rows(self, rows: list[Row]) -> None:
        """Put `rows` before the first row (the earlier part of a chat that opened at its end)."""
        if not rows:
            return
        self.beginInsertRows(QModelIndex(), 0, len(rows) - 1)
        self._rows[:0] = rows
        self.endInsertRows()

    def append_row(self, row: Row) -> int:
        n = len(self._rows)
        self.beginInsertRows(QModelIndex(), n, n)
        self._rows.append(row)
        self.endInsertRows()
        return n

    def insert_row(self, at: int, row: Row) -> int:
        """Put `row` at index `at` (a tool call, before the answer that streams after it)."""
        self.beginInsertRows(QModelIndex(), at, at)
        self._rows.insert(at, row)
        self.endInsertRows()
        return at

    def append_text(self, row: int, text: str) -> None:
        """Append streamed text to one row: O(len(text)), one dataChanged for that row."""
        if not text:
            return
        r = self._rows[row]
        r.chunks.append(text)
        r._joined = None
        i = self.index(row)
        self.dataChanged.emit(i, i, [Roles.CONTENT])

    def append_reasoning(self, row: int, text: str) -> None:
        """Append streamed thinking to one row: O(len(text)), one dataChanged for that row."""
        if not text:
            return
        self._rows[row].reasoning_chunks.append(text)
        i = self.index(row)
        self.dataChanged.emit(i, i, [Roles.REASONING])

    def update_row(self, row: int, **changes: Any) -> None:
        r = self._rows[row]
        roles = []
        for name, value in changes.items():
            if name == "content":
                r.chunks, r._joined = [value], None
                roles.append(Roles.CONTENT)
            elif name == "reasoning":
                r.reasoning_chunks = [value] if value else []
                roles.append(Roles.REASONING)
            else:
                setattr(r, name, value)
                roles.append(Roles[name.upper()])
        i = self.index(row)
        self.dataChanged.emit(i, i, roles)

    def set_message_id(self, row: int, message_id: int) -> None:
        """The row's message in the history, once the store made it (a row gone by then is left as it is)."""
        if row < len(self._rows):
            self.update_row(row, message_id=message_id)

    def remove_from(self, row: int) -> None:
        """Remove `row` and every row after it."""
        if row >= len(self._rows):
            return
        self.beginRemoveRows(QModelIndex(), row, len(self._rows) - 1)
        del self._rows[row:]
        self.endRemoveRows()

    def remove_row(self, row: int) -> None:
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._rows[row]
        self.endRemoveRows()

    def chunks_since(self, row: int, start: int) -> tuple[str, int]:
        """Text appended to `row` after its first `start` chunks, and the chunk count now.

        A view that streams keeps the count and asks only for what is new: O(new text).
        """
        chunks = self._rows[row].chunks
        return "".join(chunks[start:]), len(chunks)

    def reasoning_since(self, row: int, start: int) -> tuple[str, int]:
        """Thinking appended to `row` after its first `start` chunks, and the chunk count now."""
        chunks = self._rows[row].reasoning_chunks
        return "".join(chunks[start:]), len(chunks)

    def row(self, row: int) -> Row:
        return self._rows[row]

    def rows(self) -> list[Row]:
        return list(self._rows)
