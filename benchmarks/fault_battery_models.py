"""Hostile model files against `prefill chat`, one process each: does the process live?

Writes every case of tests/engine/hostile_models.py (and the plain model at the small
context sizes the settings allow), runs

    prefill chat --model FILE --ctx N --prompt <words> --json --temperature 0 --max-tokens 4

in a process of its own for each (the plain model with a prompt longer than the context
asked for, the faulty ones with a short one), then `prefill ls` over the folder that holds them all,
and prints one JSON line per run: the case, the exit status (negative: killed by that
signal, -6 is SIGABRT), and the error line the user sees.

    PYTHONPATH=app:. python benchmarks/fault_battery_models.py [--app DIR] [--keep DIR]

`--app` runs the children against another checkout's `app/` folder (say, one from before
a fix) while the files are still written by this one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "app"))

from tests.engine.hostile_models import CASES, long_prompt, write_case  # noqa: E402

DEFAULT_CTX = 300  # rounded up to 512 by llama.cpp, which caps its batch at 300
SMALL_CONTEXTS = (128, 300)  # the schema's least (the settings dialog's too), the reported one


SHORT = 40  # words for the faulty files: a prompt that fits every context


def words_for(n_ctx: int) -> int:
    """A prompt longer than the context asked for, shorter than the one llama.cpp makes of it."""
    return 330 if n_ctx >= 300 else 200


def _child(app: Path, args: list[str], timeout: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(app), str(ROOT)])}
    try:
        out = subprocess.run([sys.executable, "-m", "prefill", *args], check=False, capture_output=True, text=True,
                             env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": f"no answer in {timeout} s"}
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("prefill:")]  # what the CLI says on a clean error
    died = [ln for ln in lines if any(w in ln for w in ("GGML_ASSERT", "GGML_ABORT", "what():", "Error"))]
    return {"exit": out.returncode, "error": (said or died or lines or [""])[-1][:300],
            "stdout_lines": len(out.stdout.splitlines())}


def chat_args(path: Path, n_ctx: int, words: int) -> list[str]:
    return ["chat", "--model", str(path), "--ctx", str(n_ctx), "--gpu-layers", "none", "--json",
            "--temperature", "0", "--max-tokens", "4", "--prompt", long_prompt(words)]


def run(app: Path, folder: Path, timeout: int) -> list[dict[str, object]]:
    results = []
    for case in CASES:
        path = write_case(case, folder)
        runs = [(n, words_for(n)) for n in SMALL_CONTEXTS] if case.name == "plain" else [(DEFAULT_CTX, SHORT)]
        for n_ctx, words in runs:
            result = _child(app, chat_args(path, n_ctx, words), timeout)
            row = {"case": case.name, "ctx": n_ctx, "words": words, "fault": case.fault,
                   "refused_by": case.refused_by, **result}
            print(json.dumps(row, ensure_ascii=False), flush=True)
            results.append(row)
    row = {"case": "ls", "ctx": None, "words": None, "fault": "every file above in one models folder",
           **_child(app, ["ls", "--models-dir", str(folder)], timeout)}
    print(json.dumps(row, ensure_ascii=False), flush=True)
    results.append(row)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", type=Path, default=ROOT / "app", help="the app/ folder the children import")
    ap.add_argument("--keep", type=Path, help="write the files here and keep them")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per child")
    args = ap.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        results = run(args.app.resolve(), args.keep, args.timeout)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results = run(args.app.resolve(), Path(tmp), args.timeout)
    crashed = [r["case"] for r in results if not isinstance(r["exit"], int) or r["exit"] < 0]
    print(json.dumps({"summary": True, "runs": len(results), "crashed": crashed}), flush=True)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
