"""Screenshots of the layout under Xvfb: a chat with a system prompt and a code block whose longest line
is wider than the pane (it scrolls in its own block), the chat list grouped by date, light and dark, at
1400×900 and 900×600 (where nothing may be cut off).

Chats are written into the throw-away history at fixed ages (now, two hours ago, yesterday, four days
and three weeks ago), the bundled SmolLM2 is loaded, the newest chat opened. Saves, under <out>:
layout-light-1400.png, layout-dark-1400.png, layout-light-900.png, layout-dark-900.png (the window only),
then the sheets over the window at 1400×900: sheet-rename.png (renaming the chat, light) and
sheet-system-prompt-light.png, sheet-system-prompt-dark.png (its system prompt).

    python scripts/screenshot_layout.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

HOUR, DAY = 3600.0, 86400.0
SYSTEM = "You are a careful Python tutor. Answer briefly, show code, and explain each step in plain words."
QUESTION = "How do I read a CSV file and sum one column?"
ANSWER = (
    "Use the `csv` module from the standard library:\n\n"
    "```python\n"
    "import csv\n\n"
    "def column_total(path: str, column: str) -> float:\n"
    "    with open(path, newline=\"\") as f:\n"
    "        return sum(float(row[column]) for row in csv.DictReader(f) if row[column].strip())  "
    "# skips empty cells, so a half-filled spreadsheet export still adds up\n"
    "```\n\n"
    "`csv.DictReader` reads each line into a dictionary keyed by the header, so `row[column]` is the "
    "cell under that heading."
)
OLDER = [("Packing list for a weekend hike", 2 * HOUR), ("Regex for dates", 1 * DAY + HOUR),
         ("Explain KV caches", 4 * DAY), ("Haiku about autumn", 21 * DAY)]


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QDialog

    from prefill.store import HistoryStore
    from prefill.store.app_settings import Settings
    from prefill.ui.widgets.theme import apply_theme

    model = bundled_model()

    def steady(s: Settings) -> Settings:
        return s.with_values({"sampling.temperature": 0.0, "model.n_ctx": 4096, "model.n_gpu_layers": "none",
                              "model.n_threads": 1})

    shots = Shots(out, steady, None)
    w, app = shots.window, shots.app
    now = time.time()

    def seed() -> int:
        """Write the chats through a second connection to the throw-away history (the store thread's
        own sees them: SQLite), so that no clock of the window's store is touched."""
        with HistoryStore() as history:
            return seed_into(history)

    def seed_into(history: HistoryStore) -> int:
        for title, age in OLDER:
            history._clock = lambda age=age: now - age  # the chat's age, for its date group
            c = history.create_conversation(title)
            history.add_message(c.id, "user", title)
        history._clock = time.time
        chat = history.create_conversation("Sum a CSV column", SYSTEM)
        history.add_message(chat.id, "user", QUESTION)
        history.add_message(chat.id, "assistant", ANSWER, finish_reason="stop")
        return chat.id

    def shoot_window(name: str) -> None:
        shots.shoot(name, window_only=True)

    def at(width: int, height: int, theme: str, name: str, then: object) -> None:
        w.set_theme(apply_theme(app, theme))
        w.resize(width, height)
        QTimer.singleShot(500, lambda: (shoot_window(name), then()))  # type: ignore[operator]

    def shots_in_turn() -> None:
        w.move(0, 0)
        at(1400, 900, "light", "layout-light-1400.png",
           lambda: at(1400, 900, "dark", "layout-dark-1400.png",
                      lambda: at(900, 600, "light", "layout-light-900.png",
                                 lambda: at(900, 600, "dark", "layout-dark-900.png", sheets))))

    def sheet_shot(theme: str, name: str, open_sheet: Callable[[], QDialog], then: Callable[[], None]) -> None:
        w.set_theme(apply_theme(app, theme))
        w.resize(1400, 900)

        def shoot_it() -> None:
            sheet = open_sheet()
            QTimer.singleShot(500, lambda: (shots.shoot(name), sheet.reject(), then()))

        QTimer.singleShot(300, shoot_it)

    def rename() -> QDialog:
        w.conversations.rename_button.click()
        assert w.conversations.rename_sheet is not None
        return w.conversations.rename_sheet

    def system_prompt() -> QDialog:
        w.system_action.trigger()
        assert w.system_sheet is not None
        return w.system_sheet

    def sheets() -> None:
        sheet_shot("light", "sheet-rename.png", rename,
                   lambda: sheet_shot("light", "sheet-system-prompt-light.png", system_prompt,
                                      lambda: sheet_shot("dark", "sheet-system-prompt-dark.png", system_prompt,
                                                         lambda: QTimer.singleShot(100, app.quit))))

    def open_chat(cid: int) -> None:
        w.controller.conversation_opened.connect(lambda _c: QTimer.singleShot(300, shots_in_turn))
        w.controller.open_conversation(cid)

    w.model_loaded.connect(lambda _m: open_chat(seed()))
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(120_000)
    return 0 if len(shots.saved) == 7 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
