"""The History menu: export the open chat or every chat (Markdown or JSON), import a file.

The file dialogs run on the GUI thread; reading, checking and writing run on the store
thread (``StoreProxy.export_chats`` and ``import_chats``), so a large file never freezes the window.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QToolButton, QWidget

from prefill.store import ImportResult, StoreError
from prefill.store.history_export import ExportFormat
from prefill.store.history_import import ImportStream
from prefill.ui.workers.store_worker import StoreProxy

_NAMES: dict[ExportFormat, str] = {"md": "Markdown", "json": "JSON"}
_FILTERS: dict[ExportFormat, str] = {"md": "Markdown (*.md)", "json": "Prefill JSON (*.json)"}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class HistoryMenu(QObject):
    """A toolbar button with the export and import actions.

    Signals:
        imported(): chats were added to the history (the chat list should refresh).
        notice(str): a sentence for the person: what went wrong.
        news(str): passing news: what was exported or imported.
    """

    imported = Signal()
    notice = Signal(str)
    news = Signal(str)

    def __init__(self, parent: QWidget, store: StoreProxy, current: Callable[[], int | None]):
        super().__init__(parent)
        self._parent, self._store, self._current = parent, store, current
        self.menu = QMenu("History", parent)
        self.export_one = {
            fmt: self.menu.addAction(f"Export this chat as {name}…") for fmt, name in _NAMES.items()
        }
        self.menu.addSeparator()
        self.export_all = {
            fmt: self.menu.addAction(f"Export all chats as {name}…") for fmt, name in _NAMES.items()
        }
        self.menu.addSeparator()
        self.import_action = self.menu.addAction("Import chats (Prefill or llama.cpp web UI JSON)…")
        for fmt in _NAMES:
            self.export_one[fmt].triggered.connect(lambda _=False, f=fmt: self._ask_export(f, True))
            self.export_all[fmt].triggered.connect(
                lambda _=False, f=fmt: self._ask_export(f, False)
            )
        self.import_action.triggered.connect(self._ask_import)
        self.menu.aboutToShow.connect(self._on_menu_about_to_show)
        self.button = QToolButton(parent)
        self.button.setText("History")
        self.button.setAccessibleName("History: export and import chats")
        self.button.setMenu(self.menu)
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)

    def _on_menu_about_to_show(self) -> None:
        for action in self.export_one.values():
            action.setEnabled(self._current() is not None)

    def _ask_export(self, fmt: ExportFormat, only_current: bool) -> None:
        current = self._current()
        if only_current and current is None:
            return
        name = f"chat-{current}.{fmt}" if only_current else f"prefill-chats.{fmt}"
        path, _ = QFileDialog.getSaveFileName(
            self._parent, "Export chats", str(Path.home() / name), _FILTERS[fmt]
        )
        if path:
            self.export_to(
                Path(path), fmt, [current] if only_current and current is not None else None
            )

    def _ask_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self._parent, "Import chats", str(Path.home()), "JSON exports (*.json);;All files (*)"
        )
        if path:
            self.import_from(Path(path))

    def export_to(self, path: Path, fmt: ExportFormat, ids: list[int] | None) -> None:
        """Write these chats (None: all) to ``path`` on the store thread; say so when done."""
        self._store.export_chats(
            path, fmt, ids,
            then=lambda n: self.news.emit(f"Exported {_count(n, 'chat')} to {path}."),
            error=lambda e: self.notice.emit(self._failure("export to", path, e)),
        )

    def import_from(self, path: Path) -> None:
        """Check and import a file on the store thread; say what came in, or why nothing did."""

        def done(outcome: tuple[ImportStream, ImportResult]) -> None:
            checked, result = outcome
            text = f"Imported {_count(result.imported, 'chat')} from {path.name}."
            if result.skipped:
                text += f" {_count(result.skipped, 'chat')} already here, left as they were."
            if checked.left_out:
                left_out = _count(checked.left_out, "message")
                text += f" {left_out} of other branches or tool calls left out."
            self.news.emit(text)
            if result.imported:
                self.imported.emit()

        self._store.import_chats(
            path,
            then=done,
            error=lambda e: self.notice.emit(self._failure("import", path, e)),
        )

    @staticmethod
    def _failure(verb: str, path: Path, error: Exception) -> str:
        if isinstance(error, StoreError):
            text = str(error)
            return text[:1].upper() + text[1:] + "."
        if isinstance(error, OSError):
            return f"Could not {verb} {path}: {error.strerror or error}."
        return f"Could not {verb} {path}: {error}."
