"""The server's slots as a Qt model: one row per slot, and a model's heading row above its slots when the
server holds several; the panel's list (`slot_list.SlotList`) follows it."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from prefill.engine.batch.snapshot import SlotSnapshot
from prefill.server.served_slots import ModelSlots, ServerSlots

Index = QModelIndex | QPersistentModelIndex


COLUMNS = ("Slot", "State", "Request", "Tokens", "Memory cells", "tok/s", "Drafts taken")


class SlotTableModel(QAbstractTableModel):
    """One row per slot: state, request, tokens (prompt + generated), memory cells (KV), decode rate, and
    how many drafted tokens the model accepted of those it checked (speculative decoding). When the
    server holds several models, each model's slots follow a heading row: its name, its state, its
    memory and its requests (`is_heading`; the list shows it as a line across)."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._rows: tuple[ModelSlots | SlotSnapshot, ...] = ()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # type: ignore[no-untyped-def]
        horizontal = orientation == Qt.Orientation.Horizontal
        if role == Qt.ItemDataRole.DisplayRole and horizontal and 0 <= section < len(COLUMNS):
            return COLUMNS[section]
        return None

    def is_heading(self, row: int) -> bool:
        """Whether `row` names a model (its slots follow) rather than showing a slot."""
        return 0 <= row < len(self._rows) and isinstance(self._rows[row], ModelSlots)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):  # type: ignore[no-untyped-def]
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        if isinstance(row, ModelSlots):
            if role == Qt.ItemDataRole.FontRole:
                bold = QFont()
                bold.setBold(True)
                return bold
            if role == Qt.ItemDataRole.DisplayRole:
                return row.heading() if index.column() == 0 else ""
            return None
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        s = row
        busy = s.state != "idle"
        values = (
            str(s.index), s.state, s.label if busy else "",
            f"{s.prompt_tokens} + {s.generated}" if busy else "", str(s.kv_cells),
            f"{s.tps:.0f}" if busy else "",
            f"{s.accepted} / {s.drafted}" if busy and s.drafted else "",
        )
        return values[index.column()]

    def set_slots(self, slots: tuple[SlotSnapshot, ...]) -> None:
        """One model's slots, without a heading."""
        self._set_rows(slots)

    def set_server(self, server: ServerSlots) -> None:
        """The server's slots: under each model's heading when it holds several, else as they are."""
        if len(server.models) > 1:
            rows: list[ModelSlots | SlotSnapshot] = []
            for m in server.models:
                rows.append(m)
                rows.extend(m.batch.slots if m.batch is not None else ())
            self._set_rows(tuple(rows))
        else:
            self._set_rows(server.slots)

    def _set_rows(self, rows: tuple[ModelSlots | SlotSnapshot, ...]) -> None:
        """Rows that changed emit dataChanged; another count or order of headings resets the model."""
        def shape(rs: tuple[ModelSlots | SlotSnapshot, ...]) -> list[str]:
            return [r.id if isinstance(r, ModelSlots) else "" for r in rs]

        if len(rows) != len(self._rows) or shape(rows) != shape(self._rows):
            self.beginResetModel()
            self._rows = rows
            self.endResetModel()
            return
        old, self._rows = self._rows, rows
        for row, (a, b) in enumerate(zip(old, rows, strict=True)):
            if a != b:
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
