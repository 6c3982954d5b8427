"""GUI-thread stalls while an answer streams, and the cost of a flush at its start and end.

A synthetic token source (a Python thread, as the engine worker is) writes 20,000 tokens
of markdown at 2,000 tokens/s into the worker's text buffer; the real ChatController
flush path moves them into the transcript model and the chat view renders them. A 1 ms
timer on the GUI thread measures the event loop's longest stall. Prints JSON.

    QT_QPA_PLATFORM=offscreen python benchmarks/ui_stream_bench.py [--tokens 20000] [--rate 2000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PARAGRAPH = ("The engine prefills the prompt in one pass and then decodes one token per step, "
             "reusing the **KV cache** it built. ")
CODE = "```python\ndef prime(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n```\n\n"


def token_stream(n: int) -> list[str]:
    text = ""
    while len(text) < n * 4:
        text += PARAGRAPH * 3 + "\n\n" + "- a list item with `code`\n- another item\n\n" + CODE
    return [text[i : i + 4] for i in range(0, n * 4, 4)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=20_000)
    ap.add_argument("--rate", type=float, default=2000.0)
    ap.add_argument("--cold", action="store_true", help="no earlier message: the very first render is measured too")
    args = ap.parse_args()

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
    from prefill.ui.chat.transcript.view import ChatView
    from prefill.ui.markdown.rich_text import warm_up
    from prefill.ui.workers.engine_worker import TextBuffer

    sys.setswitchinterval(0.001)  # as the app sets it
    app = QApplication(sys.argv[:1])
    warm_up()  # as the app does on a background thread at start-up
    model = TranscriptModel()
    view = ChatView(model)
    view.resize(900, 800)
    view.show()
    # An earlier exchange, as in a real chat: the first markdown, code and glyphs are rendered
    # before the measured answer (the cold first render is reported apart, see --cold).
    if not args.cold:
        model.append_row(Row("user", ["Show me a prime test."]))
        model.append_row(Row("assistant", ["Here is one:\n\n" + CODE + PARAGRAPH + "\n\n- a list item with `code`\n"]))
        settle = time.perf_counter() + 0.5
        while time.perf_counter() < settle:
            app.processEvents()
    gc.freeze()  # as run_app does once the window is shown
    model.append_row(Row("user", ["Tell me about serving LLMs."]))
    row = model.append_row(Row("assistant", [], streaming=True))
    buffer = TextBuffer()
    tokens = token_stream(args.tokens)
    done = threading.Event()

    def source() -> None:  # the engine thread's side: one put per token, paced at `rate`
        t0 = time.perf_counter()
        for i, tok in enumerate(tokens):
            due = t0 + i / args.rate
            while time.perf_counter() < due:
                time.sleep(0.0002)
            buffer.put(tok)
        done.set()

    flushes: list[tuple[int, float]] = []  # (tokens so far, ms)
    received = [0]

    def flush() -> None:  # ChatController.flush, measured
        t = time.perf_counter()
        text = buffer.take()
        if text:
            model.append_text(row, text)
            received[0] += len(text) // 4
            flushes.append((received[0], (time.perf_counter() - t) * 1000))
        if done.is_set() and not text:
            app.quit()

    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append((now - last[0]) * 1000)
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    flusher = QTimer()
    flusher.setInterval(30)
    flusher.timeout.connect(flush)
    threading.Thread(target=source, daemon=True).start()
    t0 = time.perf_counter()
    ticker.start()
    flusher.start()
    app.exec()
    wall = time.perf_counter() - t0
    costs = [ms for _, ms in flushes]
    k = max(1, len(costs) // 20)
    first, last_ = statistics.mean(costs[:k]), statistics.mean(costs[-k:])
    if os.environ.get("BENCH_DEBUG"):
        print(sorted(flushes, key=lambda f: -f[1])[:12], file=sys.stderr)
    print(json.dumps({
        "cold": args.cold,
        "tokens": args.tokens,
        "rate_tokens_per_s": args.rate,
        "wall_s": round(wall, 2),
        "flushes": len(costs),
        "longest_stall_ms": round(max(gaps[5:]), 2),
        "p99_stall_ms": round(sorted(gaps)[int(len(gaps) * 0.99)], 2),
        "stalls_over_16ms": sum(g > 16 for g in gaps[5:]),
        "flush_ms_first_5pct": round(first, 3),
        "flush_ms_last_5pct": round(last_, 3),
        "flush_ratio_last_to_first": round(last_ / first, 2) if first else None,
        "flush_ms_max": round(max(costs), 2),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
