"""The model picker: model files beside saved remote endpoints, and the ways to add either.

It lists every model of the library (`set_paths`), marks those resident in memory with what they
take (`set_residents`: "● 1.2 GiB", the parts and whether llama.cpp measured them on hover), and
offers, on a right click on a resident one (in the list, or on the picker for the model shown), to
unload it or pin it. Its list opens as wide as its longest entry, so no mark is cut off.

Signals:
    local_chosen(str): a model file's path.
    unload_requested(str): "Unload from memory" on a resident model: its path.
    pin_requested(str, bool): "Pin in memory" (True) or "Unpin" (False) on a resident model: its path.
    remote_chosen(object): a SavedEndpoint.
    find_requested(): "Find a model…" was picked (the model finder opens: `finder.py`).
    changed(): the models listed changed (the library, the window's own, the resident ones).
    open_file_requested(): "Open a .gguf file…" was picked.
    add_remote_requested(): "Add a remote endpoint…" was picked.
    edit_remote_requested(object): "Edit or remove ‹name›…" was picked: that SavedEndpoint.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QPoint, Qt, Signal
from PySide6.QtWidgets import QComboBox, QMenu

from prefill.engine.gguf.projector_files import is_projector_name
from prefill.engine.units import format_bytes
from prefill.hub.model_names import model_display_name
from prefill.session.loaded import LoadedModel
from prefill.session.residents import ResidentModel, ResidentModels
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.widgets.plain_text import tooltip

OPEN_FILE = "<open>"
FIND = "<find>"
ADD_REMOTE = "<remote>"
EDIT_REMOTE = "edit:"  # item data: EDIT_REMOTE + the endpoint's name
REMOTE = "endpoint:"  # item data: REMOTE + the endpoint's name
IN_MEMORY = "●"  # a resident model's mark, before its memory


def loaded_name(m: LoadedModel) -> str:
    """The loaded model as a person reads it: a remote's model as the server names it, a file by the
    name read from the file and its repository (the raw general.name is for a tooltip)."""
    return m.name if m.remote else model_display_name(m.path, m.name)


class ModelPicker(QObject):
    """Keeps the toolbar's combo box: files, endpoints, then the two actions."""

    local_chosen = Signal(str)
    remote_chosen = Signal(object)
    find_requested = Signal()
    changed = Signal()
    open_file_requested = Signal()
    add_remote_requested = Signal()
    edit_remote_requested = Signal(object)
    unload_requested = Signal(str)
    pin_requested = Signal(str, bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setMinimumWidth(280)
        self.combo.setObjectName("model-picker")
        self.paths: list[str] = []  # the window's own: the bundled model, the last used
        self.library: list[str] = []  # every model of the library
        self.endpoints: list[SavedEndpoint] = []
        self.residents = ResidentModels()
        self._shown = ""  # the entry of what is loaded (`show_current`)
        self.combo.activated.connect(self._on_combo_activated)
        self.combo.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.combo.customContextMenuRequested.connect(self._on_combo_context_menu)
        view = self.combo.view()
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._on_view_context_menu)
        self.fill()

    def set_paths(self, paths: list[str]) -> None:
        # a projector is no model to chat with
        self.paths = [p for p in dict.fromkeys(paths) if not is_projector_name(p)]
        self.fill()

    def set_library(self, paths: list[str]) -> None:
        """Every model of the library (listed first)."""
        self.library = [p for p in dict.fromkeys(paths) if not is_projector_name(p)]
        self.fill()

    def set_endpoints(self, endpoints: list[SavedEndpoint]) -> None:
        self.endpoints = list(endpoints)
        self.fill()

    def set_residents(self, shown: ResidentModels) -> None:
        """The models in memory: marked in the list with their memory (a resident file not listed yet is
        added: one opened from disk)."""
        self.residents = shown
        self.fill()

    def resident(self, path: str) -> ResidentModel | None:
        return next((m for m in self.residents.models if m.path == path), None)

    def label(self, path: str) -> str:
        """An entry's text: the name a person reads; a resident model's starts with a dot (seen however
        narrow the picker) and ends with its memory."""
        name = model_display_name(Path(path))
        m = self.resident(path)
        if m is None:
            return name
        return f"{IN_MEMORY} {name} · {format_bytes(m.memory.total)}{' · pinned' if m.pinned else ''}"

    def hover(self, path: str) -> str:
        """An entry's tooltip (plain text): for a resident model what it takes, part by part, and whether
        llama.cpp measured it; then the file."""
        m = self.resident(path)
        if m is None:
            return path
        mem = m.memory
        parts = f"weights {format_bytes(mem.weights)}, KV cache {format_bytes(mem.kv)}, compute buffers " \
                f"{format_bytes(mem.compute)}" + (f", projector {format_bytes(mem.projector)}" if mem.projector else "")
        state = "the chat's model" if m.current else "pinned: never unloaded for room" if m.pinned else "idle"
        return f"In memory: {format_bytes(mem.total)} ({parts}; {mem.how()})\n{state[:1].upper()}{state[1:]}\n{path}"

    def resident_menu(self, path: str) -> QMenu | None:
        """The menu of a resident model (None for one not in memory): unload it, pin or unpin it."""
        m = self.resident(path)
        if m is None:
            return None
        menu = QMenu(self.combo)
        unload = menu.addAction("Unload from memory")
        unload.setEnabled(not m.current)
        if m.current:
            unload.setToolTip("The chat's model: pick another first")
        unload.triggered.connect(lambda: self.unload_requested.emit(path))
        pin = menu.addAction("Unpin (may be unloaded for room)" if m.pinned else "Pin in memory (never unloaded "
                             "for room)")
        pin.triggered.connect(lambda: self.pin_requested.emit(path, not m.pinned))
        return menu

    def _on_combo_context_menu(self, pos: QPoint) -> None:
        self._popup(self.combo.currentData(), self.combo.mapToGlobal(pos))

    def _on_view_context_menu(self, pos: QPoint) -> None:
        view = self.combo.view()
        self._popup(view.indexAt(pos).data(Qt.ItemDataRole.UserRole), view.mapToGlobal(pos))

    def _popup(self, data: object, at: QPoint) -> None:
        menu = self.resident_menu(data) if isinstance(data, str) else None
        if menu is not None:
            menu.exec(at)
            menu.deleteLater()

    def endpoint_names(self) -> set[str]:
        return {e.name for e in self.endpoints}

    def listed(self) -> list[str]:
        """Every model file the picker offers, in its order: the library, the window's own (the bundled
        model, the last used), then any resident one opened from disk."""
        return list(dict.fromkeys([*self.library, *self.paths, *(m.path for m in self.residents.models)]))

    def fill(self) -> None:
        current = self.combo.currentData()
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("Choose a model…", "")
        for p in self.listed():  # a name a person reads; the file itself (and its memory) on hover
            self.combo.addItem(self.label(p), p)
            self.combo.setItemData(self.combo.count() - 1, tooltip(self.hover(p)), Qt.ItemDataRole.ToolTipRole)
        for e in self.endpoints:
            self.combo.addItem(f"⇄ {e.name} · {e.model or 'its first model'}", REMOTE + e.name)
        self.combo.addItem("Find a model…  (Ctrl+K)", FIND)
        self.combo.addItem("Open a .gguf file…", OPEN_FILE)
        self.combo.addItem("Add a remote endpoint…", ADD_REMOTE)
        for e in self.endpoints:
            self.combo.addItem(f"Edit or remove {e.name}…", EDIT_REMOTE + e.name)
        self.combo.setCurrentIndex(max(self.combo.findData(current), 0))
        self.combo.blockSignals(False)
        self._fit_popup()
        self.changed.emit()

    def _fit_popup(self) -> None:
        """The list opens as wide as its longest entry (the combo itself keeps its width in the toolbar)."""
        view = self.combo.view()
        metrics = view.fontMetrics()  # the view's own hint counts only what it has laid out
        widest = max(metrics.horizontalAdvance(self.combo.itemText(i)) for i in range(self.combo.count()))
        padding = 2 * metrics.averageCharWidth()  # the item's margins, either side
        view.setMinimumWidth(widest + padding + view.verticalScrollBar().sizeHint().width() + 2 * view.frameWidth())
        self._show_hover()

    def _show_hover(self) -> None:
        data = self.combo.currentData()
        self.combo.setToolTip(tooltip(self.hover(data)) if isinstance(data, str) and data and
                              not data.startswith((REMOTE, EDIT_REMOTE, "<")) else "")

    def show_current(self, data: str) -> None:
        """Select the entry of what is loaded (a path, or REMOTE + an endpoint's name)."""
        self._shown = data
        self.combo.setCurrentIndex(max(self.combo.findData(data), 0))
        self._show_hover()

    def _on_combo_activated(self, index: int) -> None:
        data = self.combo.itemData(index)
        if data == OPEN_FILE:
            self.open_file_requested.emit()
        elif data == FIND:
            self.combo.setCurrentIndex(max(self.combo.findData(self._shown), 0))  # a command, not a choice
            self.find_requested.emit()
        elif data == ADD_REMOTE:
            self.add_remote_requested.emit()
        elif isinstance(data, str) and data.startswith((REMOTE, EDIT_REMOTE)):
            name = data.partition(":")[2]
            found = [e for e in self.endpoints if e.name == name]
            if found:
                (self.remote_chosen if data.startswith(REMOTE) else self.edit_remote_requested).emit(found[0])
        elif data:
            self.local_chosen.emit(data)
