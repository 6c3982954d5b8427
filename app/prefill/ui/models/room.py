"""The models room wires its picker: every model of the library listed (read on a pool job), the
saved remote endpoints listed from the store, the resident models marked with their memory, and
what a choice in it asks for (load a file, connect to an endpoint, open a file, add or edit an
endpoint, unload or pin a resident model); and its finder (Ctrl+K), which offers its own action
to the window's shortcuts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from prefill.store.app_settings import Settings
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.models.finder import ModelFinder
from prefill.ui.models.picker import ModelPicker
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.pool_jobs import PoolJobs
from prefill.ui.workers.store_worker import StoreProxy


def wire_model_choice(picker: ModelPicker, store: StoreProxy, load_local: Callable[[str], None],
                      load_remote: Callable[[SavedEndpoint], None], open_file: Callable[[], None],
                      edit_remote: Callable[[SavedEndpoint | None], None]) -> None:
    """Connect the picker to what its choices do; `edit_remote(None)` adds an endpoint."""
    picker.local_chosen.connect(load_local)
    picker.remote_chosen.connect(load_remote)
    picker.open_file_requested.connect(open_file)
    picker.add_remote_requested.connect(lambda: edit_remote(None))
    picker.edit_remote_requested.connect(edit_remote)
    store.load_endpoints(then=picker.set_endpoints)


def wire_residents(picker: ModelPicker, worker: EngineWorker, notice: Callable[[str], None]) -> None:
    """The picker marks the models in memory as the engine reports them; its menu unloads or pins one
    (on the engine thread, queued behind any answer, so a model generating is never unloaded)."""
    worker.residents_changed.connect(picker.set_residents)
    worker.resident_refused.connect(notice)
    picker.unload_requested.connect(worker.unload_model)
    picker.pin_requested.connect(worker.pin_model)


class OffersActions(Protocol):
    """Where a room offers the actions the window's shortcuts run by name (ui/wiring/room_actions.py)."""

    def offer(self, name: str, run: Callable[[], None]) -> None: ...


def wire_finder(picker: ModelPicker, actions: OffersActions, settings: Callable[[], Settings],
                window: QWidget) -> ModelFinder:
    """The finder over `window`: opened by its shortcut's action ("find-model", Ctrl+K) and by the
    picker's "Find a model…"; its cards follow the picker's models."""
    finder = ModelFinder(picker, settings, window)
    picker.find_requested.connect(finder.open_finder)
    picker.changed.connect(finder.follow)
    actions.offer("find-model", finder.open_finder)
    return finder


class LibraryListing(QObject):
    """Reads the model library (the models folder, the Hugging Face cache, the bundled model) on a pool
    job and hands the picker every model in it; `refresh` reads it again (after a download)."""

    def __init__(self, picker: ModelPicker, models_dir: Callable[[], Path], notice: Callable[[str], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self._picker, self._models_dir, self._notice = picker, models_dir, notice
        self.jobs = PoolJobs(1, self)

    def refresh(self) -> None:
        self.jobs.run(_library_paths, self._models_dir(), then=self._picker.set_library,
                      error=lambda e: self._notice(f"The model library could not be read: {e}"))

    def close(self, timeout_ms: int = 2000) -> None:
        self.jobs.close(timeout_ms)


def _library_paths(models_dir: Path) -> list[str]:
    """The files of every usable model in the library, in its order (pool thread)."""
    from prefill.hub.library import ModelLibrary

    return [str(m.path) for m in ModelLibrary(models_dir).models() if not m.error]
