"""A screenshot of citations in the window under Xvfb: an answer that cites the documents of its chat,
its marks as links (one pointing at no source left as text), the sources listed under it, and the
passage of [1] open with the sentence the answer relied on highlighted (citations.png).

The chat is written into the history first, with the sources its answer cites (as the window keeps them
when a turn ends), and its files into the throw-away folder, so "Open file" shows; the bundled SmolLM2 is
loaded so that the window looks as it does in use (it writes nothing here). Needs Xvfb.

    python scripts/screenshot_citations.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTION = "What does the inspection say about the north bridge, and when is the work?"
ANSWER = (
    "The north bridge needs its expansion joints replaced before winter [1]. Inspectors found corrosion "
    "on 14 % of the deck's steel beams, mostly near the drains [1][2].\n\n"
    "The city plans to close one lane during the work, from March to May [3]. The documents give no cost "
    "estimate [4]."
)
FILES = {
    "bridge-inspection-2025.pdf": (12, (
        "Section 4.2, north bridge. The expansion joints at both abutments are worn past their service limit "
        "and must be replaced before winter. Inspectors found corrosion on 14 % of the deck's steel beams, "
        "most of it within two metres of the drains. The bearings and the parapets are in fair condition. "
        "A follow-up inspection is due in eighteen months.")),
    "drainage-notes.md": (None, (
        "Drains on the north bridge clog every autumn; standing water near the drains is the likeliest cause "
        "of the corrosion on the deck's steel beams. Clearing them twice a year is recommended.")),
    "council-minutes-march.docx": (None, (
        "Item 7. The council approved the joint replacement on the north bridge. One lane will be closed "
        "during the work, from March to May; buses keep their route.")),
}


def main() -> int:
    return main_for(__file__, lambda home: [str(write_files(home / "documents"))])


def write_files(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (_page, text) in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def inside(out: Path, folder: Path) -> int:
    from PySide6.QtCore import QTimer

    from prefill.session.documents import DocumentSource
    from prefill.store import HistoryStore
    from prefill.ui.chat.sources.cited import SOURCES_KEY, sources_figure

    sources = [DocumentSource(name, str(folder / name), text, n, str(folder / name), page, 0.8)
               for n, (name, (page, text)) in enumerate(FILES.items(), start=1)]
    with HistoryStore() as history:
        chat = history.create_conversation()
        history.add_message(chat.id, "user", QUESTION)
        answer = history.begin_answer(chat.id)
        figures = {"completion_tokens": 61, "ttft_ms": 212.0, "decode_tps": 38.4,
                   SOURCES_KEY: sources_figure(sources, ANSWER)}
        history.finish_answer(answer, ANSWER, "stop", figures)

    shots = Shots(out, lambda s: s, None)
    w, c = shots.window, shots.window.controller

    def opened(_cid: int) -> None:
        QTimer.singleShot(800, show_passage)

    def show_passage() -> None:
        rows = w.transcript.rows()
        row = max(i for i, r in enumerate(rows) if r.role == "assistant")
        widget = w.chat_view.live_widget(row)
        if widget is None or widget.body.rendering:
            QTimer.singleShot(200, show_passage)
            return
        view = widget.open_source(1)
        if view is not None:  # low on the right: the answer and its sources stay in sight
            view.resize(660, 340)  # the passage is short: no empty page under it
            g = w.frameGeometry()
            view.move(g.x() + g.width() - view.width() - 30, g.y() + g.height() - view.height() - 30)
        QTimer.singleShot(700, lambda: (shots.shoot("citations.png"), shots.app.quit()))

    c.conversation_opened.connect(opened)
    w.model_loaded.connect(lambda _m: QTimer.singleShot(300, lambda: c.open_conversation(chat.id)))
    QTimer.singleShot(300, lambda: w.load_model(str(bundled_model())))
    shots.run(120_000)
    return 0 if shots.saved else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), Path(sys.argv[3])))
    raise SystemExit(main())
