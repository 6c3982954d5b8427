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

ROOT = Path(__file__).resolve().parents[1]


def under_xvfb(script: str, out: Path, prepare: Callable[[Path], list[str]] = lambda _home: []) -> int:
    """Start Xvfb, then `python script --inside OUT ARGS…` on it; `prepare(home)` gives ARGS
    (a model written into the temporary home, say). Returns the inner run's exit status."""
    if not shutil.which("Xvfb"):
        print("Xvfb is missing: apt-get install xvfb", file=sys.stderr)
        return 1
    display = ":96"
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
