"""The model finder (Ctrl+K, or "Find a model…" in the tool bar's picker): every model the picker offers
— the library, the bundled model, one opened from disk — as cards with its size, its fit on this
machine and whether it is in memory; typing filters (every word, in any order), ↑ ↓ choose, Enter loads.

A choice goes out through the picker's own `local_chosen`, so it loads (or switches to a resident
model) exactly as a pick in the tool bar does, on the engine thread. Sizes and fit estimates (each
file's header read, the machine's free memory probed) are measured on a pool job when the finder
opens; the cards show what is known at once and fill in as the estimates come back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QDialog, QLineEdit, QVBoxLayout, QWidget

from prefill.engine.llama.hardware import machine_memory
from prefill.engine.llama.memory_fit import FitEstimate, estimate_local
from prefill.engine.units import format_bytes
from prefill.hub.model_names import model_display_name
from prefill.store.app_settings import Settings
from prefill.ui.models.fit_badge import fit_figures
from prefill.ui.models.fit_chip import UNKNOWN, verdict_of
from prefill.ui.models.list_cards import CARD_ROLE, Card, CardModel, WordsFilter, card_list
from prefill.ui.models.picker import ModelPicker
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import COLUMN, SPACE
from prefill.ui.workers.pool_jobs import PoolJobs


@dataclass(frozen=True)
class Measured:
    """What the finder read of one model file (off the GUI thread)."""

    size: int | None
    fit: FitEstimate | None
    why: str = ""  # why there is no estimate


def measure(paths: list[str], n_ctx: int, kv_type: str) -> dict[str, Measured]:
    """Each file's size and fit estimate at `n_ctx` against the memory free now (pool thread)."""
    memory = machine_memory()
    found: dict[str, Measured] = {}
    for p in paths:
        try:
            size: int | None = Path(p).stat().st_size
        except OSError:
            size = None
        try:
            found[p] = Measured(size, estimate_local(p, n_ctx, kv_type, memory))
        except Exception as e:  # noqa: BLE001 - an unreadable file is a card that says so
            found[p] = Measured(size, None, str(e))
    return found


