"""Opening a long stored conversation: time until its last screen shows, and the longest GUI stall.

For each size, a real SQLite history file in a temp folder gets one conversation of N messages
(short markdown, a code block each, user and assistant in turn). A real main window (no model)
opens it through ChatController.open_conversation, as a click in the conversation list does.
A 1 ms timer on the GUI thread measures the event loop's longest stall. Per size:

- shown_ms: from the open request until every row meeting the viewport is rendered and the
  event loop is free again (the store read on its thread included);
- read_ms: of which the store thread's read, until the rows reach the GUI thread;
- longest_stall_ms: the longest gap of the 1 ms timer from the request until one second later
  (any rendering left to the background happens in that second);
- jump_ms, jump_stall_ms: opening it again scrolled to its first message (a search hit far up);
- scroll_stall_ms: paging up from the bottom, one page per 16 ms frame, through up to 1,000 messages;
- stream_flush_cpu_ms: then the median GUI-thread CPU time of one streamed flush into a new
  answer at the end (streaming into message N should cost what it costs into message 1);
- *_cpu_ms: the GUI thread's CPU time in that longest gap, which other processes on a busy
  machine do not inflate; load_average: the machine's, as the run ended.

    QT_QPA_PLATFORM=offscreen python benchmarks/open_bench.py [--sizes 100 1000 5000] [--json]

With --json the last line is {"sizes": [{"messages": N, "shown_ms": ..., "longest_stall_ms": ...}, ...]}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SETTLE_S = 1.0
FRAME_MS = 16
SCROLL_MESSAGES = 1000
STREAM_FLUSHES = 200


def message_text(i: int) -> tuple[str, str]:
    """The i-th message: its role and short markdown with one code block."""
    if i % 2 == 0:
        return (
            "user",
            f"Question {i}: how do I test whether `n` is prime?\n\n```python\nis_prime({i})\n```",
        )
    return "assistant", (
        f"Answer {i}: try every **odd** divisor up to the square root.\n\n"
        "```python\ndef is_prime(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n```\n\n"
        "- it is `O(sqrt(n))`\n- fine for small numbers"
    )


def make_history(path: Path, n: int) -> None:
    from prefill.store import ArchivedConversation, ArchivedMessage, HistoryStore

    now = time.time()
    messages = tuple(ArchivedMessage(*message_text(i), created_at=now + i) for i in range(n))
    with HistoryStore(path) as history:
        history.import_conversations(
            [ArchivedConversation(f"bench-{n}", f"{n} messages", now, now + n, messages=messages)]
        )


class Ticker:
    """A 1 ms timer on the GUI thread, noting the wall clock and the thread's CPU clock per tick."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.ticks: list[tuple[float, float]] = []
        self.timer = QTimer()
        self.timer.setInterval(1)
        self.timer.timeout.connect(
            lambda: self.ticks.append((time.perf_counter(), time.thread_time()))
        )
        self.timer.start()

    def longest(self, since: float, until: float) -> float:
        """The longest gap between ticks in [since, until], in ms of wall clock."""
        ts = [since] + [t for t, _ in self.ticks if since < t <= until] + [until]
        return max(b - a for a, b in pairwise(ts)) * 1000

    def longest_cpu(self, since: float, until: float) -> float:
        """The most GUI-thread CPU time spent between two ticks, in ms: the stall without the
        time other processes took the CPU (on a shared machine the wall figure includes that)."""
        cs = [c for t, c in self.ticks if since < t <= until]
        return max((b - a for a, b in pairwise(cs)), default=0.0) * 1000


def run_until(app: Any, done: Callable[[], bool], timeout_s: float = 120.0) -> None:
    """Run the event loop until `done()`; it sleeps between events, as the app's own loop does
    (spinning would hold the GIL against the store thread)."""
    from PySide6.QtCore import QEventLoop, QTimer

    wake = QTimer()  # so that a wait for "more events" never outlasts the check by much
    wake.start(5)
    end = time.perf_counter() + timeout_s
    while not done():
        if time.perf_counter() > end:
            raise SystemExit("timed out")
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    wake.stop()


def settle(app: Any, seconds: float) -> None:
    end = time.perf_counter() + seconds
    run_until(app, lambda: time.perf_counter() >= end)


def open_and_time(
    app: Any, w: Any, cid: int, ticker: Ticker, message_id: int = -1
) -> dict[str, float]:
    """Open `cid` (scrolled to `message_id` if >= 0) and time it: see the module's docstring."""
    from PySide6.QtCore import QTimer

    read: list[float] = []
    shown: list[float] = []
    complete = getattr(w.chat_view, "screen_complete", lambda: True)  # the eager view: at once

    def on_reset() -> None:  # the rows are back from the store thread
        read.append(time.perf_counter())

    def on_opened(_cid: int) -> None:  # queued behind what opening posted (layout, paint)
        QTimer.singleShot(0, check)

    def check() -> None:  # the lazy view renders the screen in slices: until they are done
        if complete():
            shown.append(time.perf_counter())
        else:
            QTimer.singleShot(0, check)

    w.transcript.modelAboutToBeReset.connect(on_reset)
    w.controller.conversation_opened.connect(on_opened)
    t0 = time.perf_counter()
    if message_id >= 0:
        w.controller.open_conversation(cid, message_id)
    else:
        w.controller.open_conversation(cid)
    run_until(app, lambda: bool(shown))
    w.controller.conversation_opened.disconnect(on_opened)
    w.transcript.modelAboutToBeReset.disconnect(on_reset)
    settle(app, SETTLE_S)
    end = time.perf_counter()
    return {
        "shown_ms": (shown[0] - t0) * 1000,
        "read_ms": (read[0] - t0) * 1000,
        "longest_stall_ms": ticker.longest(t0, end),
        "longest_stall_cpu_ms": ticker.longest_cpu(t0, end),
    }


