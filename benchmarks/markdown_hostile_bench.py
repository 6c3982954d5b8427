"""Markdown rendering time on hostile answers, at growing sizes: it must grow linearly.

For each input of ``prefill.ui.markdown.text_faults.HOSTILE_MARKDOWN`` (nested quotes and
lists, long runs of emphasis characters, backticks, brackets...) at 10k, 40k and
160k characters, times ``render_markdown`` (the Python side) and a message's full
display (``MarkdownStream.set_text`` plus Qt's layout), best of ``--repeat``.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=app python benchmarks/markdown_hostile_bench.py

Prints one JSON object: per input, the milliseconds at each size and ``growth``,
the time at the largest size over the time at the smallest divided by the size
ratio (1 is linear; quadratic would be 16 here). Before the fix, 40k characters
of ``***a `` took ~10 s and 400 nested quotes raised RecursionError.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from PySide6.QtWidgets import QApplication  # noqa: E402

from prefill.ui.markdown.rich_text import render_markdown  # noqa: E402
from prefill.ui.markdown.text_faults import HOSTILE_MARKDOWN, show_answer  # noqa: E402


def _best_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return round(best * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,40000,160000", help="characters, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated input names (default: all)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = args.only.split(",") if args.only else list(HOSTILE_MARKDOWN)
    app = QApplication.instance() or QApplication(sys.argv[:1])  # noqa: F841 - Qt needs one for layout
    results: dict[str, dict[str, object]] = {}
    for name in names:
        build = HOSTILE_MARKDOWN[name]
        render_ms, shown_ms = [], []
        for size in sizes:
            text = build(size)
            render_ms.append(_best_ms(lambda t=text: render_markdown(t), args.repeat))
            shown_ms.append(min(show_answer(text)[2] for _ in range(args.repeat)))
        scale = sizes[-1] / sizes[0]
        results[name] = {
            "render_ms": render_ms,
            "shown_ms": [round(ms, 2) for ms in shown_ms],
            "growth_render": round(render_ms[-1] / max(render_ms[0], 0.01) / scale, 2),
            "growth_shown": round(shown_ms[-1] / max(shown_ms[0], 0.01) / scale, 2),
        }
    print(json.dumps({"sizes": sizes, "repeat": args.repeat, "inputs": results}, indent=1))


if __name__ == "__main__":
    main()
