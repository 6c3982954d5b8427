"""History and settings on their own thread: the GUI thread never waits on the disk.

`StoreProxy` has one typed method per thing the window asks of the store, such as
`proxy.add_message(cid, "user", text, then=callback)`: it runs on the store thread and
hands the result to `callback` back on the GUI thread. Calls run in the order they were
made, so a write followed by a read sees the write. Arguments are taken on the GUI
thread when the method is called, so a caller never lends the store thread its state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.engine.message import ImagePart
from prefill.store import ConversationRecord, HistoryStore, ImportResult, MessageRecord, SearchHit, SettingsFile
from prefill.store.app_settings import Settings
from prefill.store.endpoints import ENDPOINTS_FILE, EndpointsFile, SavedEndpoint
from prefill.store.history_export import ExportFormat, write_export
from prefill.store.history_import import ImportStream, open_import_file
from prefill.store.load_marker import LoadMarker
from prefill.store.records import Role
from prefill.ui.workers.store_messages import store_error_text

R = TypeVar("R")
Then = Callable[[R], None] | None
OnError = Callable[[Exception], None] | None


class Stores:
    """What the store thread owns: the history database, the settings file, and beside it the marker
    of a model load in progress and the saved remote endpoints.

    Args:
        history: The chat history.
        settings_file: Where the settings are saved.
        save_settings: False when the file could not be read at start-up: then it is
            left as it is rather than overwritten with the defaults.
    """

    def __init__(self, history: HistoryStore, settings_file: SettingsFile, save_settings: bool = True):
        self.history = history
        self.settings_file = settings_file
        self.saves_settings = save_settings
        self.load_marker = LoadMarker(settings_file.path.with_name("loading.json"))
        self.endpoints = EndpointsFile(settings_file.path.with_name(ENDPOINTS_FILE))

    def save_settings(self, settings: Settings) -> None:
        if self.saves_settings:
            self.settings_file.save(settings)


@dataclass(frozen=True)
class StoredMessages:
    """A conversation and some of its messages as stored, each message's images read with it (by id)."""

    conversation: ConversationRecord
    messages: list[MessageRecord]
    images: dict[int, tuple[ImagePart, ...]]


def _read_messages(s: Stores, cid: int, last: int | None, before: int | None) -> StoredMessages:
    messages = s.history.messages(cid, last=last, before=before)
    images = {m.id: s.history.message_images(m) for m in messages if m.images and m.role != "system"}
    return StoredMessages(s.history.conversation(cid), messages, images)


def _export(s: Stores, ids: list[int] | None, fmt: ExportFormat, path: Path) -> int:
    conversations = s.history.export_conversations(ids)
    write_export(path, conversations, fmt)
    return len(conversations)


def _import(s: Stores, path: Path) -> tuple[ImportStream, ImportResult]:
    checked = open_import_file(path)  # read chat by chat as the store writes
    return checked, s.history.import_conversations(checked)


def _put_endpoint(s: Stores, endpoint: SavedEndpoint, replacing: str) -> list[SavedEndpoint]:
    if replacing and replacing != endpoint.name:
        s.endpoints.remove(replacing)  # renamed
    s.endpoints.put(endpoint)
    return s.endpoints.load()


def _remove_endpoint(s: Stores, name: str) -> list[SavedEndpoint]:
    s.endpoints.remove(name)
    return s.endpoints.load()


class _StoreWorker(QObject):
    done = Signal(int, object, object)  # call id, result, error (an Exception or None)
    request = Signal(int, object)  # call id, a function of Stores

    def __init__(self, stores: Stores):
        super().__init__()
        self.stores = stores
        self.request.connect(self._on_request)

    @Slot(int, object)
    def _on_request(self, call_id: int, fn: Callable[[Stores], Any]) -> None:
        try:
            result = fn(self.stores)
        except Exception as e:  # noqa: BLE001 - handed to the caller, never swallowed
            self.done.emit(call_id, None, e)
            return
        self.done.emit(call_id, result, None)

    @Slot()
    def close(self) -> None:
        """The last call: after every queued write, close the database and end the thread."""
        self.stores.history.close()
        QThread.currentThread().quit()


