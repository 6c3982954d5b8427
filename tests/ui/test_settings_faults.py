"""Settings that cannot stick the app (issue 9): hostile settings files and an unusable history
open a working window that says what happened; a typed message is never lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.app import build_window, read_settings
from prefill.ui.main_window import MainWindow
from tests.ui.conftest import ANSWER_TIMEOUT, LOAD_TIMEOUT

SMALL = {"n_ctx": 1024, "n_gpu_layers": "none", "n_threads": 1}


class Started:
    """Windows built the way the app starts: read the settings file, then build."""

    def __init__(self, qtbot, data: Path):
        self.qtbot, self.data = qtbot, data
        self.settings_path = data / "config" / "settings.json"
        self.history_path = data / "history.sqlite3"
        self.opened: list = []

    def write_settings(self, content: dict | bytes) -> None:
        self.settings_path.parent.mkdir(parents=True, exist_ok=True)
        raw = content if isinstance(content, bytes) else json.dumps(content).encode()
        self.settings_path.write_bytes(raw)

    def open(self, bundled: Path | None = None) -> MainWindow:
        settings_file = SettingsFile(self.settings_path)
        w, store, engine = build_window(read_settings(settings_file), settings_file,
                                        HistoryStore(self.history_path), bundled)
        self.qtbot.addWidget(w)
        w.show()
        self.opened.append((w, store, engine))
        return w

    def close_all(self) -> None:
        for w, store, engine in self.opened:
            w.close()
            engine.stop()
            store.stop()
        self.opened.clear()


@pytest.fixture
def started(qtbot, tmp_path: Path):
    s = Started(qtbot, tmp_path)
    yield s
    s.close_all()


def answer(qtbot, w: MainWindow, text: str) -> None:
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.input.editor.setPlainText(text)
        w.input.button.click()


def test_top_p_zero_from_the_file_answers_and_the_stop_button_clears(started, qtbot, smollm2: Path) -> None:
    # The store allowed top_p = 0 and the engine refused it: Send turned into Stop for good.
    started.write_settings({"model": SMALL, "sampling": {"top_p": 0, "temperature": 0.5, "max_tokens": 8}})
    w = started.open()
    assert w.settings.sampling.top_p == 0.0 and not w.notice.isVisible()
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(smollm2))
    answer(qtbot, w, "Hi")
    assert w.input.button.text() == "Send"
    rows = w.transcript.rows()
    assert [r.role for r in rows] == ["user", "assistant"] and rows[1].finish_reason in ("stop", "length")


def test_quantised_kv_cache_without_flash_attention_is_repaired_with_a_notice(
    started, qtbot, smollm2: Path
) -> None:
    # The store accepted it and the engine refused it: the window said "loading…" for ever.
    started.write_settings({"model": {**SMALL, "kv_type": "q8_0", "flash_attn": "off"}, "ui": {"theme": "dark"}})
    w = started.open()
    assert "model.kv_type" in w.notice.text() and "flash attention" in w.notice.text()
    assert w.notice.isVisible()
    assert (w.settings.model.kv_type, w.settings.ui.theme) == ("f16", "dark")  # only the bad value reset
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(smollm2))
    assert "loading" not in w.load_state.text()
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    repaired = json.loads(started.settings_path.read_text("utf-8"))
    assert repaired["model"]["kv_type"] == "f16" and repaired["ui"]["theme"] == "dark"


def test_settings_file_that_is_not_json_is_kept_aside_with_a_notice(started) -> None:
    started.write_settings(b"{\"model\": {\"n_ctx\": 40")
    w = started.open()
    assert "not valid JSON" in w.notice.text() and "settings.json.bak" in w.notice.text()
    assert started.settings_path.with_name("settings.json.bak").read_bytes() == b"{\"model\": {\"n_ctx\": 40"


def test_unreadable_settings_file_opens_the_window_and_is_not_saved_over(started, qtbot) -> None:
    started.settings_path.mkdir(parents=True)  # reading it fails, even as root
    w = started.open()
    assert w.problem.isVisible()
    assert str(started.settings_path) in w.problem.text() and "could not be read" in w.problem.text()
    with qtbot.waitSignal(w.closed, timeout=5000):
        w.close()  # saves the window state: not over the unreadable file
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    assert started.settings_path.is_dir() and not list(started.settings_path.iterdir())
    assert str(started.settings_path) in w.problem.text()  # and no second, "could not save", problem


@pytest.mark.parametrize("fault", ["garbage", "folder"])
def test_unusable_history_says_so_and_keeps_the_typed_message(started, qtbot, smollm2: Path, fault: str) -> None:
    if fault == "garbage":
        started.history_path.write_bytes(b"this is not a database, it is a letter" * 100)
    else:
        started.history_path.mkdir()
    started.write_settings({"model": SMALL, "sampling": {"temperature": 0, "max_tokens": 8}})
    w = started.open()
    w.refresh_conversations()
    qtbot.waitUntil(lambda: "chat history" in w.problem.text(), timeout=5000)
    assert str(started.history_path) in w.problem.text() and "the app still works" in w.problem.text()
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(smollm2))
    w.input.editor.setPlainText("A message worth keeping")
    w.input.button.click()
    assert w.input.editor.toPlainText() == ""  # sent: the box clears…
    qtbot.waitUntil(lambda: w.input.editor.toPlainText() == "A message worth keeping", timeout=5000)  # …and refills
    assert not w.controller.busy and w.input.button.text() == "Send"


def test_the_app_opens_with_an_unreadable_settings_file_and_history(tmp_path: Path) -> None:
    # Before: SettingsFile.load() raised at start-up and the app never opened.
    config, data = tmp_path / "config", tmp_path / "data"
    (config / "prefill" / "settings.json").mkdir(parents=True)
    (data / "prefill").mkdir(parents=True)
    (data / "prefill" / "history.sqlite3").write_bytes(b"\x00garbage" * 512)
    env = dict(os.environ, XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=str(data), PREFILL_EXIT_AFTER_SHOWN="1",
               QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-m", "prefill"], capture_output=True, text=True, env=env, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("shown") and "Traceback" not in out.stderr
    assert (config / "prefill" / "settings.json").is_dir()  # left as it was
