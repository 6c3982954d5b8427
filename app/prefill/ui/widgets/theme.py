"""Light and dark themes: the Fusion style, a palette and a small style sheet.

The theme follows the system's colour scheme (Qt 6.5+ ``QStyleHints.colorScheme``)
unless the settings choose "light" or "dark". :func:`apply_theme` applies a choice
once; :class:`ThemeFollower` re-applies it when the system scheme changes while
the choice is "system".

The style sheet styles widgets by object name, set where they are built:
``message-user`` / ``message-assistant`` / ``message-notice`` (chat bubbles,
``QFrame``), ``message-title``, ``message-figures``, ``QGroupBox`` (sidebar cards)
and ``kv-bar`` (the KV cache bar, coloured by :func:`kv_bar_style` as it fills).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from prefill.ui.widgets.code_palette import DARK_CODE, LIGHT_CODE, CodePalette

THEME_CHOICES = ("system", "light", "dark")
KV_AMBER_FROM = 0.6
KV_RED_FROM = 0.85


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
}
LIGHT = ThemeColours(**{role: pair[0] for role, pair in _ROLES.items()})
DARK = ThemeColours(**{role: pair[1] for role, pair in _ROLES.items()})
_COLOURS = {"light": LIGHT, "dark": DARK}
_CODE = {"light": LIGHT_CODE, "dark": DARK_CODE}


def _check(effective: str) -> ThemeColours:
    if effective not in _COLOURS:
        raise ValueError(f"effective theme must be 'light' or 'dark', not {effective!r}")
    return _COLOURS[effective]


def system_theme(app: QGuiApplication) -> str:
    """The system's colour scheme as "light" or "dark" (light when the system does not say)."""
    return "dark" if app.styleHints().colorScheme() == Qt.ColorScheme.Dark else "light"


def effective_theme(app: QGuiApplication, choice: str) -> str:
    """What a choice ("system" | "light" | "dark") means now.

    Raises:
        ValueError: ``choice`` is not one of :data:`THEME_CHOICES`.
    """
    if choice not in THEME_CHOICES:
        raise ValueError(f"theme must be one of {', '.join(THEME_CHOICES)}, not {choice!r}")
    return system_theme(app) if choice == "system" else choice


def build_palette(effective: str) -> QPalette:
    """A complete QPalette for the Fusion style, disabled colours included."""
    c = _check(effective)
    roles = {
        QPalette.ColorRole.Window: c.window,
        QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.base,
        QPalette.ColorRole.AlternateBase: c.alternate_base,
        QPalette.ColorRole.ToolTipBase: c.card,
        QPalette.ColorRole.ToolTipText: c.text,
        QPalette.ColorRole.PlaceholderText: c.muted,
        QPalette.ColorRole.Text: c.text,
        QPalette.ColorRole.Button: c.button,
        QPalette.ColorRole.ButtonText: c.text,
        QPalette.ColorRole.BrightText: c.kv_red,
        QPalette.ColorRole.Highlight: c.highlight,
        QPalette.ColorRole.HighlightedText: c.highlighted_text,
        QPalette.ColorRole.Link: c.link,
        QPalette.ColorRole.LinkVisited: c.link,
        QPalette.ColorRole.Mid: c.border,
    }
    palette = QPalette()
    for role, colour in roles.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText,
                 QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.muted))
    return palette


def style_sheet(effective: str) -> str:
    """The application style sheet: chat bubbles, sidebar cards and the KV bar's frame."""
    c = _check(effective)
    return f"""
QFrame#message-user {{ background: {c.user_bubble}; border: 1px solid {c.border};
    border-radius: 10px; }}
QFrame#message-assistant {{ background: {c.assistant_bubble}; border: 1px solid {c.border};
    border-radius: 10px; }}
QFrame#message-notice, QFrame#message-summary {{ background: transparent; border: 1px dashed {c.border};
    border-radius: 10px; }}
QFrame#message-user QTextBrowser, QFrame#message-assistant QTextBrowser,
QFrame#message-notice QTextBrowser {{ background: transparent; border: none; }}
QLabel#message-title {{ font-weight: 600; }}
QLabel#message-figures, QLabel#message-sources-title, QLabel#passage-note {{ color: {c.muted}; }}
QGroupBox {{ background: {c.card}; border: 1px solid {c.border}; border-radius: 8px;
    margin-top: 14px; padding: 8px 6px 6px 6px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px;
    color: {c.muted}; font-weight: 600; }}
{focus_ring(c)}"""


