"""The application's style under the style sheet: Fusion, with the few icons Qt draws by itself
(message boxes, a line edit's clear button, a dock's close button) taken from the line-icon set; a spin
box's number off its left border; and the body font at the type scale's size.

Qt puts stock icons on dialog buttons (a folder on Save, a red cross on Cancel) wherever the platform
theme asks for them (KDE, most X11 desktops); the style sheet's ``dialogbuttonbox-buttons-have-icons: 0``
(styles/base.py) leaves every QDialogButtonBox with words alone. (An override of ``styleHint`` here did the
same, but Qt asks a style for its hints thousands of times while the window opens, and each answer from a
Python override crossed into Python.)
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QIcon
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QLineEdit,
    QProxyStyle,
    QStyle,
    QStyleFactory,
    QStyleOption,
    QWidget,
)

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.tokens import SPACE, TYPE

# Qt's own pictures that the application shows anyway, and the line icon drawn in their place.
_OWN_ICONS: dict[QStyle.StandardPixmap, str] = {
    QStyle.StandardPixmap.SP_MessageBoxQuestion: "question",
    QStyle.StandardPixmap.SP_MessageBoxInformation: "info",
    QStyle.StandardPixmap.SP_MessageBoxWarning: "warning",
    QStyle.StandardPixmap.SP_MessageBoxCritical: "warning",
    QStyle.StandardPixmap.SP_LineEditClearButton: "close",
    QStyle.StandardPixmap.SP_TitleBarCloseButton: "close",
    QStyle.StandardPixmap.SP_DockWidgetCloseButton: "close",
    QStyle.StandardPixmap.SP_TitleBarNormalButton: "pop-out",  # a dock's float button
}


class PrefillStyle(QProxyStyle):
    """Fusion (or ``base``) with line icons where Qt drew its own."""

    def __init__(self, base: QStyle | None = None) -> None:
        super().__init__(base if base is not None else QStyleFactory.create("Fusion"))

    def polish(self, target):  # type: ignore[no-untyped-def]  # Qt's three overloads in one
        """Qt's polish, and a spin box's number kept off its left border (a style sheet's padding moves
        a spin box's arrows, never its editor, which Qt lays flush against the border)."""
        result = super().polish(target)
        if isinstance(target, QAbstractSpinBox):
            editor = target.findChild(QLineEdit)
            if editor is not None:
                editor.setTextMargins(SPACE.sm, 0, 0, 0)
        return result

    def standardIcon(self, standardIcon: QStyle.StandardPixmap, option: QStyleOption | None = None,
                     widget: QWidget | None = None) -> QIcon:
        name = _OWN_ICONS.get(standardIcon)
        return icon(name) if name is not None else super().standardIcon(standardIcon, option, widget)


def body_font(base: QFont) -> QFont:
    """``base`` at the type scale's body size (pixels, so it reads the same on every platform)."""
    font = QFont(base)
    font.setPixelSize(TYPE.body)
    return font


def apply_style(app: QApplication) -> None:
    """Give the application :class:`PrefillStyle` and the body font (the font only when it differs, so
    a theme switch does not send every widget a font change)."""
    app.setStyle(PrefillStyle())
    if app.font().pixelSize() != TYPE.body:
        app.setFont(body_font(app.font()))
