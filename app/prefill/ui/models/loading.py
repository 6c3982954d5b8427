"""Loading a model, or connecting to a remote endpoint: the engine worker's load, the tool bar's line
that says how it goes and its Cancel, and the store's marker of a load in progress (a crash during a
load is known at the next start). What a loaded model changes elsewhere (the sidebar, the chat, the
title) the window connects to this room's signals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel

from prefill.hub.model_names import model_display_name
from prefill.session.loaded import LoadedModel
from prefill.store.app_settings import Settings
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.models.picker import REMOTE, loaded_name
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.store_worker import StoreProxy


class ModelLoading(QObject):
    """The model in use and the load in progress.

    Signals:
        started(str): a load began: the name of what loads (a model file's, an endpoint's).
        loaded(object): the LoadedModel now in use.
        failed(str, str): the load failed: the engine's reason, and the sentence to show (with a next step).
        cancelled(): the load was cancelled (not one a newer load superseded).
    """

    started = Signal(str)
    loaded = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()

    def __init__(self, worker: EngineWorker, store: StoreProxy, state: QLabel, cancel: QAction,
                 settings: Callable[[], Settings], parent: QObject | None = None):
        super().__init__(parent)
        self._worker, self._store, self._state, self._cancel, self._settings = worker, store, state, cancel, settings
        self.model: LoadedModel | None = None
        self.tag = 0  # the worker's tag of the last load asked for
        self._remote = False  # the load in progress is a remote endpoint's
        worker.loaded.connect(self._on_worker_loaded)
        worker.load_failed.connect(self._on_worker_load_failed)
        worker.load_cancelled.connect(self._on_worker_load_cancelled)
        cancel.triggered.connect(self._on_cancel_triggered)

    def load(self, path: str) -> None:
        """Load a local model file, with its own load settings or the defaults."""
        self.model = None
        self.started.emit(model_display_name(path))
        self._state.setText(f"  loading {Path(path).name}…")
        self._cancel.setVisible(True)
        self._store.begin_load(path)  # runs before any later store call
        self._remote = False
        self.tag = self._worker.load(path, self._settings().load_settings_for(path))

    def load_remote(self, endpoint: SavedEndpoint) -> None:
        """Chat through a saved remote endpoint instead of a local model."""
        self.model = None
        self.started.emit(endpoint.name)
        self._state.setText(f"  connecting to {endpoint.name}…")
        self._cancel.setVisible(True)
        self._remote = True
        self.tag = self._worker.load_remote(endpoint)

    def picker_entry(self) -> str:
        """The picker's entry for what is loaded ("" for nothing)."""
        if self.model is None:
            return ""
        return REMOTE + self.model.endpoint if self.model.remote else str(self.model.path)

    def _on_worker_loaded(self, m: LoadedModel) -> None:
        if not m.remote:
            self._store.end_load()
        self.model = m
        self._state.setText(f"  {loaded_name(m)} · {m.backend_summary}")
        self._cancel.setVisible(False)
        self.loaded.emit(m)

    def _on_worker_load_failed(self, reason: str) -> None:
        self._cancel.setVisible(False)
        if self._remote:  # the reason is worded with its next step already
            self._state.setText("  endpoint failed to connect")
            self.failed.emit(reason, f"The endpoint could not be used. {reason} The app is still usable.")
            return
        self._store.end_load()
        self._state.setText("  model failed to load")
        self.failed.emit(reason, f"The model could not be loaded: {reason}. Pick another file; the app is still "
                                 "usable.")

    def _on_cancel_triggered(self) -> None:
        # Called here, not connected to the worker's slot: that would queue it behind the load.
        self._worker.cancel_load()

    def _on_worker_load_cancelled(self, tag: int) -> None:
        self._store.end_load()
        if tag == self.tag:  # not one a newer load superseded
            self._state.setText("  no model loaded")
            self._cancel.setVisible(False)
            self.cancelled.emit()
