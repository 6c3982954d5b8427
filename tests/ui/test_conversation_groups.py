"""The chat list: grouped by date (Today, Yesterday, Previous 7 days, Older) with every item still a
chat, a context menu (Rename, Export, Delete), and words in place of an empty list."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from PySide6.QtCore import QPoint, Qt

from prefill.store import ConversationRecord, SearchHit
from prefill.ui.history import conversation_list as cl
from prefill.ui.history.conversation_list import GROUP_ROLE, ConversationList, date_group

TODAY = date(2026, 3, 15)


def at(day: int, hour: int = 12) -> float:
    return datetime(2026, 3, day, hour).timestamp()


def conv(cid: int, title: str, when: float) -> ConversationRecord:
    return ConversationRecord(id=cid, title=title, created_at=when, updated_at=when, system_prompt="", model="",
                        settings={}, uid=f"u{cid}")


@pytest.fixture
def chats(qtbot):
    c = ConversationList()
    c.today = lambda: TODAY
    qtbot.addWidget(c)
    c.resize(260, 500)
    c.show()
    return c


def test_date_groups_from_fixed_timestamps() -> None:
    assert date_group(at(15, 0), TODAY) == "Today"
    assert date_group(at(15, 23), TODAY) == "Today"
    assert date_group(at(14, 23), TODAY) == "Yesterday"
    assert date_group(at(13), TODAY) == "Previous 7 days"
    assert date_group(at(8), TODAY) == "Previous 7 days"
    assert date_group(at(7), TODAY) == "Older"
    assert date_group(datetime(2025, 12, 31).timestamp(), TODAY) == "Older"


def test_the_list_names_each_group_once_above_its_first_chat(chats: ConversationList) -> None:
    convs = [conv(1, "a", at(15, 9)), conv(2, "b", at(15, 8)), conv(3, "c", at(14)), conv(4, "d", at(10)),
             conv(5, "e", at(1)), conv(6, "f", at(2))]
    chats.set_conversations(convs, current=3)
    items = [chats.list.item(i) for i in range(chats.list.count())]
    assert [i.text() for i in items] == ["a", "b", "c", "d", "e", "f"]  # every item is a chat
    assert [i.data(GROUP_ROLE) for i in items] == ["Today", "", "Yesterday", "Previous 7 days", "Older", ""]
    assert [chats.group_of(r) for r in range(6)] == ["Today", "Today", "Yesterday", "Previous 7 days", "Older",
                                                      "Older"]
    assert chats.current_id() == 3
    # A group's first chat is taller: its name is painted above it.
    assert chats.list.visualItemRect(items[0]).height() > chats.list.visualItemRect(items[1]).height()


@pytest.mark.qt_log_ignore("grabbing the keyboard")  # the offscreen platform cannot; a desktop does
def test_the_context_menu_renames_exports_and_deletes(qtbot, chats: ConversationList, monkeypatch) -> None:
    chats.set_conversations([conv(1, "first", at(15)), conv(2, "second", at(15))], current=None)
    rect = chats.list.visualItemRect(chats.list.item(1))
    chats.list.customContextMenuRequested.emit(rect.center())
    menu = chats.menu
    assert menu is not None
    names = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert names == ["Rename…", "Export…", "Delete…"]
    assert chats.current_id() == 2  # the menu acts on the chat it was opened on
    actions = {a.text(): a for a in menu.actions()}
    actions["Rename…"].trigger()  # a sheet, with the chat's name ready to be replaced
    sheet = chats.rename_sheet
    assert sheet is not None and sheet.field.text() == "second"
    qtbot.keyClicks(sheet.field, "Renamed")
    with qtbot.waitSignal(chats.rename_requested) as renamed:
        qtbot.keyClick(sheet.field, Qt.Key.Key_Return)
    assert renamed.args == [2, "Renamed"]
    with qtbot.waitSignal(chats.export_requested) as exported:
        actions["Export…"].trigger()
    assert exported.args == [2]
    monkeypatch.setattr(cl, "ask", lambda *a, **k: cl.Button.Yes)
    with qtbot.waitSignal(chats.delete_requested) as deleted:
        actions["Delete…"].trigger()
    assert deleted.args == [2]
    menu.close()


def test_no_menu_away_from_a_chat(chats: ConversationList) -> None:
    chats.set_conversations([conv(1, "only", at(15))], current=None)
    chats.list.customContextMenuRequested.emit(QPoint(5, 400))
    assert chats.menu is None


def test_a_search_with_no_match_says_so(qtbot, chats: ConversationList) -> None:
    chats.search.setText("zebras")
    chats.set_search_results([], {}, None)
    assert chats.empty.isVisible() and not chats.list.isVisible()
    assert chats.empty.text().startswith("No chats match “zebras”")
    hit = SearchHit(conversation_id=1, message_id=None, snippet="about zebras")
    chats.set_search_results([hit], {1: "Zebras"}, None)
    assert chats.list.isVisible() and not chats.empty.isVisible()
    assert chats.group_of(0) == ""  # search results are in order of the match, not grouped


def test_no_chats_yet_says_how_to_start(chats: ConversationList) -> None:
    chats.set_conversations([], current=None)
    assert chats.empty.isVisible() and "New chat" in chats.empty.text()
    chats.set_conversations([conv(1, "a", at(15))], current=None)
    assert not chats.empty.isVisible()
