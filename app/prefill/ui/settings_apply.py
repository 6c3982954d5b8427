"""What a change of settings does to the running window, once the Settings dialog is accepted.

Each change goes where it is consumed, and no further: the engine worker takes the cache budget,
the tool rounds and speculative decoding at once (on the engine thread, no reload: a draft model is
loaded or freed beside the model), the theme is re-applied, and only a change of a load setting
as the loaded model takes it (its own, or the defaults) reloads the model (after the answer in
progress, if one is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtWidgets import QApplication, QWidget

from prefill.store.app_settings import ModelSettings, Settings
from prefill.ui.settings_dialog import needs_reload
from prefill.ui.shared.plain_text import inform
from prefill.ui.shared.theme import apply_theme

if TYPE_CHECKING:
    from prefill.ui.shared.engine_worker import EngineWorker


class SettingsTarget(Protocol):
    """What of the main window a change of settings reaches (the window is one; a Protocol, so this
    module does not import the window that imports it)."""

    engine: Any  # EngineThread: .worker
    theme_follower: Any  # ThemeFollower | None
    loaded: Any  # LoadedModel | None
    controller: Any  # ChatController: .busy, .busy_changed
    def window(self) -> QWidget: ...

    def reload_when_idle(self, busy: bool) -> None: ...

    def set_theme(self, effective: str) -> None: ...

    def load_model(self, path: str) -> None: ...

MIB = 1024 * 1024


def speculation_changed(old: ModelSettings, new: ModelSettings) -> bool:
    return old.speculation() != new.speculation()


def send_speculation(worker: EngineWorker, model: ModelSettings) -> None:
    """Speculative decoding as `model` says, for the loaded engine and the next loads."""
    worker.set_speculation(model.speculation())


def apply_settings(window: SettingsTarget, old: Settings, new: Settings) -> None:
    """Apply the settings `window` now holds (`new`, changed from `old`)."""
    worker = window.engine.worker
    if new.model.kv_disk_budget_mb != old.model.kv_disk_budget_mb:
        worker.set_cache_budget(new.model.kv_disk_budget_mb * MIB)
    worker.max_tool_rounds = new.ui.max_tool_rounds  # read by the tool loop on the engine thread
    if speculation_changed(old.model, new.model):
        send_speculation(worker, new.model)
    if new.ui.theme != old.ui.theme:
        if window.theme_follower is not None:
            window.theme_follower.set_choice(new.ui.theme)
        else:
            app = QApplication.instance()
            if isinstance(app, QApplication):
                window.set_theme(apply_theme(app, new.ui.theme))
    path = str(window.loaded.path) if window.loaded is not None and not window.loaded.remote else ""
    if window.loaded is not None and needs_reload(old.model_for(path), new.model_for(path)):
        if window.controller.busy:
            inform(window.window(), "Settings", "The model reloads after this answer; stop it to reload now.")
            window.controller.busy_changed.connect(window.reload_when_idle)
        else:
            window.load_model(str(window.loaded.path))