def stream_flush_ms(app: Any, w: Any) -> float:
    """Median GUI cost of one streamed flush into a new last answer, what it posts included."""
    from prefill.ui.chat.transcript.transcript_model import Row

    bar = w.chat_view.verticalScrollBar()
    bar.setValue(bar.maximum())
    row = w.transcript.append_row(Row("assistant", [], streaming=True))
    settle(app, 0.3)
    costs = []
    for i in range(STREAM_FLUSHES):
        t = time.thread_time()
        w.transcript.append_text(row, f"word {i} " * 3 + ("\n\n" if i % 10 == 9 else ""))
        app.sendPostedEvents()  # the layout request the new text posts is part of the flush
        costs.append(time.thread_time() - t)
        app.processEvents()
    return statistics.median(costs) * 1000


def scroll_up(app: Any, w: Any, ticker: Ticker, n: int) -> tuple[float, float]:
    """Page up from the bottom, one page a frame, through up to SCROLL_MESSAGES messages."""
    from PySide6.QtCore import QTimer

    bar = w.chat_view.verticalScrollBar()
    bar.setValue(bar.maximum())
    settle(app, 0.3)
    share = min(1.0, SCROLL_MESSAGES / n)  # of the scroll range (estimated heights: roughly)
    stop_at = bar.maximum() * (1 - share)
    frames = QTimer()
    frames.setInterval(FRAME_MS)
    frames.timeout.connect(lambda: bar.setValue(bar.value() - bar.pageStep()))
    t0 = time.perf_counter()
    frames.start()
    run_until(app, lambda: bar.value() <= stop_at)
    frames.stop()
    settle(app, 0.2)
    end = time.perf_counter()
    return ticker.longest(t0, end), ticker.longest_cpu(t0, end)


def one_size(app: Any, n: int) -> dict[str, Any]:
    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.main_window import MainWindow
    from prefill.ui.workers.engine_worker import EngineThread
    from prefill.ui.workers.store_worker import StoreProxy, Stores

    with tempfile.TemporaryDirectory() as tmp:
        make_history(Path(tmp) / "history.sqlite3", n)
        settings_file = SettingsFile(Path(tmp) / "settings.json")
        store = StoreProxy(Stores(HistoryStore(Path(tmp) / "history.sqlite3"), settings_file))
        engine = EngineThread()
        w = MainWindow(settings_file.load(), store, engine, None)
        w.resize(1280, 800)
        w.show()
        w.stack.setCurrentWidget(w.chat_view)  # as once a model is loaded
        ids: list[Any] = []
        store.list_conversations(
            then=lambda convs: store.read_messages(
                convs[0].id, then=lambda read: ids.append((read.conversation.id, read.messages[0].id))
            )
        )
        run_until(app, lambda: bool(ids))
        cid, first_id = ids[0]
        settle(app, 0.5)
        ticker = Ticker()
        opened = open_and_time(app, w, cid, ticker)
        result: dict[str, Any] = {"messages": n} | {k: round(v, 1) for k, v in opened.items()}
        if hasattr(w.chat_view, "scroll_to_row"):  # the lazy view: open again at the first message
            jump = open_and_time(app, w, cid, ticker, first_id)
            result["jump_ms"] = round(jump["shown_ms"], 1)
            result["jump_stall_ms"] = round(jump["longest_stall_ms"], 1)
            result["jump_shows_first"] = w.chat_view.row_at_top() == 0
        scroll_stall, scroll_cpu = scroll_up(app, w, ticker, n)
        result["scroll_stall_ms"], result["scroll_stall_cpu_ms"] = (
            round(scroll_stall, 1),
            round(scroll_cpu, 1),
        )
        result["stream_flush_cpu_ms"] = round(stream_flush_ms(app, w), 3)
        result["load_average"] = round(os.getloadavg()[0], 1)
        ticker.timer.stop()
        w.close()
        engine.stop()
        store.stop()
        w.deleteLater()
        settle(app, 0.2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    ap.add_argument("--json", action="store_true", help="end with one JSON line of every size")
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from prefill.ui.markdown.rich_text import warm_up

    sys.setswitchinterval(0.001)  # as the app sets it
    app = QApplication(sys.argv[:1])
    warm_up()  # as the app does on a background thread at start-up
    sizes = []
    for n in args.sizes:
        r = one_size(app, n)
        sizes.append(r)
        if not args.json:
            print(json.dumps(r), flush=True)
    if args.json:
        print(json.dumps({"sizes": sizes}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
