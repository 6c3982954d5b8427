"""Cost of one streamed append, early in a long answer and late in it (STYLE rule 7).

Streams a generated answer (paragraphs, headings, lists, quotes, tables and
highlighted code fences; about 20,000 tokens at the default 80,000 characters) into
a ``MarkdownStream`` in 30-character appends, as the ~30 ms flush timer would, and
times every ``append()``. The document is shown in a laid-out ``QTextBrowser`` unless
``--no-view``, so layout is counted too. For contrast it also times the naive flush
(``setHtml(render_markdown(answer_so_far))``) at the same two points.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=app:. python benchmarks/markdown_stream_bench.py

Prints one JSON object. ``first`` and ``last`` are the mean and median milliseconds
per append over the first and last ``--window`` appends; ``ratio_mean`` is
last/first, the goal being at most 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtWidgets import QApplication, QTextBrowser  # noqa: E402

from prefill.ui.markdown.rich_text import render_markdown  # noqa: E402
from prefill.ui.markdown.stream import MarkdownStream  # noqa: E402
from tests.ui.markdown.test_stream import sample_answer  # noqa: E402


def _summary(times: list[float]) -> dict[str, float]:
    return {
        "mean_ms": round(statistics.fmean(times) * 1e3, 4),
        "median_ms": round(statistics.median(times) * 1e3, 4),
        "max_ms": round(max(times) * 1e3, 3),
    }


def _naive_ms(text: str, browser: QTextBrowser | None, repeat: int = 3) -> float:
    """One full re-render of ``text``, the way a naive view would flush."""
    doc = browser.document() if browser is not None else QTextDocument()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        doc.setHtml(render_markdown(text))
        if browser is not None:
            doc.documentLayout().documentSize()
        best = min(best, time.perf_counter() - start)
    return round(best * 1e3, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=80_000, help="answer length")
    parser.add_argument("--chunk", type=int, default=30, help="characters per append")
    parser.add_argument("--window", type=int, default=300, help="appends averaged at each end")
    parser.add_argument("--no-view", action="store_true", help="no QTextBrowser: document only")
    args = parser.parse_args()

    app = QApplication.instance() or QApplication([])
    text = sample_answer(args.chars)
    browser = None
    if not args.no_view:
        browser = QTextBrowser()
        browser.resize(800, 600)
        browser.show()
        app.processEvents()
    doc = browser.document() if browser is not None else QTextDocument()
    stream = MarkdownStream(doc)

    chunks = [text[i : i + args.chunk] for i in range(0, len(text), args.chunk)]
    times: list[float] = []
    for chunk in chunks:
        start = time.perf_counter()
        stream.append(chunk)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    stream.finish()
    finish_s = time.perf_counter() - start

    window = min(args.window, len(times) // 2)
    first, last = _summary(times[:window]), _summary(times[-window:])
    early = "".join(chunks[:window])
    print(json.dumps({
        "chars": len(text),
        "appends": len(times),
        "chunk": args.chunk,
        "view": browser is not None,
        "window": window,
        "first": first,
        "last": last,
        "ratio_mean": round(last["mean_ms"] / first["mean_ms"], 3),
        "ratio_median": round(last["median_ms"] / first["median_ms"], 3),
        "total_append_s": round(sum(times), 3),
        "finish_ms": round(finish_s * 1e3, 3),
        "naive_flush_ms": {"first": _naive_ms(early, browser), "last": _naive_ms(text, browser)},
    }, indent=2))


if __name__ == "__main__":
    main()
