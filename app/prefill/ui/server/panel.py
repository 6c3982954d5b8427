"""The window's switch for `prefill serve`, its address, and the slots at work, live.

`ServerController` starts and stops the server off the GUI thread and turns the
schedulers' snapshots into a signal; `SlotTableModel` (slot_model.py) holds the slots for a view, under
each model's name and state when the server holds several; `ServerPanel` is the switch, the address
with a copy button, and below them cards of figures (requests in flight and queued, the aggregate
rate, served; each model's prompt cache: `figure_cards.cache_rows`) beside the slots' list
(`slot_list.SlotList`). The window's chat is one of the slots: the engine worker serves the model it
holds (`EngineWorker.serve`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import (
    QObject,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.batch.runtime import MAX_SEQUENCES
from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.server.lifecycle import ServeOptions
from prefill.server.served_slots import ServerSlots
from prefill.ui.server.figure_cards import FiguresCard, Rows, cache_rows
from prefill.ui.server.slot_list import SlotList
from prefill.ui.server.slot_model import SlotTableModel
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import ICON, SPACE
from prefill.ui.workers.engine_worker import EngineWorker

__all__ = ["ServerController", "ServerPanel", "SlotTableModel"]  # the model lives in slot_model.py
DEFAULT_PORT = 8080  # where OpenAI clients look first (llama.cpp's server's too)
DEFAULT_PARALLEL = 4
COPY_TIP = "Copy the address"
COPIED_MS = 1500  # how long the Copy button shows its check mark


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


class ServerPanel(QWidget):
    """The switch, the address with a copy button and the port and slot boxes on top; below them the
    figures (requests, each model's prompt cache) as cards of label/value rows beside the slots' list.

    `options` gives the ServeOptions for the model loaded in the window, or None when
    there is none (the switch then says so and stays off); the panel's port and slot boxes
    set its port and its parallel requests.
    """

    def __init__(self, controller: ServerController, options: Callable[[], ServeOptions | None],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("server-panel")
        self.controller = controller
        self._options = options
        self.url = ""
        self.switch = QCheckBox("Serve over HTTP (OpenAI API)")
        self.switch.setToolTip("Serve the model loaded here to other programs on this computer")
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setValue(DEFAULT_PORT)
        self.port.setSpecialValueText("any free")
        self.port.setToolTip("The port on 127.0.0.1 (8080 is where OpenAI clients look first)")
        self.port.setAccessibleName("Port")
        self.parallel = QSpinBox()
        self.parallel.setRange(1, MAX_SEQUENCES)
        self.parallel.setValue(DEFAULT_PARALLEL)
        self.parallel.setToolTip("Requests decoded together, this chat's included; more wait in a queue")
        self.parallel.setAccessibleName("Slots")
        for box, widest in ((self.port, "any free"), (self.parallel, str(MAX_SEQUENCES))):
            box.setMaximumWidth(box.fontMetrics().horizontalAdvance(widest) + SPACE.xl + 3 * SPACE.sm)
        self.address = plain_label("Off")
        self.address.setObjectName("server-address")
        self.address.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.address.setWordWrap(True)  # a failure's sentence wraps rather than widening the window (not a URL)
        self.copy = QToolButton()
        self.copy.setObjectName("server-copy")
        self.copy.setIcon(icon("copy"))
        self.copy.setIconSize(QSize(ICON.inline, ICON.inline))
        self.copy.setAutoRaise(True)
        self.copy.setToolTip(COPY_TIP)
        self.copy.setAccessibleName(COPY_TIP)
        self.copy.setEnabled(False)
        self._copied = QTimer(self)
        self._copied.setSingleShot(True)
        self._copied.setInterval(COPIED_MS)
        self._copied.timeout.connect(self._on_copied_timeout)
        self.requests = FiguresCard("Requests")
        self.requests.hide()  # until the server reports
        self.caches: list[FiguresCard] = []  # a prompt cache card per model with slots
        self.slots = SlotTableModel(self)
        self.slot_list = SlotList(self.slots)

        top = QHBoxLayout()
        top.setSpacing(SPACE.sm)
        top.addWidget(self.switch)
        top.addSpacing(SPACE.md)
        top.addWidget(self.address)
        top.addWidget(self.copy)
        top.addStretch(1)
        top.addSpacing(SPACE.md)
        for label, box in (("Port", self.port), ("Slots", self.parallel)):
            name = plain_label(label)
            name.setObjectName("server-box-label")
            name.setBuddy(box)
            top.addWidget(name)
            top.addWidget(box)
        figures = self.figures_inside = QWidget()
        figures.setObjectName("server-figures")
        self._cards = QVBoxLayout(figures)
        self._cards.setContentsMargins(0, 0, 0, 0)
        self._cards.setSpacing(SPACE.sm)
        self._cards.addWidget(self.requests)
        self._cards.addStretch(1)
        self.figures = QScrollArea()
        self.figures.setObjectName("server-figures-scroll")
        self.figures.setWidget(figures)
        self.figures.setWidgetResizable(True)
        self.figures.setFrameShape(QFrame.Shape.NoFrame)
        self.figures.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.figures.hide()  # until the server reports
        body = QHBoxLayout()
        body.setSpacing(SPACE.md)
        body.addWidget(self.figures)
        body.addWidget(self.slot_list, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        layout.setSpacing(SPACE.sm)
        layout.addLayout(top)
        layout.addLayout(body, 1)

        self.switch.toggled.connect(self._on_switch_toggled)
        self.copy.clicked.connect(self._on_copy_clicked)
        controller.started.connect(self._on_controller_started)
        controller.stopped.connect(self._on_controller_stopped)
        controller.failed.connect(self._on_controller_failed)
        controller.snapshot.connect(self._on_controller_snapshot)

    def figure(self, label: str) -> str:
        """The value the Requests card shows beside `label` ("In flight", "Queued"…; "" when not shown)."""
        return dict(self.requests.rows()).get(label, "")

    def cache_cards(self) -> list[tuple[str, Rows]]:
        """Each prompt cache card shown: its title and its label/value rows."""
        return [(card.title.text(), card.rows()) for card in self.caches]

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
        self.copy.setIcon(icon("check"))  # says it was copied, for a moment
        self.copy.setToolTip("Copied")
        self._copied.start()

    @Slot()
    def _on_copied_timeout(self) -> None:
        self.copy.setIcon(icon("copy"))
        self.copy.setToolTip(COPY_TIP)

    @Slot(str)
    def _on_controller_started(self, url: str) -> None:
        self.url = url
        self.address.setWordWrap(False)
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
        several = len(server.models) > 1
        rows = [("Models", str(len(server.models)))] if several else []
        rows += [("In flight", f"{server.in_flight:,}"), ("Queued", f"{server.queued:,}"),
                 ("Writing speed", f"{server.aggregate_tps:.0f} tok/s in all"), ("Served", f"{server.served:,}")]
        self.requests.set_rows(tuple(rows))
        self.requests.show()
        caches = [(f"Prompt cache · {m.id}" if several else "Prompt cache", cache_rows(m.batch.prompt_cache))
                  for m in server.models if m.batch is not None]
        self._show_caches(caches)
        self.figures.show()
        self._fit_figures()
        self.slots.set_server(server)

    def _show_caches(self, caches: list[tuple[str, Rows]]) -> None:
        """A card per model's prompt cache, made or dropped only when the number of models changes."""
        while len(self.caches) > len(caches):
            card = self.caches.pop()
            self._cards.removeWidget(card)
            card.hide()
            card.deleteLater()
        while len(self.caches) < len(caches):
            self.caches.append(FiguresCard())
            self._cards.insertWidget(len(self.caches), self.caches[-1])  # after Requests, before the stretch
        for card, (title, rows) in zip(self.caches, caches, strict=True):
            card.title.setText(title)
            card.set_rows(rows)

    def _fit_figures(self) -> None:
        """The figures' column as wide as its widest card (the slots take the rest), grown, never shrunk
        while the server runs, so the list does not jump from one snapshot to the next."""
        inside = self.figures_inside
        inside.adjustSize()
        width = inside.sizeHint().width() + self.figures.verticalScrollBar().sizeHint().width()
        if width > self.figures.width() or not self.figures.isVisible():
            self.figures.setFixedWidth(width)

    def _set_off(self, text: str) -> None:
        self.url = ""
        self.address.setWordWrap(True)
        self.address.setText(text)
        self.copy.setEnabled(False)
        self.requests.set_rows(())
        self.requests.hide()
        self._show_caches([])
        self.figures.hide()
        self.switch.blockSignals(True)
        self.switch.setChecked(False)
        self.switch.blockSignals(False)
        self._set_editable(True)

    def _set_editable(self, on: bool) -> None:
        for w in (self.switch, self.port, self.parallel):
            w.setEnabled(on)
