"""The History menu on a real store thread: export, import, a refused file, and the window's wiring."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QWidget

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.ui.conftest import small_settings

WEBUI_EXPORT = Path(__file__).parent.parent / "store" / "data" / "llamacpp_webui_export.json"


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[StoreProxy]:
    with HistoryStore(tmp_path / "history.sqlite3") as history:
        conv = history.create_conversation()
        history.add_message(conv.id, "user", "Hello there")
    store = StoreProxy(
        Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json"))
    )
    yield store
    store.stop()


def _menu(qtbot, proxy: StoreProxy, current: int | None) -> HistoryMenu:
    parent = QWidget()
    qtbot.addWidget(parent)
    return HistoryMenu(parent, proxy, lambda: current)


def _choose(monkeypatch: pytest.MonkeyPatch, method: str, path: Path) -> None:
    monkeypatch.setattr(QFileDialog, method, staticmethod(lambda *a, **k: (str(path), "")))


def test_export_this_chat_then_import_it_elsewhere(
    qtbot, proxy: StoreProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    menu = _menu(qtbot, proxy, current=1)
    out = tmp_path / "exports" / "chat.json"
    _choose(monkeypatch, "getSaveFileName", out)
    with qtbot.waitSignal(menu.news, timeout=10_000) as said:  # passing news: the window's toast
        menu.export_one["json"].trigger()
    assert said.args == [f"Exported 1 chat to {out}."]
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [m["content"] for m in doc["conversations"][0]["messages"]] == ["Hello there"]

    _choose(monkeypatch, "getOpenFileName", WEBUI_EXPORT)
    with qtbot.waitSignal(menu.imported, timeout=10_000), qtbot.waitSignal(menu.news) as said:
        menu.import_action.trigger()
    left_out = "1 message of other branches or tool calls left out."
    assert said.args == [f"Imported 2 chats from llamacpp_webui_export.json. {left_out}"]
    _choose(monkeypatch, "getOpenFileName", out)
    with (
        qtbot.waitSignal(menu.news, timeout=10_000) as said,
        qtbot.assertNotEmitted(menu.imported),
    ):
        menu.import_action.trigger()
    assert said.args == [
        f"Imported 0 chats from {out.name}. 1 chat already here, left as they were."
    ]


def test_a_bad_file_is_refused_in_a_sentence(qtbot, proxy: StoreProxy, tmp_path: Path) -> None:
    menu = _menu(qtbot, proxy, current=None)
    bad = tmp_path / "notes.json"
    bad.write_text("just some notes", encoding="utf-8")
    with (
        qtbot.waitSignal(menu.notice, timeout=10_000) as said,
        qtbot.assertNotEmitted(menu.imported),
    ):
        menu.import_from(bad)
    assert said.args[0].startswith(f"Cannot import {bad}: it is not JSON")
    assert said.args[0].endswith("nothing was imported.")
    menu._on_menu_about_to_show()
    assert not menu.export_one["md"].isEnabled() and menu.export_all["md"].isEnabled()


def test_the_window_lists_imported_chats(
    app, qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = app.open(small_settings())
    _choose(monkeypatch, "getOpenFileName", WEBUI_EXPORT)
    with qtbot.waitSignal(w.history_menu.imported, timeout=10_000):
        w.history_menu.import_action.trigger()
    qtbot.waitUntil(lambda: "How far is the Moon?" in w.history.titles.values(), timeout=10_000)
    assert w.toast.text().startswith("Imported 2 chats") and not w.notice.isVisible()  # news, not a banner
