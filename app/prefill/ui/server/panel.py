"""The window's switch for `prefill serve`, its address, and the slots at work, live.

`ServerController` starts and stops the server off the GUI thread and turns the
schedulers' snapshots into a signal; `SlotTableModel` holds the slots for a view, under each
model's name and state when the server holds several; `ServerPanel` is the switch, the address
with a copy button, the requests in flight and queued, the aggregate rate, each model's prompt cache
(`cache_line`: prompts kept, bytes of its bound, hits, tokens saved), and the slots table.
The window's chat is one of the slots: the engine worker serves the model it holds
(`EngineWorker.serve`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.batch.prompt_cache import PromptCacheSnapshot
from prefill.engine.batch.runtime import MAX_SEQUENCES
from prefill.engine.batch.snapshot import BatchSnapshot, SlotSnapshot
from prefill.engine.units import format_bytes
from prefill.server.lifecycle import ServeOptions
from prefill.server.served_slots import ModelSlots, ServerSlots
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.workers.engine_worker import EngineWorker

Index = QModelIndex | QPersistentModelIndex
DEFAULT_PORT = 8080  # where OpenAI clients look first (llama.cpp's server's too)
DEFAULT_PARALLEL = 4


class ServerController(QObject):
    """The window's server, run by the engine worker: it serves the model the window has loaded, with
    one copy of it in memory, and the window's chat becomes one of the server's requests.

    Signals:
        started(str): the base address (http://host:port), once listening.
        stopped(): the server has stopped; the chat has the model to itself again.
        failed(str): why it could not start, in words.
        snapshot(object): a ServerSlots (each model, its state and its slots), a few times a second
            while requests run.
    """

    started = Signal(str)
    stopped = Signal()
    failed = Signal(str)
    snapshot = Signal(object)

    def __init__(self, worker: EngineWorker, parent: QObject | None = None):
        super().__init__(parent)
        self.worker = worker
        self.running = False
        worker.serving.connect(self._on_worker_serving)
        worker.serve_stopped.connect(self._on_worker_serve_stopped)
        worker.serve_failed.connect(self.failed)
        worker.server_snapshot.connect(self.snapshot)

    def start(self, options: ServeOptions) -> None:
        self.worker.serve(options)

    def stop(self) -> None:
        self.worker.stop_serving()

    @Slot(str)
    def _on_worker_serving(self, url: str) -> None:
        self.running = True
        self.started.emit(url)

    @Slot()
    def _on_worker_serve_stopped(self) -> None:
        self.running = False
        self.stopped.emit()


COLUMNS = ("Slot", "State", "Request", "Tokens", "Memory cells", "tok/s", "Drafts taken")


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cache_line(cache: PromptCacheSnapshot) -> str:
    """One model's prompt cache in words: "Prompt cache: 3 prompts · 40.0 MiB of 512.0 MiB · 5 hits ·
    1,234 tokens saved", and what it keeps on disk when it has a disk tier."""
    if cache.limit <= 0:
        return "Prompt cache off"
    words = [f"Prompt cache: {_count(cache.entries, 'prompt')}",
             f"{format_bytes(cache.bytes)} of {format_bytes(cache.limit)}",
             _count(cache.hits, "hit"), f"{_count(cache.tokens_saved, 'token')} saved"]
    if cache.disk_limit:
        words.append(f"{cache.disk_entries:,} on disk ({format_bytes(cache.disk_bytes)} of "
                     f"{format_bytes(cache.disk_limit)})")
    return " · ".join(words)


class SlotTableModel(QAbstractTableModel):
    """One row per slot: state, request, tokens (prompt + generated), memory cells (KV), decode rate, and
    how many drafted tokens the model accepted of those it checked (speculative decoding). When the
    server holds several models, each model's slots follow a heading row: its name, its state, its
    memory and its requests (`is_heading`; the view spans it across the columns)."""

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


class ServerPanel(QWidget):
    """The switch, the address with a copy button, requests in flight, the slots table.

    `options` gives the ServeOptions for the model loaded in the window, or None when
    there is none (the switch then says so and stays off); the panel's port and slot boxes
    set its port and its parallel requests.
    """

    def __init__(self, controller: ServerController, options: Callable[[], ServeOptions | None],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self._options = options
        self.url = ""
        self.switch = QCheckBox("Serve this model over HTTP (OpenAI API)")
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setValue(DEFAULT_PORT)
        self.port.setSpecialValueText("any free")
        self.port.setToolTip("The port on 127.0.0.1 (8080 is where OpenAI clients look first)")
        self.parallel = QSpinBox()
        self.parallel.setRange(1, MAX_SEQUENCES)
        self.parallel.setValue(DEFAULT_PARALLEL)
        self.parallel.setToolTip("Requests decoded together, this chat's included; more wait in a queue")
        self.address = plain_label("Off")
        self.address.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy = QPushButton("Copy")
        self.copy.setEnabled(False)
        self.status = plain_label()
        self.cache = plain_label()  # each model's prompt cache, a line each
        self.slots = SlotTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.slots)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.slots.modelReset.connect(self._on_slots_reset)

        row = QHBoxLayout()
        row.addWidget(self.address, 1)
        row.addWidget(self.copy)
        top = QHBoxLayout()
        top.addWidget(self.switch, 1)
        top.addWidget(plain_label("Port"))
        top.addWidget(self.port)
        top.addWidget(plain_label("Slots"))
        top.addWidget(self.parallel)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.cache)
        layout.addWidget(self.table)

        self.switch.toggled.connect(self._on_switch_toggled)
        self.copy.clicked.connect(self._on_copy_clicked)
        controller.started.connect(self._on_controller_started)
        controller.stopped.connect(self._on_controller_stopped)
        controller.failed.connect(self._on_controller_failed)
        controller.snapshot.connect(self._on_controller_snapshot)

    @Slot(bool)
    def _on_switch_toggled(self, on: bool) -> None:
        if on and not self.controller.running:
            options = self._options()
            if options is None:
                self._set_off("Load a local model first.")
                return
            options = replace(options, port=self.port.value(), parallel=self.parallel.value())
            self._set_editable(False)  # until it has started or failed
            self.address.setText(f"Starting on {options.host}…")
            self.controller.start(options)
        elif not on and self.controller.running:
            self._set_editable(False)
            self.address.setText("Stopping…")
            self.controller.stop()

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.url + "/v1")

    @Slot(str)
    def _on_controller_started(self, url: str) -> None:
        self.url = url
        self.address.setText(f"{url}/v1")
        self.copy.setEnabled(True)
        self.switch.setEnabled(True)  # the port and slots stay as they are while it serves

    @Slot()
    def _on_controller_stopped(self) -> None:
        self._set_off("Off")
        self.slots.set_slots(())

    @Slot(str)
    def _on_controller_failed(self, message: str) -> None:
        self._set_off(message)

    @Slot(object)
    def _on_controller_snapshot(self, snap: ServerSlots | BatchSnapshot) -> None:
        server = ServerSlots.of_one(snap) if isinstance(snap, BatchSnapshot) else snap
        models = f"{len(server.models)} models · " if len(server.models) > 1 else ""
        self.status.setText(
            f"{models}{server.in_flight} in flight · {server.queued} queued · {server.aggregate_tps:.0f} tok/s in "
            f"all · {server.served} served")
        several = len(server.models) > 1
        self.cache.setText("\n".join(
            f"{m.id}: {cache_line(m.batch.prompt_cache)}" if several else cache_line(m.batch.prompt_cache)
            for m in server.models if m.batch is not None))
        self.slots.set_server(server)

    @Slot()
    def _on_slots_reset(self) -> None:
        """A model's heading spans the table's width (its name and state are longer than a column)."""
        self.table.clearSpans()
        for row in range(self.slots.rowCount()):
            if self.slots.is_heading(row):
                self.table.setSpan(row, 0, 1, len(COLUMNS))

    def _set_off(self, text: str) -> None:
        self.url = ""
        self.address.setText(text)
        self.copy.setEnabled(False)
        self.status.setText("")
        self.cache.setText("")
        self.switch.blockSignals(True)
        self.switch.setChecked(False)
        self.switch.blockSignals(False)
        self._set_editable(True)

    def _set_editable(self, on: bool) -> None:
        for w in (self.switch, self.port, self.parallel):
            w.setEnabled(on)
