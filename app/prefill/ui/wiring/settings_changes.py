"""Settings reach the parts that care by subscription, as qutebrowser's ``config.changed`` does.

The window holds one `SettingsChanges`; a part subscribes to the keys it reads
(``changes.subscribe("model.kv_disk_budget_mb", apply)``, or a whole section: ``"ui"``), and each
new `Settings` the window takes calls it, on the GUI thread, only when one of its keys changed.
No function knows every widget, and a part added later subscribes without an edit elsewhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from PySide6.QtCore import QObject, QThread, Signal

from prefill.store.app_settings import PER_MODEL, SECTIONS, Settings

Subscriber = Callable[[Settings, Settings], None]  # (new, old)


def setting_keys() -> frozenset[str]:
    """Every key a part may subscribe to: a section ("model"), a field ("model.n_ctx"), "per_model"."""
    keys = {PER_MODEL, *SECTIONS}
    for name, section in SECTIONS.items():
        keys |= {f"{name}.{f.name}" for f in dataclasses.fields(section)}  # type: ignore[arg-type]
    return frozenset(keys)


def changed_keys(old: Settings, new: Settings) -> list[str]:
    """The fields that differ ("model.n_ctx", …, and "per_model" for a model file's own values)."""
    out = [f"{name}.{f.name}" for name, section in SECTIONS.items()
           for f in dataclasses.fields(section)  # type: ignore[arg-type]
           if getattr(getattr(old, name), f.name) != getattr(getattr(new, name), f.name)]
    if old.per_model != new.per_model:
        out.append(PER_MODEL)
    return out


def _matches(key: str, changed: str) -> bool:
    return changed == key or changed.startswith(key + ".")


class SettingsChanges(QObject):
    """The settings in force, and who is told when they change.

    Signals:
        changed(str): a setting changed, by its dotted key ("model.n_ctx"); once per key per change.
    """

    changed = Signal(str)

    def __init__(self, settings: Settings, parent: QObject | None = None):
        super().__init__(parent)
        self._settings = settings
        self._subscribers: list[tuple[tuple[str, ...], Subscriber]] = []
        self._keys = setting_keys()

    @property
    def settings(self) -> Settings:
        return self._settings

    def subscribe(self, keys: str | Iterable[str], callback: Subscriber, now: bool = False) -> None:
        """Call `callback(new, old)` when a setting under `keys` changes (once per change, however many
        of them changed); `now`: also once at once, with the settings in force as both.

        Raises:
            KeyError: A key that names no setting or section.
        """
        wanted = (keys,) if isinstance(keys, str) else tuple(keys)
        unknown = [k for k in wanted if k not in self._keys]
        if unknown:
            raise KeyError(f"no such setting: {', '.join(unknown)}")
        self._subscribers.append((wanted, callback))
        if now:
            callback(self._settings, self._settings)

    def set(self, new: Settings) -> None:
        """Take `new` as the settings in force and tell the parts whose keys changed (on the GUI thread)."""
        if QThread.currentThread() is not self.thread():
            raise RuntimeError("settings change on the thread that owns SettingsChanges (the GUI thread)")
        old, self._settings = self._settings, new
        keys = changed_keys(old, new)
        if not keys:
            return
        for key in keys:
            self.changed.emit(key)
        for wanted, callback in list(self._subscribers):
            if any(_matches(w, k) for w in wanted for k in keys):
                callback(new, old)
