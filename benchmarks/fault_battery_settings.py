"""Fault battery, settings and history: hostile settings files and unusable history databases.

Each case prepares fresh user folders, opens the real window on them (offscreen) the way
the app starts, and prints one JSON line with what the user saw: whether the window
opened, the notice and the problem line, what became of the file, and (for a history
case, with the bundled model installed) whether a message typed then was kept.

    QT_QPA_PLATFORM=offscreen python benchmarks/fault_battery_settings.py [--case NAME ...] [--no-send]

`run_case(name)` returns one case's dict, for other batteries to call.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TYPED = "A message typed while the history fails"


def _settings(text: str | bytes) -> Callable[[Path, Path], None]:
    def prepare(settings: Path, _history: Path) -> None:
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_bytes(text.encode() if isinstance(text, str) else text)
    return prepare


def _settings_folder(settings: Path, _history: Path) -> None:
    settings.mkdir(parents=True)  # unreadable, even for root


def _settings_parent_is_a_file(settings: Path, _history: Path) -> None:
    settings.parent.parent.mkdir(parents=True, exist_ok=True)
    settings.parent.write_bytes(b"not a folder")


def _history_garbage(_settings: Path, history: Path) -> None:
    history.write_bytes(b"\x00this is no database" * 400)


def _history_folder(_settings: Path, history: Path) -> None:
    history.mkdir()


def _history_too_new(_settings: Path, history: Path) -> None:
    with sqlite3.connect(history) as conn:
        conn.execute("PRAGMA user_version = 9999")


def _history_truncated(_settings: Path, history: Path) -> None:
    from prefill.store import HistoryStore

    with HistoryStore(history) as store:
        for i in range(200):
            store.add_message(store.create_conversation(f"chat {i}").id, "user", "words " * 200)
    data = history.read_bytes()
    for side in (history.with_name(history.name + "-wal"), history.with_name(history.name + "-shm")):
        side.unlink(missing_ok=True)
    history.write_bytes(data[: len(data) // 3])


CASES: dict[str, Callable[[Path, Path], None]] = {
    "settings_not_json": _settings('{"model": {"n_ctx": 40'),
    "settings_not_utf8": _settings(b"\xff\xfe\x00{garbage"),
    "settings_empty": _settings(b""),
    "settings_json_array": _settings("[1, 2, 3]"),
    "settings_deep_nesting": _settings("[" * 200_000),
    "settings_too_large": _settings('{"ui": {"theme": "dark"}, "pad": "' + "x" * (2 << 20) + '"}'),
    "settings_nan_and_infinity": _settings('{"sampling": {"temperature": NaN, "top_p": Infinity}}'),
    "settings_top_p_zero": _settings('{"sampling": {"top_p": 0}}'),
    "settings_kv_without_flash": _settings('{"model": {"kv_type": "q4_0", "flash_attn": false}}'),
    "settings_wrong_types": _settings('{"model": {"n_ctx": "4k", "n_gpu_layers": -5, "n_batch": 0},'
                                      ' "ui": {"theme": "solarized"}, "hub": {"hf_token": ["x"]}}'),
    "settings_huge_numbers": _settings('{"model": {"n_ctx": 1e300}, "sampling": {"seed": 100000000000000000000}}'),
    "settings_unreadable": _settings_folder,
    "settings_parent_is_a_file": _settings_parent_is_a_file,
    "history_garbage": _history_garbage,
    "history_is_a_folder": _history_folder,
    "history_too_new": _history_too_new,
    "history_truncated": _history_truncated,
}


def _wait(until: Callable[[], bool], timeout_ms: int) -> bool:
    from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QEventLoop

    deadline = QDeadlineTimer(timeout_ms)
    while not until():
        if deadline.hasExpired():
            return False
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
    return True


def _file_state(settings: Path, before: bytes | None) -> str:
    if settings.is_dir():
        return "left alone (a folder)"
    if not settings.exists():
        return "set aside" if settings.with_name(settings.name + ".bak").exists() else "none"
    if before is None:
        return "written"  # by the start-up's repair
    return "kept" if settings.read_bytes() == before else "repaired"


def run_case(name: str, send: bool = True) -> dict[str, object]:
    """Run one case; return what the user saw."""
    from PySide6.QtWidgets import QApplication

    from prefill.hub.bundled import bundled_model_path
    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.app import build_window, read_settings

    app = QApplication.instance() or QApplication([])
    out: dict[str, object] = {"case": name}
    with tempfile.TemporaryDirectory() as home:
        settings = Path(home, "config", "prefill", "settings.json")
        history = Path(home, "data", "prefill", "history.sqlite3")
        history.parent.mkdir(parents=True)
        CASES[name](settings, history)
        before = settings.read_bytes() if settings.is_file() else None
        t0 = time.perf_counter()
        try:
            settings_file = SettingsFile(settings)
            w, store, engine = build_window(read_settings(settings_file), settings_file, HistoryStore(history), None)
        except Exception as e:  # noqa: BLE001 - the battery reports it
            return {**out, "opened": False, "error": repr(e)}
        try:
            w.show()
            w.refresh_conversations()
            _wait(lambda: store.pending() == 0, 10_000)
            out.update(opened=True, ms_to_window=round((time.perf_counter() - t0) * 1000),
                       notice=w.notice.text(), problem=w.problem.text(),
                       differs_from_defaults=_differences(w.settings),
                       settings_file=_file_state(settings, before))  # before the close saves it
            model = bundled_model_path()
            if send and name.startswith("history") and model is not None:
                out["typed_message_kept"] = _send_while_failing(w, model)
        finally:
            w.close()
            engine.stop()
            store.stop()
            app.processEvents()
    return out


def _differences(settings: object) -> list[str]:
    from prefill.store.app_settings import Settings

    default = {i.key: i.value for i in Settings().describe()}
    return [i.key for i in settings.describe() if i.value != default[i.key]]  # type: ignore[attr-defined]


def _send_while_failing(w, model: Path) -> bool:
    loaded: list[object] = []
    w.model_loaded.connect(loaded.append)
    w.load_model(str(model))
    if not _wait(lambda: bool(loaded), 60_000):
        return False
    w.input.editor.setPlainText(TYPED)
    w.input.button.click()
    return _wait(lambda: w.input.editor.toPlainText() == TYPED and not w.controller.busy, 60_000)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    ap.add_argument("--no-send", action="store_true", help="skip typing a message in the history cases")
    args = ap.parse_args()
    for name in args.case or CASES:
        print(json.dumps(run_case(name, send=not args.no_send), ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
