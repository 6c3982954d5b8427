"""Watched collections in the window: the folders and files each collection was made from, watched while the
app runs, and a collection named (`changed`) when something under it changed, so it is indexed again.

The system's file notifications (`QFileSystemWatcher`: inotify, FSEvents, ReadDirectoryChangesW) come on
the GUI thread and cost nothing until something changes; they are gathered for `DEBOUNCE_MS` of quiet (an
editor's save, a copy of many files, is one look), and every `POLL_MS` each collection is looked at anyway
(a network drive sends no notifications; past the paths the system lets one watch, the rest go unwatched).
Looking costs a walk of the collection's folders on the documents thread, never here: this only names the
collection. What to watch comes from the documents worker (`watched`), and is asked again after each job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

DEBOUNCE_MS = 700  # quiet after the last notification before the collection is looked at
POLL_MS = 120_000  # every collection looked at this often, notification or not


class FolderWatch(QObject):
    """Signals:
        changed(str): a watched collection may have changed on disk (looked at again by the caller).
    """

    changed = Signal(str)

    def __init__(self, parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS, poll_ms: int = POLL_MS):
        super().__init__(parent)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.directoryChanged.connect(self._on_watcher_changed)
        self.watcher.fileChanged.connect(self._on_watcher_changed)
        self._by_path: dict[str, set[str]] = {}  # a path watched: the collections made from it
        self._pending: set[str] = set()
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(debounce_ms)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        self._poll = QTimer(self)
        self._poll.setInterval(poll_ms)
        self._poll.timeout.connect(self._on_poll_timeout)

    @property
    def collections(self) -> list[str]:
        """The collections watched, by name."""
        return sorted({c for names in self._by_path.values() for c in names})

    def follow(self, paths: Mapping[str, Sequence[str]]) -> None:
        """Watch these paths for these collections (each collection's folders, then its files), in place of
        those watched before."""
        wanted: dict[str, set[str]] = {}
        for name, found in paths.items():
            for p in found:
                wanted.setdefault(p, set()).add(name)
        held = set(self.watcher.directories()) | set(self.watcher.files())
        gone = [p for p in held if p not in wanted]
        if gone:
            self.watcher.removePaths(gone)
        # (a path the watcher dropped, a file replaced by a save or deleted, is added again where it is back)
        new = [p for p in wanted if p not in held and os.path.exists(p)]  # (Qt warns of a path that is not there)
        if new:
            self.watcher.addPaths(new)  # those it cannot watch (past the system's limit) are left to the poll
        self._by_path = wanted
        if wanted and not self._poll.isActive():
            self._poll.start()
        elif not wanted:
            self._poll.stop()

    def stop(self) -> None:
        """Watch nothing more (on quit)."""
        self._debounce.stop()
        self._poll.stop()
        held = self.watcher.directories() + self.watcher.files()
        if held:
            self.watcher.removePaths(held)
        self._by_path = {}
        self._pending.clear()

    def _on_watcher_changed(self, path: str) -> None:
        names = self._by_path.get(path)
        if not names:
            return
        self._pending |= names
        self._debounce.start()  # (again): once things are quiet

    def _on_debounce_timeout(self) -> None:
        pending, self._pending = sorted(self._pending), set()
        for name in pending:
            self.changed.emit(name)

    def _on_poll_timeout(self) -> None:
        for name in self.collections:
            self.changed.emit(name)
