"""The two themes' colours: one role, its light and its dark value side by side.

Every colour the window draws with is a role here; widgets and style sheets name the role, never a
``#rrggbb`` of their own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ThemeColours:
    """The colours of one theme, as ``#rrggbb``."""

    window: str
    base: str
    alternate_base: str
    text: str
    muted: str
    button: str
    highlight: str
    highlighted_text: str
    link: str
    user_bubble: str
    assistant_bubble: str
    card: str
    border: str
    kv_track: str
    kv_green: str
    kv_amber: str
    kv_red: str
    focus: str
    hover: str
    danger: str


# Each role's colour in the light and the dark theme, side by side.
_ROLES: dict[str, tuple[str, str]] = {
    "window": ("#f3f4f6", "#1c1f24"),
    "base": ("#ffffff", "#0f1115"),
    "alternate_base": ("#f6f8fa", "#1f232a"),
    "text": ("#1f2328", "#e6edf3"),
    "muted": ("#656d76", "#8d96a0"),
    "button": ("#eef0f3", "#2a2f37"),
    "highlight": ("#2f6fde", "#3b82f6"),
    "highlighted_text": ("#ffffff", "#ffffff"),
    "link": ("#0969da", "#4493f8"),
    "user_bubble": ("#dbeafe", "#1e3a5f"),
    "assistant_bubble": ("#ffffff", "#22262d"),
    "card": ("#ffffff", "#22262d"),
    "border": ("#d0d7de", "#3a404a"),
    "kv_track": ("#e5e7eb", "#30363d"),
    "kv_green": ("#16a34a", "#22c55e"),
    "kv_amber": ("#d97706", "#f59e0b"),
    "kv_red": ("#dc2626", "#ef4444"),
    # The keyboard's place: darker than the highlight in light, lighter in dark, so it reads on
    # buttons, bubbles and the window alike (at least 3:1 against each, WCAG 2.2's focus contrast).
    "focus": ("#1d4ed8", "#93c5fd"),
    "hover": ("#e3e6ea", "#333944"),  # a button or a list row under the pointer
    "danger": ("#b91c1c", "#f87171"),  # what is wrong with a value, beside its field
}
LIGHT = ThemeColours(**{role: pair[0] for role, pair in _ROLES.items()})
DARK = ThemeColours(**{role: pair[1] for role, pair in _ROLES.items()})
_COLOURS = {"light": LIGHT, "dark": DARK}


def colours_for(effective: str) -> ThemeColours:
    """The colours of "light" or "dark".

    Raises:
        ValueError: ``effective`` is neither.
    """
    if effective not in _COLOURS:
        raise ValueError(f"effective theme must be 'light' or 'dark', not {effective!r}")
    return _COLOURS[effective]
