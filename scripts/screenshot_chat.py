"""Screenshots of the chat under Xvfb: the centred column, a question's bubble, an answer as plain text
with a numbered list whose first item holds a paragraph, a bulleted list, a code block with its header
(language and Copy) and a line that scrolls in its block, the footer's figures; light and dark, at
1400×900 and 900×600; and one code block close up, its Copy just pressed ("Copied").

The chat is written into the throw-away history, the bundled SmolLM2 is loaded, the chat opened.
Saves, under <out>: chat-light-1400.png, chat-dark-1400.png, chat-light-900.png, chat-dark-900.png and
code-block.png (the code block and the text around it, light). Each is the window's own rendering, so
another window on the display cannot cover it. The script runs on its own display (xvfb-run -a):

    xvfb-run -a -s "-screen 0 1400x900x24" python scripts/screenshot_chat.py --inside packaging/screenshots
or
    python scripts/screenshot_chat.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

SYSTEM = "You are a careful Python tutor. Answer briefly, show code, and explain each step in plain words."
QUESTION = "How do I read a CSV file and sum one column?"
ANSWER = (
    "Use the `csv` module from the standard library. Three steps:\n\n"
    "1. **Open the file** with `newline=\"\"`.\n\n"
    "   The csv module handles the line endings itself, so the file must not translate them.\n\n"
    "2. **Read the rows** with `csv.DictReader`, keyed by the header.\n"
    "3. **Add up** the cells of the column, skipping the empty ones.\n\n"
    "```python\n"
    "import csv\n\n"
    "def column_total(path: str, column: str) -> float:\n"
    "    with open(path, newline=\"\") as f:\n"
    "        return sum(float(row[column]) for row in csv.DictReader(f) if row[column].strip())  "
    "# skips empty cells, so a half-filled spreadsheet export still adds up\n"
    "```\n\n"
    "What to watch for:\n\n"
    "- A cell with a comma as the decimal mark (`3,5`) needs `.replace(\",\", \".\")` first.\n"
    "- A column name that is not in the header raises `KeyError`."
)
FIGURES = {"completion_tokens": 187, "ttft_ms": 213.0, "decode_tps": 70.4, "prompt_tokens": 64}
FOLLOW_UP = "Can it skip the rows whose value is not a number?"


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QPoint, QRect, QTimer
    from PySide6.QtGui import QPixmap

    from prefill.store import HistoryStore
    from prefill.store.app_settings import Settings
    from prefill.ui.widgets.theme import apply_theme

    model = bundled_model()

    def steady(s: Settings) -> Settings:
        return s.with_values({"sampling.temperature": 0.0, "model.n_ctx": 4096, "model.n_gpu_layers": "none",
                              "model.n_threads": 1})

    shots = Shots(out, steady, None)
    w, app = shots.window, shots.app

    def seed() -> int:
        with HistoryStore() as history:
            chat = history.create_conversation("Sum a CSV column", SYSTEM)
            history.add_message(chat.id, "user", QUESTION)
            history.add_message(chat.id, "assistant", ANSWER, finish_reason="stop", figures=FIGURES)
            history.add_message(chat.id, "user", FOLLOW_UP)
            return chat.id

    def theme(name: str) -> None:
        w.set_theme(apply_theme(app, name))

    def save(image: QPixmap, name: str) -> None:
        """The window's own rendering (not the screen's: another window on the display cannot cover it)."""
        image.save(str(out / name))
        shots.saved.append(name)
        print(f"saved {out / name}", flush=True)

    def at(width: int, height: int, name: str, row: int, shot: str, then: object) -> None:
        theme(name)
        w.resize(width, height)
        QTimer.singleShot(200, lambda: w.chat_view.scroll_to_row(row))
        QTimer.singleShot(700, lambda: (save(w.grab(), shot), then()))  # type: ignore[operator]

    def code_close_up() -> None:
        theme("light")
        w.resize(1400, 900)

        def shoot() -> None:
            answer = w.chat_view.live_widget(1)
            code = answer.body.code_segments()[0] if answer is not None else None
            if code is None:
                print("no code block to shoot", file=sys.stderr)
                app.quit()
                return
            code.header.copy.click()  # "Copied", as a person sees it right after pressing it
            app.processEvents()
            view = w.chat_view.viewport()
            top_left = code.mapTo(view, QPoint(0, 0))
            area = QRect(top_left.x() - 24, top_left.y() - 40, code.width() + 48, code.height() + 80)
            save(view.grab(area.intersected(view.rect())), "code-block.png")
            QTimer.singleShot(100, app.quit)

        QTimer.singleShot(200, lambda: w.chat_view.scroll_to_row(1))
        QTimer.singleShot(700, shoot)

    def shots_in_turn() -> None:
        w.move(0, 0)
        at(1400, 900, "light", 0, "chat-light-1400.png",
           lambda: at(1400, 900, "dark", 0, "chat-dark-1400.png",
                      lambda: at(900, 600, "light", 1, "chat-light-900.png",
                                 lambda: at(900, 600, "dark", 1, "chat-dark-900.png", code_close_up))))

    def open_chat(cid: int) -> None:
        w.controller.conversation_opened.connect(lambda _c: QTimer.singleShot(300, shots_in_turn))
        w.controller.open_conversation(cid)

    w.model_loaded.connect(lambda _m: open_chat(seed()))
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(120_000)
    return 0 if len(shots.saved) == 5 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
