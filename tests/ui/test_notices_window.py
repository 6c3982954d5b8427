"""The window's notices never tell of a state that has passed: a load, a chat switch and an answer clear
what they said before them; what start-up found stays until replaced. Passing news is a toast that
fades; what needs action is a banner with its action; neither moves the page's layout."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget

from prefill.store import HistoryStore
from tests.ui.conftest import ANSWER_TIMEOUT, load, small_settings

WAIT = 10_000


def _two_chats(app) -> tuple[int, int]:
    with HistoryStore(app.data / "history.sqlite3") as history:
        ids = []
        for title in ("Apples", "Pears"):
            cid = history.create_conversation(title).id
            history.add_message(cid, "user", f"About {title.lower()}?")
            history.add_message(cid, "assistant", "They are fruit.")
            ids.append(cid)
    return ids[0], ids[1]


def _layout(w) -> dict[QWidget, QRect]:
    """Every widget of the window but the notices, with its place in the window."""
    notices = {w.notices.banners, w.toast, *w.notices.banners.findChildren(QWidget), *w.toast.findChildren(QWidget)}
    return {c: QRect(c.mapTo(w, c.rect().topLeft()), c.size()) for c in w.findChildren(QWidget)
            if c.isVisible() and c not in notices}


def _settled(w) -> bool:
    """The window's layout no longer changes when the events waiting are handled."""
    from PySide6.QtWidgets import QApplication

    then = _layout(w)
    QApplication.processEvents()
    return _layout(w) == then


def test_load_a_model_first_goes_once_a_model_loads(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    w.input.editor.setPlainText("Hi")
    w.input.button.click()
    assert w.notice.isVisible() and w.notice.text().startswith("Load a model first")
    assert w.notice.action_button.isVisible() and w.notice.action_button.text() == "Choose a model"  # the way out
    w.toast.lifetime_ms = 60_000  # not gone by itself before the load
    w.show_toast("Copied.")
    load(qtbot, w, smollm2)
    assert not w.notice.isVisible(), w.notice.text()
    assert not w.toast.isVisible()  # a load clears the news from before it too
    assert w.input.editor.toPlainText() == "Hi"  # the question waits to be sent


def test_exported_goes_when_another_chat_opens(app, qtbot, tmp_path: Path) -> None:
    apples, pears = _two_chats(app)
    w = app.open(small_settings())
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=WAIT):
        w.controller.open_conversation(apples)
    w.history_menu.export_to(tmp_path / "apples.md", "md", [apples])
    qtbot.waitUntil(lambda: w.toast.text().startswith("Exported 1 chat"), timeout=WAIT)  # passing news: a toast
    assert w.toast.isVisible() and not w.notice.isVisible()
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=WAIT):
        w.controller.open_conversation(pears)
    assert not w.toast.isVisible() and not w.notice.isVisible(), w.toast.text()


def test_a_notice_goes_when_an_answer_starts_and_start_up_notices_stay_through_a_switch(
        app, qtbot, smollm2: Path, tmp_path: Path) -> None:
    apples, pears = _two_chats(app)
    w = app.open(small_settings(max_tokens=4))
    w.show_notice("The settings file was repaired.", lasting=True)  # what start-up found
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=WAIT):
        w.controller.open_conversation(apples)
    assert w.notice.isVisible() and w.notice.text() == "The settings file was repaired."
    load(qtbot, w, smollm2)
    w.history_menu.export_to(tmp_path / "apples.md", "md", [apples])
    qtbot.waitUntil(lambda: w.toast.text().startswith("Exported 1 chat"), timeout=WAIT)
    w.controller.send("And pears?")
    assert w.controller.busy and not w.notice.isVisible(), w.notice.text()
    assert not w.toast.isVisible()  # "Exported…" is old news now
    qtbot.waitUntil(lambda: not w.controller.busy, timeout=ANSWER_TIMEOUT)


def test_the_fit_note_after_a_load_is_said_on_the_models_page_not_under_the_chat(
        app, qtbot, smollm2: Path, tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(tmp_path / "models"))))
    w.open_models()
    w.tabs.show_chat()
    load(qtbot, w, smollm2)
    qtbot.waitUntil(lambda: "compute buffers" in w.models_page.message.text(), timeout=WAIT)
    assert "compute buffers" not in w.notice.text() and not w.notice.isVisible(), w.notice.text()


def test_a_bad_models_folder_at_start_up_falls_back_to_the_default_with_a_notice(
        app, qtbot, tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    from prefill.hub.paths import default_models_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # where the default folder is
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir="/proc/prefill-models")))  # saved by an older Prefill
    assert w.settings.ui.models_dir == ""  # the default, for this session and the next
    said = w.notice.text()
    assert w.notice.isVisible() and "/proc/prefill-models cannot be used" in said
    assert str(default_models_dir()) in said and "Settings › Downloads" in said
    w.open_models()  # not a blank page: the library of the default folder, listed
    page = w.models_page
    qtbot.waitUntil(lambda: not page.jobs.busy, timeout=WAIT)
    assert page.library.models_dir == default_models_dir() and default_models_dir().is_dir()
    page.show_section("library")
    assert page.library_panel.list.isVisible() and "could not" not in page.message.text()


def test_a_toast_does_not_change_any_widgets_geometry_in_the_layout(app, qtbot) -> None:
    w = app.open(small_settings())
    w.resize(900, 600)
    qtbot.waitUntil(lambda: w.width() == 900)
    qtbot.waitUntil(lambda: _settled(w))  # the resize laid out (the composer's height, the tool bar's words)
    before = _layout(w)
    w.show_toast("Exported 3 chats to /tmp/chats.json.")
    assert w.toast.isVisible()
    qtbot.wait(50)  # a frame: anything the toast would push has moved by now
    assert _layout(w) == before
    t, page = w.toast.geometry(), w.stack.geometry()
    assert page.contains(t) and t.bottom() > page.center().y()  # over the page, near its bottom
    w.show_notice("Could not export to /proc/x: permission denied.")  # a banner floats too
    qtbot.wait(50)
    assert w.notice.isVisible() and _layout(w) == before
    assert w.stack.geometry().contains(w.notices.banners.geometry())


def test_a_toast_fades_by_itself_and_a_banner_waits_to_be_closed(app, qtbot) -> None:
    w = app.open(small_settings())
    w.toast.lifetime_ms = 100
    w.show_toast("Copied.")
    w.show_notice("Load a model first: pick one at the top, or the bundled SmolLM2.")
    qtbot.waitUntil(lambda: not w.toast.isVisible(), timeout=3000)
    assert w.notice.isVisible()
    w.notice.close_button.click()
    assert not w.notice.isVisible() and not w.notices.banners.isVisible()


def test_a_banners_action_runs_from_its_button(app, qtbot) -> None:
    w = app.open(small_settings())
    ran: list[bool] = []
    w.show_notice("Something to do.", action=("Do it", lambda: ran.append(True)))
    w.notice.action_button.click()
    assert ran == [True]
    w.show_notice("Nothing to do.")
    assert not w.notice.action_button.isVisible()  # an old action goes with its notice
