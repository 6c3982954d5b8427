"""Add a remote endpoint: an OpenAI-compatible server's URL, an optional key, and one of its models.

"List models" asks the server's /v1/models on a pool thread (never the GUI thread) and fills
the model list; a failure is said in words under the fields. The key is typed like a password
and kept by the store in a file only its owner can read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from prefill.remote.errors import RemoteError
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.workers.pool_jobs import PoolJobs
from prefill.ui.workers.remote_messages import remote_error_text

if TYPE_CHECKING:
    from prefill.ui.models.picker import ModelPicker
    from prefill.ui.workers.store_worker import StoreProxy


def list_models(url: str, key: str) -> list[str]:
    """The ids the endpoint lists (on a pool thread). Raises RemoteError."""
    from prefill.remote.engine import RemoteEngine

    engine = RemoteEngine(url, api_key=key)
    try:
        return engine.list_models()
    finally:
        engine.close()


REMOVED = 2  # the dialog's result when "Remove" was pressed


class EndpointDialog(QDialog):
    """Name, URL, key and model of a remote endpoint; `endpoint()` once accepted.

    With `existing`, it edits that endpoint (its fields filled in) and offers "Remove"; `exec()`
    then returns REMOVED if the user removed it.
    """

    def __init__(self, taken: set[str], parent: QWidget | None = None, existing: SavedEndpoint | None = None):
        super().__init__(parent)
        self.setWindowTitle("Edit a remote endpoint" if existing else "Add a remote endpoint")
        self._taken = taken - {existing.name} if existing else taken
        self._jobs = PoolJobs(1, self)
        self.name = QLineEdit()
        self.name.setPlaceholderText("GPU box")
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://192.168.1.20:8080")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("optional")
        self.model = QComboBox()
        self.model.setEditable(True)
        self.list_button = QPushButton("List models")
        self.status = plain_label()
        self.status.setObjectName("endpoint-status")
        self.status.setWordWrap(True)
        form = QFormLayout()
        form.addRow(plain_label("Name"), self.name)
        form.addRow(plain_label("URL"), self.url)
        form.addRow(plain_label("API key"), self.key)
        form.addRow(plain_label("Model"), self.model)
        form.addRow(plain_label(""), self.list_button)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.list_button.clicked.connect(self._on_list_button_clicked)
        self.buttons.accepted.connect(self._on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)
        if existing is not None:
            self.name.setText(existing.name)
            self.url.setText(existing.url)
            self.key.setText(existing.api_key)
            self.model.setEditText(existing.model)
            remove = self.buttons.addButton("Remove", QDialogButtonBox.ButtonRole.DestructiveRole)
            remove.clicked.connect(lambda: self.done(REMOVED))

    def endpoint(self) -> SavedEndpoint:
        return SavedEndpoint(self.name.text().strip(), self.url.text().strip(), self.model.currentText().strip(),
                             self.key.text().strip())

    def _url_problem(self) -> str:
        from prefill.remote.engine import api_base

        url = self.url.text().strip()
        if not url:
            return "Type the server's URL first."
        try:
            api_base(url)
        except RemoteError as err:
            return remote_error_text(err)
        return ""

    def _problem(self) -> str:
        name = self.name.text().strip()
        if not name:
            return "Give the endpoint a name (the model list shows it)."
        if name in self._taken:
            return f"An endpoint is already called {name!r}: pick another name."
        return self._url_problem()

    def _on_list_button_clicked(self) -> None:
        problem = self._url_problem()
        if problem:
            self.status.setText(problem)
            return
        self.list_button.setEnabled(False)
        self.status.setText("Asking the server for its models…")
        self._jobs.run(list_models, self.url.text().strip(), self.key.text().strip(),
                       then=self._on_models_listed, error=self._on_models_failed)

    def _on_models_listed(self, models: list[str]) -> None:
        self.list_button.setEnabled(True)
        current = self.model.currentText()
        self.model.clear()
        self.model.addItems(models)
        if current in models:
            self.model.setCurrentText(current)
        self.status.setText(f"The server lists {len(models)} model{'s' if len(models) != 1 else ''}."
                            if models else "The server lists no models.")

    def _on_models_failed(self, error: Exception) -> None:
        self.list_button.setEnabled(True)
        self.status.setText(remote_error_text(error) if isinstance(error, RemoteError) else str(error))

    def _on_buttons_accepted(self) -> None:
        problem = self._problem()
        if problem:
            self.status.setText(problem)
            return
        self.accept()

    def done(self, result: int) -> None:
        self._jobs.close(0)  # a listing still running is left to finish; its answer is dropped
        super().done(result)


def edit_endpoint(parent: QWidget, existing: SavedEndpoint | None, picker: ModelPicker, store: StoreProxy,
                  use: Callable[[SavedEndpoint], None]) -> None:
    """Add an endpoint (or edit or remove `existing`) with the dialog; the store keeps it (off the GUI
    thread), the picker lists the result, and a saved endpoint is handed to `use` (connect to it)."""
    dialog = EndpointDialog(picker.endpoint_names(), parent, existing)
    result = dialog.exec()
    if not result:
        return
    old = existing.name if existing else ""
    if result == REMOVED:
        store.remove_endpoint(old, then=picker.set_endpoints)
        return
    endpoint = dialog.endpoint()

    def saved(endpoints: list[SavedEndpoint]) -> None:
        picker.set_endpoints(endpoints)
        use(endpoint)

    store.put_endpoint(endpoint, replacing=old, then=saved)
