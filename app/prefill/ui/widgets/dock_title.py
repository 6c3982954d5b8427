"""A dock's title bar in the design system: its title in the type scale, and its float and close
buttons drawn with the line icons (Qt's own bar draws the platform's stock buttons in its own font).

Dragging the bar still moves the dock and a double click still floats it: the title label leaves
the mouse to the dock widget, which handles it as it does its own bar.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QDockWidget, QHBoxLayout, QToolButton, QWidget

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import ICON, SPACE

FLOAT_TIP, DOCK_TIP = "Open in a window of its own", "Put back in the main window"


class DockTitle(QWidget):
    """`dock`'s title bar: its window title on the left, Float and Close on the right."""

    def __init__(self, dock: QDockWidget) -> None:
        super().__init__(dock)
        self.setObjectName("dock-title")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground)  # the sheet paints its background
        self._dock = dock
        self.title = plain_label(dock.windowTitle())
        self.title.setObjectName("dock-title-text")
        self.float_button = self._button("dock-float", "pop-out", FLOAT_TIP)
        self.close_button = self._button("dock-close", "close", f"Close {dock.windowTitle()}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.xxs, SPACE.xs, SPACE.xxs)
        lay.setSpacing(SPACE.xxs)
        lay.addWidget(self.title, 1)
        lay.addWidget(self.float_button)
        lay.addWidget(self.close_button)
        self.float_button.clicked.connect(self._on_float_clicked)
        self.close_button.clicked.connect(dock.close)
        dock.topLevelChanged.connect(self._on_dock_top_level_changed)
        dock.windowTitleChanged.connect(self.title.setText)
        dock.featuresChanged.connect(self._on_dock_features_changed)
        self._on_dock_features_changed(dock.features())

    def _button(self, name: str, icon_name: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setObjectName(name)
        button.setIcon(icon(icon_name))
        button.setIconSize(QSize(ICON.inline, ICON.inline))
        button.setAutoRaise(True)
        button.setToolTip(tip)
        button.setAccessibleName(tip)
        return button

    def _on_dock_features_changed(self, features: QDockWidget.DockWidgetFeature) -> None:
        """A button for what the dock allows: Float where it may float, Close where it may close."""
        feature = QDockWidget.DockWidgetFeature
        self.float_button.setVisible(bool(features & feature.DockWidgetFloatable))
        self.close_button.setVisible(bool(features & feature.DockWidgetClosable))

    def _on_float_clicked(self) -> None:
        self._dock.setFloating(not self._dock.isFloating())

    def _on_dock_top_level_changed(self, floating: bool) -> None:
        tip = DOCK_TIP if floating else FLOAT_TIP
        self.float_button.setToolTip(tip)
        self.float_button.setAccessibleName(tip)


def titled_dock(title: str, parent: QWidget, name: str) -> QDockWidget:
    """A dock called `title` (its object name `name`) with a :class:`DockTitle` bar."""
    dock = QDockWidget(title, parent)
    dock.setObjectName(name)
    dock.setTitleBarWidget(DockTitle(dock))
    return dock
