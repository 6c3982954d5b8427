"""The load settings the window keeps for one model file (Settings → "this model only": its context, GPU
layers, KV type…), for `prefill serve --models-dir`: a model of the folder loads with them, as the window
would load it, so a load on demand does not ignore what the person set for that model."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

from prefill.commands.terminal_text import terminal_line
from prefill.engine.settings import LoadSettings
from prefill.store.app_settings import RELOAD_FIELDS
from prefill.store.errors import SettingsError
from prefill.store.settings_file import SettingsFile

OwnSettings = Callable[[Path], LoadSettings | None]


def own_settings(base: LoadSettings, settings_file: SettingsFile | None = None) -> OwnSettings:
    """A file's own load settings over `base` (the server's flags), or None where the window keeps none
    for it. An unreadable settings file is said on stderr and nothing is taken from it."""
    try:
        per_model = (settings_file or SettingsFile()).load().per_model
    except SettingsError as e:
        print(f"prefill: the window's per-model settings are not used: {terminal_line(str(e))}", file=sys.stderr)
        per_model = {}

    def of(path: Path) -> LoadSettings | None:
        own = per_model.get(str(path)) or per_model.get(str(path.resolve())) or {}
        fields = {k: v for k, v in own.items() if k in RELOAD_FIELDS}
        return dataclasses.replace(base, **fields) if fields else None

    return of