class ModelFinder(QDialog):
    """The finder: a search box over a list of cards.

    Signals:
        opened(): the finder is in view, its cards filled with what is known.
    """

    opened = Signal()

    def __init__(self, picker: ModelPicker, settings: Callable[[], Settings], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("model-finder")
        self.setWindowTitle("Find a model")
        self.setWindowFlag(Qt.WindowType.FramelessWindowHint)
        self.setModal(True)
        self._picker, self._settings = picker, settings
        self.measured: dict[str, Measured] = {}
        self._measured_at: tuple[int, str] | None = None  # the context and KV type they were measured at
        self.jobs = PoolJobs(1, self)
        self.query = QLineEdit()
        self.query.setObjectName("finder-query")
        self.query.setPlaceholderText("Find a model on this machine…")
        self.query.setAccessibleName("Find a model")
        self.query.setClearButtonEnabled(True)
        self.cards = CardModel(self)
        self.filter = WordsFilter(self)
        self.filter.setSourceModel(self.cards)
        self.list = card_list("finder-list", "Models on this machine", self.filter)
        self.hint = plain_label("↑ ↓ to choose · Enter to load · Esc to close")
        self.hint.setObjectName("finder-hint")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE.lg, SPACE.lg, SPACE.lg, SPACE.md)
        layout.setSpacing(SPACE.sm)
        layout.addWidget(self.query)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.hint)
        self.query.textChanged.connect(self._on_query_text_changed)
        self.query.returnPressed.connect(self.choose)
        self.query.installEventFilter(self)
        self.list.clicked.connect(lambda _i: self.choose())
        self.list.activated.connect(lambda _i: self.choose())

    # --- what the window calls -------------------------------------------------------------
    def open_finder(self) -> None:
        """Show the finder over the window, empty query, the first model chosen; measure what is new."""
        self.query.clear()
        self.refresh()
        self._place()
        self.show()
        self.raise_()
        self.activateWindow()
        self.query.setFocus()
        self._measure()
        self.opened.emit()

    def refresh(self) -> None:
        """The cards from the picker's models now (kept in step while the finder is open)."""
        chosen = self.current_path()
        # The models in memory first (the chat's own first of all), then the library in the picker's order.
        self.cards.set_cards([self._card(p) for p in sorted(self._picker.listed(), key=self._rank)])
        self._select(chosen)

    def follow(self) -> None:
        """The picker's models changed (a download, a load): the cards follow while the finder is open."""
        if self.isVisible():
            self.refresh()
            self._measure()

    def _rank(self, path: str) -> int:
        resident = self._picker.resident(path)
        return 2 if resident is None else 0 if resident.current else 1

    def current_path(self) -> str:
        index = self.list.currentIndex()
        card = index.data(CARD_ROLE) if index.isValid() else None
        return card.key if isinstance(card, Card) else ""

    def shown_paths(self) -> list[str]:
        """The models the filter keeps, in order (what a test reads)."""
        return [self.filter.index(r, 0).data(CARD_ROLE).key for r in range(self.filter.rowCount())]

    def choose(self) -> None:
        """Load the chosen model through the picker (as a pick in the tool bar does), and close."""
        path = self.current_path()
        if not path:
            return
        self.accept()
        self._picker.local_chosen.emit(path)

    # --- inside ----------------------------------------------------------------------------
    def _card(self, path: str) -> Card:
        m = self.measured.get(path)
        resident = self._picker.resident(path)
        facts = [format_bytes(m.size) if m is not None and m.size is not None else "size being read…"]
        if m is not None and m.fit is not None:
            facts.append(f"needs {fit_figures(m.fit, compact=True)}")
        if resident is not None:
            state = "the chat's model" if resident.current else "pinned" if resident.pinned else "idle"
            where = f"In memory · {format_bytes(resident.memory.total)} · {state}"
        else:
            where = f"Not in memory · {Path(path).parent.name}"
        verdict = verdict_of(m.fit) if m is not None and m.fit is not None else ""
        if m is not None and m.fit is None:
            verdict = UNKNOWN
        hover = self._picker.hover(path) + (f"\n{fit_figures(m.fit)}" if m is not None and m.fit else "")
        if m is not None and m.why:
            hover += f"\nNo fit estimate: {m.why}"
        return Card(path, model_display_name(Path(path)), (" · ".join(facts), where), verdict,
                    mark="●" if resident is not None else "", hover=hover)

    def _measure(self) -> None:
        s = self._settings()
        at = (s.model.n_ctx, s.model.kv_type)
        if at != self._measured_at:
            self.measured, self._measured_at = {}, at
        todo = [p for p in self._picker.listed() if p not in self.measured]
        if todo:
            self.jobs.run(measure, todo, *at, then=lambda found: self._on_measured(at, found),
                          error=lambda _e: None)

    def _on_measured(self, at: tuple[int, str], found: dict[str, Measured]) -> None:
        if at != self._measured_at:
            return  # the settings changed meanwhile: a newer measure follows
        self.measured.update(found)
        self.refresh()

    def _select(self, path: str) -> None:
        rows = self.filter.rowCount()
        if not rows:
            return
        row = next((r for r in range(rows) if self.filter.index(r, 0).data(CARD_ROLE).key == path), 0)
        self.list.setCurrentIndex(self.filter.index(row, 0))

    def _on_query_text_changed(self, text: str) -> None:
        self.filter.set_words(text)
        if self.filter.rowCount():
            self.list.setCurrentIndex(self.filter.index(0, 0))

    def _move(self, step: int) -> None:
        rows = self.filter.rowCount()
        if rows:
            row = min(rows - 1, max(0, self.list.currentIndex().row() + step))
            self.list.setCurrentIndex(self.filter.index(row, 0))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.query and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            steps = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_PageDown: 5, Qt.Key.Key_PageUp: -5}
            if event.key() in steps:
                self._move(steps[Qt.Key(event.key())])
                return True
        return super().eventFilter(watched, event)

    def _place(self) -> None:
        owner = self.parentWidget()
        if owner is None:
            self.resize(COLUMN.min_width + SPACE.xxl * 4, COLUMN.min_width)
            return
        width = min(COLUMN.min_width + SPACE.xxl * 4, owner.width() - 2 * SPACE.xl)
        height = min(COLUMN.min_width, owner.height() - 2 * SPACE.xxl)
        self.resize(width, height)
        top_left = owner.mapToGlobal(owner.rect().topLeft())
        self.move(top_left.x() + (owner.width() - width) // 2, top_left.y() + SPACE.xxl * 2)

