"""The Models folder as the window takes it: checked before Settings accepts it (`folder_problem`), and
at start-up (`usable_at_start`), where one that cannot be used gives way to the default with a notice,
so the Models page never opens blank on a folder that is not there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from prefill.hub.errors import ModelsDirUnusable
from prefill.hub.paths import check_models_dir, default_models_dir
from prefill.store.app_settings import Settings


def folder_problem(text: str, create: bool) -> str:
    """Why the Models folder typed in Settings cannot be used, in words ("" when it can, or is the default).
    `create`: make it now and write in it (OK pressed); else only look (while typing)."""
    if not text.strip():
        return ""
    try:
        check_models_dir(Path(text.strip()), create)
    except ModelsDirUnusable as e:
        return f"This folder cannot hold models: {e.why}. Choose another, or leave it empty for the default."
    return ""


def usable_at_start(settings: Settings) -> tuple[Settings, str]:
    """The settings with a Models folder that can be used (made if missing), and a notice ("" for none):
    one that cannot be used is replaced by the default for this session, and saved so with the window."""
    chosen = settings.ui.models_dir
    if not chosen:
        return settings, ""
    try:
        check_models_dir(Path(chosen))
    except ModelsDirUnusable as e:
        fallback = replace(settings, ui=replace(settings.ui, models_dir=""))
        return fallback, (f"The Models folder {chosen} cannot be used ({e.why}), so models are kept in "
                          f"{default_models_dir()}. Choose another in Settings › Downloads.")
    return settings, ""
