"""The main window's two tabs: Chat and Models.

The Models page is built the first time its tab is shown (so start-up imports no hub
client): the tab holds an empty frame until then, and `build` fills it. Chats and
downloads go on whichever tab is in front.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from prefill.store.app_settings import Settings
from prefill.ui.markdown.rich_text import CodePalette

if TYPE_CHECKING:
    from prefill.ui.models.download_worker import DownloadWorker
    from prefill.ui.models.page import ModelsPage

CHAT, MODELS = 0, 1


class MainTabs(QTabWidget):
    """Chat and Models as tabs of the window.

    Args:
        chat: the chat's widget (the conversations, the transcript, the sidebar).
        build_models: makes the Models page, called once, when its tab is first shown.
    """

    def __init__(self, chat: QWidget, build_models: Callable[[], QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("main-tabs")
        self.setDocumentMode(True)
        self.tabBar().setAccessibleName("Chat or Models")
        self._build_models = build_models
        self.models_page: QWidget | None = None
        self._models_frame = QWidget()
        self._models_frame.setObjectName("models-tab")
        frame_layout = QVBoxLayout(self._models_frame)
        frame_layout.setContentsMargins(0, 0, 0, 0)
        self.addTab(chat, "Chat")
        self.addTab(self._models_frame, "Models")
        self.setTabToolTip(CHAT, "The conversation (Ctrl+Shift+M switches)")
        self.setTabToolTip(MODELS, "Search, download and load models (Ctrl+Shift+M)")
        self.currentChanged.connect(self._on_current_changed)

    def show_models(self) -> QWidget:
        """Bring the Models tab to the front (building its page the first time); returns the page."""
        self.setCurrentIndex(MODELS)
        return self._ensure_models()

    def show_chat(self) -> None:
        self.setCurrentIndex(CHAT)

    def toggle_models(self) -> None:
        """Models when the chat is in front, the chat when Models is (the shortcut's two ways)."""
        if self.currentIndex() == MODELS:
            self.show_chat()
        else:
            self.show_models()

    def _ensure_models(self) -> QWidget:
        if self.models_page is None:
            self.models_page = self._build_models()
            # Straight in the tab, no scroll area: the page's sections each take its whole height and scroll
            # their own lists, so it fits a small window (900×600, or with the Server panel open) with its
            # buttons in view; a scroll area would hold it at its preferred height (its wrapped labels) and
            # scroll Load and Import out of sight.
            layout = self._models_frame.layout()
            assert layout is not None
            layout.addWidget(self.models_page)
            self.models_page.show()  # a layout shows a child added to a visible frame only later
        return self.models_page

    def _on_current_changed(self, index: int) -> None:
        if index == MODELS:
            self._ensure_models()


def build_models_page(settings: Callable[[], Settings], palette: CodePalette,
                      parent: QObject) -> tuple[ModelsPage, DownloadWorker]:
    """The Models page and its download queue (owned by `parent`, so downloads outlive a tab
    switch), from the settings now: token, models folder, and the context fit estimates plan for."""
    from prefill.hub.client import HubClient
    from prefill.hub.library import ModelLibrary
    from prefill.hub.paths import default_models_dir
    from prefill.ui.models.download_worker import DownloadWorker
    from prefill.ui.models.page import ModelsPage

    first = settings()
    models_dir = Path(first.ui.models_dir) if first.ui.models_dir else default_models_dir()
    client = HubClient(token=first.hub.hf_token or None)
    downloads = DownloadWorker(client, models_dir, parent=parent)
    page = ModelsPage(client, ModelLibrary(models_dir), downloads, n_ctx=lambda: settings().model.n_ctx,
                      kv_type=lambda: settings().model.kv_type, palette=palette)
    return page, downloads
