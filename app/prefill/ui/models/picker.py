"""The model picker: model files beside saved remote endpoints, and the ways to add either.

Signals:
    local_chosen(str): a model file's path.
    remote_chosen(object): a SavedEndpoint.
    open_file_requested(): "Open a .gguf file…" was picked.
    add_remote_requested(): "Add a remote endpoint…" was picked.
    edit_remote_requested(object): "Edit or remove ‹name›…" was picked: that SavedEndpoint.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox

from prefill.engine.gguf.projector_files import is_projector_name
from prefill.hub.model_names import model_display_name
from prefill.session.loaded import LoadedModel
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.widgets.plain_text import tooltip

OPEN_FILE = "<open>"
ADD_REMOTE = "<remote>"
EDIT_REMOTE = "edit:"  # item data: EDIT_REMOTE + the endpoint's name
REMOTE = "endpoint:"  # item data: REMOTE + the endpoint's name


def loaded_name(m: LoadedModel) -> str:
    """The loaded model as a person reads it: a remote's model as the server names it, a file by the
    name read from the file and its repository (the raw general.name is for a tooltip)."""
    return m.name if m.remote else model_display_name(m.path, m.name)


class ModelPicker(QObject):
    """Keeps the toolbar's combo box: files, endpoints, then the two actions."""

    local_chosen = Signal(str)
    remote_chosen = Signal(object)
    open_file_requested = Signal()
    add_remote_requested = Signal()
    edit_remote_requested = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setMinimumWidth(280)
        self.combo.setObjectName("model-picker")
        self.paths: list[str] = []
        self.endpoints: list[SavedEndpoint] = []
        self.combo.activated.connect(self._on_combo_activated)
        self.fill()

    def set_paths(self, paths: list[str]) -> None:
        # a projector is no model to chat with
        self.paths = [p for p in dict.fromkeys(paths) if not is_projector_name(p)]
        self.fill()

    def set_endpoints(self, endpoints: list[SavedEndpoint]) -> None:
        self.endpoints = list(endpoints)
        self.fill()

    def endpoint_names(self) -> set[str]:
        return {e.name for e in self.endpoints}

    def fill(self) -> None:
        current = self.combo.currentData()
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("Choose a model…", "")
        for p in self.paths:  # a name a person reads; the file itself on hover
            self.combo.addItem(model_display_name(Path(p)), p)
            self.combo.setItemData(self.combo.count() - 1, tooltip(p), Qt.ItemDataRole.ToolTipRole)
        for e in self.endpoints:
            self.combo.addItem(f"⇄ {e.name} · {e.model or 'its first model'}", REMOTE + e.name)
        self.combo.addItem("Open a .gguf file…", OPEN_FILE)
        self.combo.addItem("Add a remote endpoint…", ADD_REMOTE)
        for e in self.endpoints:
            self.combo.addItem(f"Edit or remove {e.name}…", EDIT_REMOTE + e.name)
        self.combo.setCurrentIndex(max(self.combo.findData(current), 0))
        self.combo.blockSignals(False)

    def show_current(self, data: str) -> None:
        """Select the entry of what is loaded (a path, or REMOTE + an endpoint's name)."""
        self.combo.setCurrentIndex(max(self.combo.findData(data), 0))

    def _on_combo_activated(self, index: int) -> None:
        data = self.combo.itemData(index)
        if data == OPEN_FILE:
            self.open_file_requested.emit()
        elif data == ADD_REMOTE:
            self.add_remote_requested.emit()
        elif isinstance(data, str) and data.startswith((REMOTE, EDIT_REMOTE)):
            name = data.partition(":")[2]
            found = [e for e in self.endpoints if e.name == name]
            if found:
                (self.remote_chosen if data.startswith(REMOTE) else self.edit_remote_requested).emit(found[0])
        elif data:
            self.local_chosen.emit(data)
