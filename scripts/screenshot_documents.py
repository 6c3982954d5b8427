"""Screenshots of documents in the chat under Xvfb: a folder being indexed, its progress bar half way
(documents-indexing.png); a collection's view with its size, files (one not readable, said why) and
embedding model (documents-collection.png); and a chat with the folder attached, its chip over the
message box, an answer from the passages found and the sidebar's Documents figures (documents-chat.png).

The documents are written here (a small island guide: Markdown, text, CSV, a PDF, and a file of binary
junk); the embedding model is the bundled all-MiniLM-L6-v2, the chat model the bundled SmolLM2-135M,
greedy, so the pictures are the same on every run. Indexing is held once, half way, for the first
picture. `--small` takes the same three in the dark theme with the window at 900x600 (the names end in
-dark-900.png). Needs Xvfb.

    python scripts/screenshot_documents.py [--out packaging/screenshots] [--small]
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTION = "Who keeps the lighthouse on Varnholm?"
PLACES = ["harbour", "lighthouse", "bakery", "school", "museum", "ferry", "church", "market", "mill", "beach"]
FACTS = {
    "lighthouse": "The lighthouse keeper of Varnholm is Ingrid Sol, who has kept the lamp for thirty years.",
    "ferry": "The ferry to Osterby leaves at seven in the morning and comes back at noon.",
    "bakery": "The bakery on Harbour Street sells rye bread on Tuesdays only.",
}
FILLER = ("Varnholm has rocky shores, small fishing boats, wooden houses painted red and yellow, sheep on the "
          "hills and a narrow road that winds between its two villages. ")


def main() -> int:
    small = "--small" in sys.argv
    if small:
        sys.argv.remove("--small")
    return main_for(__file__, lambda home: [*prepare(home), "small" if small else "large"])


def prepare(home: Path) -> list[str]:
    """The island guide: a folder of documents of several kinds, one of them junk."""
    from tests.documents.pdf_writer import write_pdf

    folder = home / "Varnholm guide"
    folder.mkdir(parents=True)
    for i, place in enumerate(PLACES):
        fact = FACTS.get(place, f"The {place} of Varnholm is open from May to September.")
        text = f"# The {place}\n\n{FILLER * 6}\n\n## Worth knowing\n\n{fact}\n\n{FILLER * 6}\n"
        (folder / f"{i + 1:02d} {place}.md").write_text(text)
    (folder / "tides.csv").write_text("day,high,low\nMonday,06:10,12:25\nTuesday,06:55,13:10\n")
    (folder / "notes.txt").write_text("Bring boots. The northern road closes in winter storms.\n")
    write_pdf(folder / "map legend.pdf", [["Map legend: a red dot is a house, a blue line a stream."],
                                          ["Page two: the lighthouse stands on the western cape."]])
    (folder / "scan.txt").write_bytes(b"\x00\x89PNG\x01\x02" * 300)  # binary junk under a text name
    return [str(folder)]


def inside(out: Path, folder: str, look: str = "large") -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.session.document_chats import load_bundled_embedder

    held, go = threading.Event(), threading.Event()

    class HeldOnce:
        """The bundled embedder, held once half way through the folder until its picture is taken."""

        def __init__(self) -> None:
            self.model = load_bundled_embedder()
            self.calls = 0

        @property
        def model_id(self) -> str:
            return self.model.model_id

        @property
        def n_embd(self) -> int:
            return self.model.n_embd

        def count_tokens(self, text: str) -> int:
            return self.model.count_tokens(text)

        def embed(self, texts: list[str]) -> list[list[float]]:
            self.calls += 1
            if self.calls == 6 and not go.is_set():
                held.set()
                go.wait(30)
            return self.model.embed(texts)

    def adjust(s: object) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.0, max_tokens=60),  # type: ignore
                       model=replace(s.model, n_ctx=2048))  # type: ignore

    small = look == "small"
    shots = Shots(out, adjust, None, theme="dark" if small else "light", load_embedder=HeldOnce)
    w = shots.window
    if small:
        w.resize(900, 600)

    def shoot(name: str) -> None:
        shots.shoot(name.replace(".png", "-dark-900.png") if small else name, window_only=small)
    room = w.documents  # its signals come on the GUI thread (the worker's own come from its thread)

    def loaded(_m: object) -> None:
        w.model_loaded.disconnect(loaded)
        room.indexed.connect(indexed)
        w.documents.attach([folder])
        wait_held()

    def wait_held() -> None:
        if not held.is_set():
            QTimer.singleShot(50, wait_held)
            return
        QTimer.singleShot(400, lambda: (shoot("documents-indexing.png"), go.set()))

    def indexed(_done: object) -> None:
        room.indexed.disconnect(indexed)
        w.controller.answer_finished.connect(answered)
        QTimer.singleShot(300, lambda: w.controller.send(QUESTION))

    def answered(_f: object) -> None:
        w.controller.answer_finished.disconnect(answered)
        w.sidebar.scroller.ensureWidgetVisible(w.sidebar.documents_box)
        QTimer.singleShot(600, lambda: (shoot("documents-chat.png"), collection()))

    def collection() -> None:
        dialog = w.documents.open_collections()
        dialog.move(*((48, 40) if small else (220, 160)))
        room.indexed.connect(lambda _d: QTimer.singleShot(800, lambda: (
            dialog.files.scrollToBottom(),  # the file not read, and why, in view
            shoot("documents-collection.png"), shots.app.quit())))
        dialog.make("Varnholm guide", folder)

    w.model_loaded.connect(loaded)
    QTimer.singleShot(300, lambda: w.load_model(str(bundled_model())))
    shots.run(240_000)
    return 0 if len(shots.saved) == 3 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], *sys.argv[4:5]))
    raise SystemExit(main())