class StoreProxy(QObject):
    """GUI-side handle of the store thread.

    Every method takes `then` (called with the result on the GUI thread) and `error`
    (called with the exception instead; without it the `error` signal says it).

    Signals:
        error(str): a store call failed and its caller gave no error handler (a sentence).
    """

    error = Signal(str)
    _close = Signal()

    def __init__(self, stores: Stores):
        super().__init__()
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callable[[Any], None] | None, OnError]] = {}
        self._thread = QThread()  # not `thread`: QObject.thread() is Qt's
        self._thread.setObjectName("prefill-store")
        self._worker = _StoreWorker(stores)
        self._worker.moveToThread(self._thread)
        self._worker.done.connect(self._on_worker_done)
        self._close.connect(self._worker.close)
        self._thread.start()

    @property
    def history_path(self) -> Path:
        """Where the history file is (a name only: nothing is read)."""
        return self._worker.stores.history.path

    def _call(self, fn: Callable[[Stores], R], then: Then[R] = None, error: OnError = None) -> int:
        """Run `fn(stores)` on the store thread; every typed method below is built on it (a new request
        is a new method here, so the store's callers stay typed)."""
        call_id = next(self._ids)
        self._callbacks[call_id] = (then, error)
        self._worker.request.emit(call_id, fn)
        return call_id

    # --- conversations ------------------------------------------------------------------
    def list_conversations(self, then: Then[list[ConversationRecord]] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.list_conversations(), then, error)

    def search(self, query: str, then: Then[list[SearchHit]] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.search(query), then, error)

    def open_conversation(
        self, cid: int, then: Then[tuple[ConversationRecord, list[MessageRecord]]] = None, error: OnError = None
    ) -> int:
        """The conversation and its messages, read together."""
        return self._call(lambda s: (s.history.conversation(cid), s.history.messages(cid)), then, error)

    def create_conversation(
        self, title: str, system_prompt: str = "", then: Then[ConversationRecord] = None, error: OnError = None
    ) -> int:
        return self._call(lambda s: s.history.create_conversation(title, system_prompt), then, error)

    def conversation(self, cid: int, then: Then[ConversationRecord] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.conversation(cid), then, error)

    def read_messages(
        self, cid: int, last: int | None = None, before: int | None = None,
        then: Then[StoredMessages] = None, error: OnError = None,
    ) -> int:
        """The conversation and its messages (all, the last N, or those before a position), with the
        images of each (read on the store thread: the next turn's prompt shows them again)."""
        return self._call(lambda s: _read_messages(s, cid, last, before), then, error)

    def set_conversation_settings(
        self, cid: int, settings: Mapping[str, Any], then: Then[None] = None, error: OnError = None
    ) -> int:
        return self._call(lambda s: s.history.set_conversation_settings(cid, settings), then, error)

    def branch_conversation(self, mid: int, then: Then[ConversationRecord] = None, error: OnError = None) -> int:
        """A new conversation with the messages up to `mid` (its versions kept)."""
        return self._call(lambda s: s.history.branch_conversation(mid), then, error)

    def rename_conversation(self, cid: int, title: str, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.rename_conversation(cid, title), then, error)

    def delete_conversation(self, cid: int, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.delete_conversation(cid), then, error)

    def set_system_prompt(self, cid: int, text: str, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.set_system_prompt(cid, text), then, error)

    def record_model(
        self, cid: int, model: str, settings: Mapping[str, Any], then: Then[None] = None, error: OnError = None
    ) -> int:
        """The model and settings this conversation's answers are made with."""

        def record(s: Stores) -> None:
            s.history.set_conversation_model(cid, model)
            s.history.set_conversation_settings(cid, settings)

        return self._call(record, then, error)

    # --- messages ---------------------------------------------------------------------
    def add_message(
        self, cid: int, role: Role, text: str, images: tuple[ImagePart, ...] = (),
        figures: Mapping[str, Any] | None = None, then: Then[MessageRecord] = None, error: OnError = None,
    ) -> int:
        """Append a message; its `images` (checked at the door) are written as files by digest, once
        each, on the store thread before the row."""
        return self._call(lambda s: s.history.add_message(cid, role, text, images=images, figures=figures),
                         then, error)

    def edit_message(self, mid: int, text: str, then: Then[MessageRecord] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.edit_message(mid, text), then, error)

    def delete_message(self, mid: int, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.delete_message(mid), then, error)

    def begin_answer(self, cid: int, then: Then[int] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.history.begin_answer(cid), then, error)

    def update_answer(
        self, mid: int, text: str, reasoning: str = "", then: Then[None] = None, error: OnError = None
    ) -> int:
        return self._call(lambda s: s.history.update_answer(mid, text, reasoning), then, error)

    def finish_answer(
        self, mid: int, text: str, reason: str, figures: Mapping[str, Any], reasoning: str = "",
        then: Then[MessageRecord] = None, error: OnError = None,
    ) -> int:
        return self._call(lambda s: s.history.finish_answer(mid, text, reason, figures, reasoning), then, error)

    def regenerate_answer(self, mid: int, then: Then[MessageRecord] = None, error: OnError = None) -> int:
        """Keep answer `mid` as a version, with the messages after it, and start its next."""
        return self._call(lambda s: s.history.regenerate_answer(mid), then, error)

    def show_version(
        self, mid: int, index: int, drop_shown: bool = False, then: Then[MessageRecord] = None,
        error: OnError = None,
    ) -> int:
        """Show version `index` of message `mid`, with its turns after it (`drop_shown`: forget the version
        shown now)."""
        return self._call(lambda s: s.history.show_version(mid, index, drop_shown=drop_shown), then, error)

    # --- history files --------------------------------------------------------------------
    def export_chats(
        self, path: Path, fmt: ExportFormat, ids: list[int] | None = None, then: Then[int] = None,
        error: OnError = None,
    ) -> int:
        """Write these chats (None: all) to `path`; `then` gets how many."""
        return self._call(lambda s: _export(s, ids, fmt, path), then, error)

    def import_chats(
        self, path: Path, then: Then[tuple[ImportStream, ImportResult]] = None, error: OnError = None
    ) -> int:
        """Check and import a file, chat by chat; `then` gets what was checked and what came in."""
        return self._call(lambda s: _import(s, path), then, error)

    # --- remote endpoints and the load marker ---------------------------------------------
    def load_endpoints(self, then: Then[list[SavedEndpoint]] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.endpoints.load(), then, error)

    def put_endpoint(
        self, endpoint: SavedEndpoint, replacing: str = "", then: Then[list[SavedEndpoint]] = None,
        error: OnError = None,
    ) -> int:
        """Save `endpoint` (in place of the one named `replacing`, when renamed); `then` gets them all."""
        return self._call(lambda s: _put_endpoint(s, endpoint, replacing), then, error)

    def remove_endpoint(self, name: str, then: Then[list[SavedEndpoint]] = None, error: OnError = None) -> int:
        """Forget the endpoint `name`; `then` gets those left."""
        return self._call(lambda s: _remove_endpoint(s, name), then, error)

    def begin_load(self, path: str, then: Then[None] = None, error: OnError = None) -> int:
        """Mark a load of `path` as in progress (a crash during it is known at the next start)."""
        return self._call(lambda s: s.load_marker.begin(path), then, error)

    def end_load(self, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.load_marker.end(), then, error)

    def unfinished_load(self, then: Then[str | None] = None, error: OnError = None) -> int:
        """The model whose load a crash interrupted last time (None: none)."""
        return self._call(lambda s: s.load_marker.unfinished(), then, error)

    # --- settings and order -------------------------------------------------------------
    def save_settings(self, settings: Settings, then: Then[None] = None, error: OnError = None) -> int:
        return self._call(lambda s: s.save_settings(settings), then, error)

    def after_pending(self, then: Callable[[], None]) -> int:
        """Call `then` on the GUI thread once every call made before this one has run."""
        def done(_result: None) -> None:
            then()

        return self._call(_nothing, done)

    # --- plumbing -------------------------------------------------------------------------
    @Slot(int, object, object)
    def _on_worker_done(self, call_id: int, result: Any, err: Exception | None) -> None:
        then, on_error = self._callbacks.pop(call_id, (None, None))
        if err is not None:
            if on_error is not None:
                on_error(err)
            else:
                self.error.emit(store_error_text(err))
            return
        if then is not None:
            then(result)

    def pending(self) -> int:
        return len(self._callbacks)

    def stop(self) -> None:
        """Finish queued calls, close the database in its own thread, stop the thread."""
        self._close.emit()
        self._thread.wait()


def _nothing(_stores: Stores) -> None:
    """A call that only waits its turn."""
