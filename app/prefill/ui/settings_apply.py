"""What a change of settings does to the running window: each part that reads a setting subscribes to
its keys (ui/wiring/settings_changes.py), and is called on the GUI thread when one of them changes.

The engine worker takes the cache budget, the tool rounds, speculative decoding and the resident models'
limits at once (on the engine thread, no reload: a draft model is loaded or freed beside the model, idle
models past the new limits are unloaded); the theme is re-applied;
and only a change of a load setting as the loaded model takes it (its own, or the defaults) reloads
the model (after the answer in progress, if one is).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QApplication, QWidget

from prefill.session.loaded import LoadedModel
from prefill.store.app_settings import ModelSettings, Settings
from prefill.ui.settings_dialog import needs_reload
from prefill.ui.widgets.plain_text import inform
from prefill.ui.widgets.theme import ThemeFollower, apply_theme
from prefill.ui.wiring.settings_changes import SettingsChanges
from prefill.ui.workers.engine_worker import EngineWorker

MIB = 1024 * 1024
# The fields ModelSettings.speculation() reads.
SPECULATION_KEYS = ("model.speculative", "model.draft_model_path", "model.draft_max")


def send_speculation(worker: EngineWorker, model: ModelSettings) -> None:
    """Speculative decoding as `model` says, for the loaded engine and the next loads."""
    worker.set_speculation(model.speculation())


def follow_engine_settings(worker: EngineWorker, changes: SettingsChanges) -> None:
    """The engine worker takes, now and on each change: the saved-cache budget (and reports its use), the
    tool rounds (read by the tool loop on the engine thread), speculative decoding (for every model loaded)
    and the resident models' limits (memory, count, idle time: idle models past them go at once)."""
    changes.subscribe("model.kv_disk_budget_mb",
                      lambda new, _old: worker.set_cache_budget(new.model.kv_disk_budget_mb * MIB), now=True)

    changes.subscribe("ui.max_tool_rounds", lambda new, _old: worker.set_max_tool_rounds(new.ui.max_tool_rounds),
                      now=True)
    changes.subscribe(SPECULATION_KEYS, lambda new, _old: send_speculation(worker, new.model), now=True)
    changes.subscribe("memory", lambda new, _old: worker.set_model_limits(*new.memory.limits()), now=True)


def follow_theme(changes: SettingsChanges, follower: Callable[[], ThemeFollower | None],
                 set_theme: Callable[[str], None]) -> None:
    """A change of theme: the follower (of the system's scheme) takes the choice; without one, the
    application's palette is set here and `set_theme` recolours what the palette does not reach."""
    def theme(new: Settings, _old: Settings) -> None:
        following = follower()
        if following is not None:
            following.set_choice(new.ui.theme)
            return
        app = QApplication.instance()
        if isinstance(app, QApplication):
            set_theme(apply_theme(app, new.ui.theme))

    changes.subscribe("ui.theme", theme)


def reload_on_load_settings(changes: SettingsChanges, loaded: Callable[[], LoadedModel | None],
                            busy: Callable[[], bool], busy_changed: SignalInstance,
                            load_model: Callable[[str], None], parent: QWidget) -> None:
    """Reload the local model loaded when a setting it loads with changes (its own, or the defaults):
    at once, or after the answer in progress (`busy()`, until `busy_changed(False)`)."""
    def reload_when_idle(now_busy: bool) -> None:
        if not now_busy:
            busy_changed.disconnect(reload_when_idle)
            model = loaded()
            if model is not None and not model.remote:
                load_model(str(model.path))

    def reload(new: Settings, old: Settings) -> None:
        model = loaded()
        if model is None or model.remote:  # a remote endpoint loads with its own settings
            return
        path = str(model.path)
        if not needs_reload(old.model_for(path), new.model_for(path)):
            return
        if busy():
            inform(parent, "Settings", "The model reloads after this answer; stop it to reload now.")
            busy_changed.connect(reload_when_idle)
        else:
            load_model(path)

    changes.subscribe(("model", "per_model"), reload)
