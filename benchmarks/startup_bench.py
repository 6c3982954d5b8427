"""Time from process start to the main window shown, without a model. Prints JSON.

Runs `python -m prefill` with PREFILL_EXIT_AFTER_SHOWN=1 (the app prints "shown" and quits once its
window is on screen) in fresh user folders, several times, and reports the wall time of each.

    python benchmarks/startup_bench.py [--runs 5] [--platform offscreen|xcb]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"


def one(platform: str) -> float:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, PREFILL_EXIT_AFTER_SHOWN="1", QT_QPA_PLATFORM=platform,
                   XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config",
                   PYTHONPATH=str(APP) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "prefill"], env=env, stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith("shown"):
                shown = time.perf_counter() - t0
                break
        else:
            raise SystemExit("the window was never shown")
        p.wait(timeout=30)
        return shown * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--platform", default=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    args = ap.parse_args()
    one(args.platform)  # warm the file cache
    runs = [one(args.platform) for _ in range(args.runs)]
    print(json.dumps({"platform": args.platform, "median_ms": round(statistics.median(runs)),
                      "runs_ms": [round(r) for r in runs]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