def focus_ring(c: ThemeColours) -> str:
    """A 2 px ring in the focus colour on whatever has the keyboard.

    Fusion's own focus mark is a faint tint of the highlight, hard to find in the dark theme.
    Each rule sets the background as well as the border: a style sheet that draws a widget's
    border draws its background too, and would leave it blank otherwise.
    """
    ring = f"border: 2px solid {c.focus}; border-radius: 4px;"
    return f"""
QPushButton:focus {{ {ring} background: {c.button}; padding: 3px 10px; }}
QToolButton:focus {{ {ring} background: {c.alternate_base}; padding: 1px 3px; }}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus, QAbstractItemView:focus {{ {ring} background: {c.base}; }}
QAbstractScrollArea:focus {{ {ring} }}
QComboBox:focus {{ {ring} background: {c.button}; padding: 0 2px; }}
QCheckBox:focus, QRadioButton:focus {{ {ring} }}
QSpinBox:focus, QDoubleSpinBox:focus, QSlider:focus {{ {ring} }}
"""


def kv_bar_style(fraction: float, effective: str = "light") -> str:
    """Style sheet for the KV cache bar: green below 60 % full, amber below 85 %, red above."""
    c = _check(effective)
    if fraction < KV_AMBER_FROM:
        chunk = c.kv_green
    elif fraction < KV_RED_FROM:
        chunk = c.kv_amber
    else:
        chunk = c.kv_red
    return (
        f"QProgressBar {{ background: {c.kv_track}; border: 1px solid {c.border}; "
        f"border-radius: 4px; min-height: 8px; max-height: 8px; }}"
        f"QProgressBar::chunk {{ background-color: {chunk}; border-radius: 3px; }}"
    )


def code_palette(effective: str) -> CodePalette:
    """The markdown colours (code, links) that go with a theme."""
    _check(effective)
    return _CODE[effective]


def apply_theme(app: QApplication, choice: str) -> str:
    """Set the Fusion style, the palette and the style sheet for ``choice``.

    Returns:
        The effective theme, "light" or "dark".

    Raises:
        ValueError: ``choice`` is not "system", "light" or "dark".
    """
    effective = effective_theme(app, choice)
    app.setStyle("Fusion")
    app.setPalette(build_palette(effective))
    app.setStyleSheet(style_sheet(effective))
    return effective


class ThemeFollower(QObject):
    """Applies the chosen theme, and again whenever the system scheme changes under "system".

    Signals:
        theme_changed(str): the effective theme ("light" | "dark") after it changed.
    """

    theme_changed = Signal(str)

    def __init__(self, app: QApplication, choice: str = "system") -> None:
        super().__init__(app)
        self._app = app
        self._choice = choice
        self._effective = apply_theme(app, choice)
        app.styleHints().colorSchemeChanged.connect(self._on_style_hints_color_scheme_changed)

    @property
    def effective(self) -> str:
        """The theme in use: "light" or "dark"."""
        return self._effective

    @property
    def choice(self) -> str:
        """The setting: "system", "light" or "dark"."""
        return self._choice

    def set_choice(self, choice: str) -> str:
        """Apply a new setting; returns the effective theme."""
        effective_theme(self._app, choice)  # validate before changing anything
        self._choice = choice
        self._reapply()
        return self._effective

    def _on_style_hints_color_scheme_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self._choice == "system":
            self._reapply()

    def _reapply(self) -> None:
        effective = apply_theme(self._app, self._choice)
        if effective != self._effective:
            self._effective = effective
            self.theme_changed.emit(effective)
