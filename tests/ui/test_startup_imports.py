"""What the window's start-up imports: only what the first window needs.

The server (uvicorn, starlette), llama.cpp and its Jinja, MCP's SDK and sqlite-vec are imported when a
model is loaded, served, a tool server started or a collection searched. Imported at start on the
engine or a pool thread, they hold the GIL the GUI thread needs to build and show the window.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"

# Top-level packages the first window (no model, no tool server, no collection) never needs.
HEAVY = ("uvicorn", "starlette", "mcp", "llama_cpp", "jinja2", "sqlite_vec", "asyncio", "httpx2")

# Runs the app as `python -m prefill` does until its window is shown, then lists the modules it holds
# once it has quit: the engine thread has then run every request the start queued (and its shutdown).
_DRIVER = """
import json, os, sys
os.environ["PREFILL_EXIT_AFTER_SHOWN"] = "1"
from prefill.cli import main
rc = main([])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _modules_after_start(tmp_path: Path) -> list[str]:
    # In a process of its own: the modules other tests imported would be in this one's sys.modules.
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), HF_HOME=str(tmp_path / "hf"),
               HF_HUB_CACHE=str(tmp_path / "hf" / "hub"), QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=str(APP) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _DRIVER], capture_output=True, text=True, env=env, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("shown"), out.stdout
    reported = json.loads(lines[-1])
    assert reported["rc"] == 0
    return list(reported["modules"])


def test_the_window_starts_without_the_server_llama_cpp_or_mcp_imported(tmp_path: Path) -> None:
    # Before: the engine worker's session, made at start for the cache budget, imported the server
    # (uvicorn, starlette, asyncio), the model pool and llama.cpp with Jinja; the start-up scan of the
    # model library imported the Hugging Face client (httpx2) for a cache folder that was not there.
    modules = _modules_after_start(tmp_path)
    assert "prefill.session.chat_session" in modules  # the engine worker did make its session
    assert "prefill.ui.main_window" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []
    rooms = {"prefill.server", "prefill.engine.batch", "prefill.engine.local.chat_engine", "prefill.pool.pool"}
    assert not [m for m in modules if any(m == r or m.startswith(r + ".") for r in rooms)]
