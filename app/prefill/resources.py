"""Where resources/ (icons, style) lives: the same lookup installed, editable and frozen."""

from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path | None:
    """<bundle>/resources in a frozen app; the repository's resources/ from a checkout or editable
    install. None when neither exists (a plain wheel install carries no resources)."""
    bundle = getattr(sys, "_MEIPASS", None)
    candidates = ([Path(bundle) / "resources"] if bundle else []) + [Path(__file__).resolve().parents[2] / "resources"]
    for c in candidates:
        if (c / "icons").is_dir():
            return c
    return None


def icon_path() -> Path | None:
    r = resources_dir()
    return r / "icons" / "prefill.svg" if r else None
