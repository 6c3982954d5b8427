"""Hostile answers in the chat: the GUI thread's longest stall and the memory a huge message takes.

Two answers a model (or an imported chat) can hold (issue 33): a markdown table of 10,000 rows
by 64 columns (1.3 MB) and one line of 4 MB. Each is shown in a real ``ChatView`` twice: as a
stored message (the whole text at once, as a chat opened from the history) and streamed (32 KB
per 30 ms flush, as the controller flushes, then finished). A 1 ms timer on the GUI thread
measures the event loop's longest stall, from the message's arrival until it is shown and
settled, in wall time and in the GUI thread's CPU time (which other processes on a busy machine
do not inflate); the memory is the process's peak RSS over the one it had before the message. Each case
runs in a process of its own, so one peak does not hide another.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=app python benchmarks/markdown_hostile_bench.py

Prints one JSON object: per case, ``longest_stall_ms``, ``longest_stall_cpu_ms`` and
``added_peak_mb`` (goals: at most 50 ms and 200 MB; ``short-stored``, a one-line answer, is what
any message costs) and what the message shows (characters in its documents, how many are folded).
Before issue 33 the table took 12.5 s in ``set_content`` and 7 s of layout (+2.1 GB), the line
0.9 s + 4.5 s (+2 GB).

``--growth`` runs the older measure instead: ``render_markdown`` and a message's full display
of each input of ``text_faults.HOSTILE_MARKDOWN`` at growing sizes, which must grow linearly.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
APP = Path(__file__).resolve().parents[1] / "app"
if str(APP) not in sys.path and not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(APP))

# prose: 1.7 MB of markdown paragraphs, the densest common text; short: what any message costs.
CASES = ("table-stored", "table-streamed", "line-stored", "line-streamed", "prose-stored", "short-stored")
STREAM_CHUNK = 32 * 1024  # characters per flush
FLUSH_MS = 30
SETTLE_S = 1.0  # the event loop runs this long after the message is complete


def table(rows: int = 10_000, cols: int = 64) -> str:
    """A markdown table of ``rows`` rows by ``cols`` one-digit columns (~130 bytes a row)."""
    head = "|" + "|".join(f"c{c}" for c in range(cols)) + "|\n"
    rule = "|" + "|".join("-" for _ in range(cols)) + "|\n"
    body = "".join("|" + "|".join(str((r + c) % 10) for c in range(cols)) + "|\n" for r in range(rows))
    return head + rule + body


def long_line(size: int = 4_000_000) -> str:
    """One line of ``size`` characters: words, no line break."""
    unit = "a long line of words without any break "
    return (unit * (size // len(unit) + 1))[:size]


def prose(size: int = 1_700_000) -> str:
    """Markdown paragraphs (emphasis, code, links) until ``size`` characters."""
    para = "Some **bold** prose with `code` and a [link](https://example.com), then more words.\n\n"
    return para * (size // len(para))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_case(case: str) -> dict[str, Any]:
    """One case, in this process: the figures of one message."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
    from prefill.ui.chat.transcript.view import ChatView
    from prefill.ui.markdown.rich_text import warm_up

    app = QApplication.instance() or QApplication(sys.argv[:1])
    warm_up()
    model = TranscriptModel()
    view = ChatView(model)
    view.resize(900, 800)
    view.show()
    model.append_row(Row("user", ["Show me something long."]))
    settle = time.perf_counter() + 0.3
    while time.perf_counter() < settle:
        app.processEvents()
    kind, how = case.split("-")
    short = "A short answer, for the cost of any message."
    text = {"table": table, "line": long_line, "prose": prose}.get(kind, lambda: short)()
    before = _rss_mb()
    gaps: list[float] = []  # wall ms between ticks
    cpu_gaps: list[float] = []  # the GUI thread's CPU ms between ticks (the same on a busy machine)
    last = [time.perf_counter(), time.thread_time()]

    def tick() -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        gaps.append((now - last[0]) * 1000)
        cpu_gaps.append((cpu - last[1]) * 1000)
        last[0], last[1] = now, cpu

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    state = {"at": 0, "row": -1, "done_at": 0.0}

    def finish_later() -> None:
        state["done_at"] = time.perf_counter()
        QTimer.singleShot(int(SETTLE_S * 1000), app.quit)

    def start() -> None:
        last[0], last[1] = time.perf_counter(), time.thread_time()
        ticker.start()
        if how == "stored":
            state["row"] = model.append_row(Row("assistant", [text]))
            finish_later()
        else:
            state["row"] = model.append_row(Row("assistant", [], streaming=True))
            flusher.start()

    def flush() -> None:  # what ChatController.flush does with what the engine wrote since the last one
        at = int(state["at"])
        if at >= len(text):
            flusher.stop()
            model.update_row(int(state["row"]), streaming=False, finish_reason="stop")
            finish_later()
            return
        model.append_text(int(state["row"]), text[at : at + STREAM_CHUNK])
        state["at"] = at + STREAM_CHUNK

    flusher = QTimer()
    flusher.setInterval(FLUSH_MS)
    flusher.timeout.connect(flush)
    QTimer.singleShot(0, start)
    t0 = time.perf_counter()
    app.exec()
    wall = time.perf_counter() - t0
    widget = view.live_widget(int(state["row"]))
    shown = folded = None
    if widget is not None:
        shown = sum(s.document().characterCount() for s in widget.body.segments)
        folded = getattr(widget.body, "folded", None)  # absent before issue 33
        assert widget.text() == text, "the message lost text"
    return {
        "case": case,
        "chars": len(text),
        "longest_stall_ms": round(max(gaps), 1) if gaps else None,
        "longest_stall_cpu_ms": round(max(cpu_gaps), 1) if cpu_gaps else None,
        "added_peak_mb": round(_rss_mb() - before, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "wall_s": round(wall, 2),
        "shown_chars": shown,
        "folded_chars": folded,
    }


def growth(sizes: list[int], repeat: int, only: list[str]) -> dict[str, Any]:
    """Per hostile input: milliseconds to render and to show, at each size, and how they grow."""
    from PySide6.QtWidgets import QApplication

    from prefill.ui.markdown.rich_text import render_markdown
    from prefill.ui.markdown.text_faults import HOSTILE_MARKDOWN, show_answer

    app = QApplication.instance() or QApplication(sys.argv[:1])  # noqa: F841 - Qt needs one for layout

    def best_ms(fn: Any) -> float:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        return round(best * 1000, 2)

    results: dict[str, dict[str, object]] = {}
    for name in only or list(HOSTILE_MARKDOWN):
        build = HOSTILE_MARKDOWN[name]
        render_ms, shown_ms = [], []
        for size in sizes:
            text = build(size)
            render_ms.append(best_ms(lambda t=text: render_markdown(t, budget=None)))
            shown_ms.append(min(show_answer(text, budget=None)[2] for _ in range(repeat)))
        scale = sizes[-1] / sizes[0]
        results[name] = {
            "render_ms": render_ms,
            "shown_ms": [round(ms, 2) for ms in shown_ms],
            "growth_render": round(render_ms[-1] / max(render_ms[0], 0.01) / scale, 2),
            "growth_shown": round(shown_ms[-1] / max(shown_ms[0], 0.01) / scale, 2),
        }
    return {"sizes": sizes, "repeat": repeat, "inputs": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=CASES, help="run one case in this process (the default runs each apart)")
    parser.add_argument("--growth", action="store_true", help="the older measure: hostile inputs at growing sizes")
    parser.add_argument("--sizes", default="10000,40000,160000", help="--growth: characters, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="--growth: best of this many")
    parser.add_argument("--only", default="", help="--growth: comma-separated input names (default: all)")
    args = parser.parse_args()
    if args.growth:
        sizes = [int(s) for s in args.sizes.split(",")]
        print(json.dumps(growth(sizes, args.repeat, args.only.split(",") if args.only else []), indent=1))
        return
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    results = {}
    for case in CASES:
        out = subprocess.run([sys.executable, __file__, "--case", case], capture_output=True, text=True, check=False)
        lines = out.stdout.strip().splitlines()
        results[case] = json.loads(lines[-1]) if out.returncode == 0 and lines else {"error": out.stderr[-2000:]}
    def worst(key: str) -> float:
        return max((r.get(key) or 0 for r in results.values()), default=0)

    print(json.dumps({
        "goal": {"longest_stall_ms": 50, "added_peak_mb": 200},
        "longest_stall_ms": worst("longest_stall_ms"),
        "longest_stall_cpu_ms": worst("longest_stall_cpu_ms"),
        "added_peak_mb": worst("added_peak_mb"),
        "cases": results,
    }, indent=1))


if __name__ == "__main__":
    main()
