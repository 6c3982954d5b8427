"""The server room: the Serve button shows a dock with the server's panel, built on first use (the
HTTP stack loads then), and says where the model is served once it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMainWindow

from prefill.ui.widgets.dock_title import titled_dock
from prefill.ui.workers.engine_worker import EngineWorker

if TYPE_CHECKING:
    from prefill.server.lifecycle import ServeOptions


class ServerRoom(QObject):
    """Wires `serve` (a checkable action) to the Server dock of `window`.

    Args:
        window: Where the dock goes.
        worker: The engine worker, which runs the server.
        serve: The tool bar's Serve action.
        notice: Says a sentence under the chat.
        options: What to serve, asked when the server starts (None: nothing to serve).
    """

    def __init__(self, window: QMainWindow, worker: EngineWorker, serve: QAction, notice: Callable[[str], None],
                 options: Callable[[], ServeOptions | None]):
        super().__init__(window)
        self._window, self._worker, self._serve = window, worker, serve
        self._options, self._notice = options, notice
        self.dock: QDockWidget | None = None
        serve.toggled.connect(self._on_serve_toggled)
        worker.serving.connect(self._on_worker_serving)

    def _on_serve_toggled(self, shown: bool) -> None:
        if self.dock is None:
            from prefill.ui.server.panel import ServerController, ServerPanel

            self.dock = titled_dock("Server", self._window, "server-dock")
            self.dock.setWidget(ServerPanel(ServerController(self._worker, self._window), self._options))
            self._window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
            self.dock.visibilityChanged.connect(self._serve.setChecked)
        self.dock.setVisible(shown)
        if shown:  # a third of the window at most: the chat keeps the room it needs
            height = max(self.dock.minimumSizeHint().height(), self._window.height() // 3)
            self._window.resizeDocks([self.dock], [height], Qt.Orientation.Vertical)

    def _on_worker_serving(self, url: str) -> None:
        self._notice(f"Serving this model at {url}/v1. This chat is now one of the server's requests: "
                     "its answers share the batch with the server's clients.")
