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
    composer_send: str
    meter_system: str
    meter_tools: str
    meter_documents: str
    meter_conversation: str
    highlight: str
    highlighted_text: str
    link: str
    user_bubble: str
    assistant_bubble: str
    card: str
    border: str
    toast: str
    toast_text: str
    search_match: str
    kv_track: str
    kv_green: str
    kv_amber: str
    kv_red: str
    focus: str
    fit_good: str
    fit_good_bg: str
    fit_partial: str
    fit_partial_bg: str
    fit_cpu: str
    fit_cpu_bg: str
    fit_no: str
    fit_no_bg: str
    code_block: str
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
    # The composer's Send button, and the context meter's parts (the prompt's order: system, tools,
    # documents, conversation), each told apart from the others and from the track in both themes.
    "composer_send": ("#dbeafe", "#1e3a5f"),
    "meter_system": ("#64748b", "#94a3b8"),
    "meter_tools": ("#7c3aed", "#a78bfa"),
    "meter_documents": ("#0d9488", "#2dd4bf"),
    "meter_conversation": ("#2f6fde", "#3b82f6"),
    "highlight": ("#2f6fde", "#3b82f6"),
    "highlighted_text": ("#ffffff", "#ffffff"),
    "link": ("#0969da", "#4493f8"),
    "user_bubble": ("#dbeafe", "#1e3a5f"),
    "assistant_bubble": ("#ffffff", "#22262d"),
    "card": ("#ffffff", "#22262d"),
    "border": ("#d0d7de", "#3a404a"),
    # Passing news over the page: dark on the light theme, light on the dark, so it stands off either.
    "toast": ("#24292f", "#e6edf3"),
    "toast_text": ("#ffffff", "#1f2328"),
    # Behind the words a search found, in the chat list: a marker's yellow (dark amber in the dark theme).
    "search_match": ("#fde68a", "#7c5a0a"),
    "kv_track": ("#e5e7eb", "#30363d"),
    "kv_green": ("#16a34a", "#22c55e"),
    "kv_amber": ("#d97706", "#f59e0b"),
    "kv_red": ("#dc2626", "#ef4444"),
    # The keyboard's place: darker than the highlight in light, lighter in dark, so it reads on
    # buttons, bubbles and the window alike (at least 3:1 against each, WCAG 2.2's focus contrast).
    "focus": ("#1d4ed8", "#93c5fd"),
    # A fit verdict's chip (the Models page, the model finder): its words on a soft fill of the same hue,
    # at least 4.5:1 in both themes. Good: on the GPU whole; partial: split; cpu: runs, on the CPU; no: too big.
    "fit_good": ("#166534", "#86efac"),
    "fit_good_bg": ("#dcfce7", "#14532d"),
    "fit_partial": ("#1e40af", "#bfdbfe"),
    "fit_partial_bg": ("#dbeafe", "#1e3a8a"),
    "fit_cpu": ("#92400e", "#fde68a"),
    "fit_cpu_bg": ("#fef3c7", "#713f12"),
    "fit_no": ("#991b1b", "#fecaca"),
    "fit_no_bg": ("#fee2e2", "#7f1d1d"),
    "code_block": ("#f6f8fa", "#161b22"),  # a code block's rounded box (the code palette's background)
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
