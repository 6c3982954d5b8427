"""Light and dark themes: the Fusion style (under :mod:`app_style`), the body font, a palette and the
style sheet.

The theme follows the system's colour scheme (Qt 6.5+ ``QStyleHints.colorScheme``)
unless the settings choose "light" or "dark". :func:`apply_theme` applies a choice
once; :class:`ThemeFollower` re-applies it when the system scheme changes while
the choice is "system".

The colours are roles in :mod:`colours`, the sizes named values in :mod:`tokens`; the style sheet
is put together from one piece per room in :mod:`styles`, each styling widgets by the object names
set where they are built.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from prefill.ui.widgets.app_style import apply_style
from prefill.ui.widgets.code_palette import DARK_CODE, LIGHT_CODE, CodePalette
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.styles import style_sheet

THEME_CHOICES = ("system", "light", "dark")
KV_AMBER_FROM = 0.6
KV_RED_FROM = 0.85
_CODE = {"light": LIGHT_CODE, "dark": DARK_CODE}


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
    c = colours_for(effective)
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


def kv_bar_style(fraction: float, effective: str = "light") -> str:
    """Style sheet for the KV cache bar: green below 60 % full, amber below 85 %, red above."""
    c = colours_for(effective)
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
    colours_for(effective)
    return _CODE[effective]


def apply_theme(app: QApplication, choice: str) -> str:
    """Set the style (Fusion, no icons on dialog buttons), the body font, the palette and the style sheet
    for ``choice``.

    Returns:
        The effective theme, "light" or "dark".

    Raises:
        ValueError: ``choice`` is not "system", "light" or "dark".
    """
    effective = effective_theme(app, choice)
    apply_style(app)
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
