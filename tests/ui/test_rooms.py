"""Rooms that wire themselves: shortcuts run the actions rooms offer by name, settings reach the parts
that subscribed to their keys (and no others), the history room works against a store and a chat it
knows only by a Protocol, and the window applies a change of settings to the engine worker however
the change is made."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QThread, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QWidget

from prefill.store import HistoryStore, SettingsFile
from prefill.store.app_settings import Settings
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.history.conversation_list import ConversationList
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.history.room import HistoryRoom
from prefill.ui.models.loading import ModelLoading
from prefill.ui.settings_apply import MIB
from prefill.ui.shortcuts import SHORTCUTS
from prefill.ui.shortcuts import install as install_shortcuts
from prefill.ui.wiring.room_actions import RoomActions
from prefill.ui.wiring.settings_changes import SettingsChanges, changed_keys
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.ui.conftest import small_settings

# --- shortcuts through the actions rooms offer ---------------------------------------------------


def test_a_shortcut_runs_the_action_its_room_offered(qtbot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    actions = RoomActions()
    ran: list[str] = []
    for s in SHORTCUTS:
        actions.offer(s.name, lambda name=s.name: ran.append(name))
    made = install_shortcuts(window, actions)
    next(m for m in made if m.objectName() == "shortcut-undo-delete").activated.emit()
    assert ran == ["undo-delete"]


def test_a_shortcut_no_room_offers_is_refused_at_install(qtbot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    actions = RoomActions()
    for s in SHORTCUTS:
        if s.name != "stop":
            actions.offer(s.name, lambda: None)
    with pytest.raises(KeyError, match="stop"):
        install_shortcuts(window, actions)


def test_an_action_is_offered_once() -> None:
    actions = RoomActions()
    actions.offer("stop", lambda: None)
    with pytest.raises(ValueError, match="stop"):
        actions.offer("stop", lambda: None)


# --- settings by subscription ----------------------------------------------------------------------


def test_a_subscription_fires_only_for_its_key(qtbot) -> None:
    changes = SettingsChanges(Settings())
    budget: list[int] = []
    ui: list[str] = []
    changes.subscribe("model.kv_disk_budget_mb", lambda new, _old: budget.append(new.model.kv_disk_budget_mb))
    changes.subscribe("ui", lambda new, _old: ui.append(new.ui.theme))
    changes.set(changes.settings.replace("model.n_ctx", 8192))
    changes.set(changes.settings.replace("sampling.temperature", 0.5))
    assert budget == [] and ui == []
    changes.set(changes.settings.replace("model.kv_disk_budget_mb", 10))
    changes.set(changes.settings.replace("model.kv_disk_budget_mb", 10))  # no change: no call
    changes.set(changes.settings.replace("ui.theme", "dark"))
    assert budget == [10] and ui == ["dark"]
    with qtbot.waitSignal(changes.changed) as said:
        changes.set(changes.settings.replace("ui.max_tool_rounds", 2))
    assert said.args == ["ui.max_tool_rounds"] and ui == ["dark", "dark"]


def test_a_subscription_is_called_once_per_change_and_at_once_when_asked() -> None:
    changes = SettingsChanges(Settings())
    calls: list[tuple[int, int]] = []
    changes.subscribe(("model.draft_max", "model.speculative"),
                      lambda new, old: calls.append((old.model.draft_max, new.model.draft_max)), now=True)
    assert calls == [(16, 16)]
    changes.set(changes.settings.with_values({"model.draft_max": 4, "model.speculative": "ngram"}))
    assert calls == [(16, 16), (16, 4)]
    assert changed_keys(Settings(), changes.settings) == ["model.speculative", "model.draft_max"]


def test_a_subscription_to_no_such_setting_is_refused() -> None:
    with pytest.raises(KeyError, match="model.kv_budget"):
        SettingsChanges(Settings()).subscribe("model.kv_budget", lambda _n, _o: None)


def test_settings_change_only_on_the_gui_thread(qtbot) -> None:
    changes = SettingsChanges(Settings())
    errors: list[Exception] = []

    class Other(QThread):
        def run(self) -> None:
            try:
                changes.set(Settings().replace("ui.theme", "dark"))
            except RuntimeError as e:
                errors.append(e)

    other = Other()
    with qtbot.waitSignal(other.finished):
        other.start()
    assert len(errors) == 1 and changes.settings.ui.theme == "system"


# --- the history room -------------------------------------------------------------------------------


class FakeChat:
    """A chat shown, as the history room sees it."""

    def __init__(self) -> None:
        self.conversation_id: int | None = None
        self.busy = False
        self.opened: list[int] = []
        self.new = 0

    def open_conversation(self, cid: int) -> None:
        self.opened.append(cid)
        self.conversation_id = cid

    def new_conversation(self) -> None:
        self.new += 1


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreProxy]:
    with HistoryStore(tmp_path / "history.sqlite3") as history:
        for title in ("first", "second"):
            conv = history.create_conversation(title)
            history.add_message(conv.id, "user", f"hello from {title}")
    proxy = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    yield proxy
    proxy.stop()


def test_the_history_room_wires_its_list_to_the_chat_and_the_store(qtbot, store: StoreProxy) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    chats = ConversationList()
    chat = FakeChat()
    closed: list[bool] = []
    room = HistoryRoom(chats, HistoryMenu(parent, store, lambda: chat.conversation_id), store, chat,
                       lambda: closed.append(True), lambda _cid: None, lambda _t: None, parent)
    actions = RoomActions()
    room.offer_actions(actions)
    room.refresh()
    qtbot.waitUntil(lambda: sorted(room.titles.values()) == ["first", "second"], timeout=10_000)
    first = next(cid for cid, t in room.titles.items() if t == "first")

    chats.new_requested.emit()
    chats.selected.emit(first)
    assert chat.new == 1 and chat.opened == [first]

    chat.busy = True  # the chat open answers: not deleted
    chats.delete_requested.emit(first)
    assert closed == []
    chat.busy = False
    chats.delete_requested.emit(first)
    qtbot.waitUntil(lambda: list(room.titles.values()) == ["second"], timeout=10_000)
    assert closed == [True]
    assert actions.names() == {"search"}


# --- the window -------------------------------------------------------------------------------------


def test_a_change_of_settings_reaches_the_engine_worker_however_it_is_made(app) -> None:
    w = app.open(small_settings())
    worker = w.engine.worker
    budgets: list[int] = []
    worker.set_cache_budget = budgets.append  # type: ignore[method-assign]
    assert worker.max_tool_rounds == w.settings.ui.max_tool_rounds
    w.settings = replace(w.settings, ui=replace(w.settings.ui, max_tool_rounds=3),
                         model=replace(w.settings.model, kv_disk_budget_mb=7))
    assert worker.max_tool_rounds == 3 and budgets == [7 * MIB]
    w.settings = w.settings.replace("sampling.temperature", 0.7)  # not the worker's: nothing sent
    assert budgets == [7 * MIB]



# --- the model loading room ---------------------------------------------------------------------------


class FakeWorker(QObject):
    """The engine worker's load, as the loading room sees it: each load answers with a new tag."""

    loaded = Signal(object)
    load_failed = Signal(str)
    load_cancelled = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.tags = 0
        self.asked: list[str] = []
        self.cancels = 0

    def load(self, path: str, _settings: object) -> int:
        self.asked.append(path)
        self.tags += 1
        return self.tags

    def load_remote(self, endpoint: SavedEndpoint) -> int:
        self.asked.append(endpoint.name)
        self.tags += 1
        return self.tags

    def cancel_load(self) -> None:
        self.cancels += 1


def test_the_loading_room_says_how_a_load_goes_and_marks_it(qtbot, store: StoreProxy) -> None:
    worker, state, cancel = FakeWorker(), QLabel(), QAction("Cancel")
    qtbot.addWidget(state)
    loading = ModelLoading(worker, store, state, cancel, Settings)  # type: ignore[arg-type]
    seen: list[tuple] = []
    loading.started.connect(lambda name: seen.append(("started", name)))
    loading.failed.connect(lambda reason, sentence: seen.append(("failed", reason, sentence)))
    loading.cancelled.connect(lambda: seen.append(("cancelled",)))

    loading.load("/models/tiny-model.gguf")
    assert state.text() == "  loading tiny-model.gguf…" and cancel.isVisible()
    assert worker.asked == ["/models/tiny-model.gguf"]
    marks: list[str | None] = []
    store.unfinished_load(then=marks.append)  # store calls run in order: after the marker was written
    qtbot.waitUntil(lambda: marks == ["/models/tiny-model.gguf"], timeout=10_000)
    cancel.trigger()
    assert worker.cancels == 1
    worker.load_cancelled.emit(1)
    assert seen[-1] == ("cancelled",) and state.text() == "  no model loaded" and not cancel.isVisible()
    store.unfinished_load(then=marks.append)
    qtbot.waitUntil(lambda: marks[-1:] == [None] and len(marks) == 2, timeout=10_000)

    loading.load_remote(SavedEndpoint("lab", "http://127.0.0.1:9/v1"))
    worker.load_cancelled.emit(1)  # an older load's: superseded, nothing said
    assert seen[-1][0] == "started" and cancel.isVisible()
    worker.load_failed.emit("The server did not answer; check that it runs.")
    assert seen[-1] == ("failed", "The server did not answer; check that it runs.",
                        "The endpoint could not be used. The server did not answer; check that it runs. "
                        "The app is still usable.")
    assert state.text() == "  endpoint failed to connect" and loading.model is None
