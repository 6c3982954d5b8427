"""Screenshots of the window serving its model, and of a chat served by a remote endpoint, under Xvfb.

serving-window-slot.png: the server panel on, an HTTP client streaming in one slot while the
window's own question streams in another (the slots list names it `window`).
remote-endpoint.png: the window chatting through `prefill serve` (another process) as a remote:
the sidebar's KV cache reads "unknown". Uses the bundled SmolLM2.
With --theme dark: serving-window-slot-dark.png alone, the same moment in the dark theme.

    python scripts/screenshot_serving.py [--out packaging/screenshots] [--theme dark]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, under_xvfb  # noqa: E402

QUESTION = "Write a haiku about the sea."


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    ap.add_argument("--theme", choices=("light", "dark"), default="light")
    args = ap.parse_args()
    return under_xvfb(__file__, args.out, lambda _home: [args.theme])


def client_stream(url: str, started: threading.Event) -> None:
    """An OpenAI client keeping one slot busy (until the window's answer is done)."""
    from openai import OpenAI

    client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    stream = client.chat.completions.create(
        model=client.models.list().data[0].id, stream=True, max_tokens=600, extra_body={"ignore_eos": True},
        messages=[{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}])
    for _ in stream:
        started.set()


def inside(out: Path, theme: str = "light") -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.hub.bundled import bundled_model_path
    from prefill.store.endpoints import SavedEndpoint

    shots = Shots(out, lambda s: replace(s, sampling=replace(s.sampling, max_tokens=120, seed=3)), bundled_model_path(),
                  theme)
    dark = theme == "dark"
    w, shoot = shots.window, shots.shoot
    remote: list[subprocess.Popen[str]] = []

    def on_loaded(m: object) -> None:
        w.model_loaded.disconnect(on_loaded)
        w.serve_action.setChecked(True)
        panel = w.server_dock.widget()  # type: ignore[union-attr]
        panel.controller.started.connect(on_serving)
        panel.port.setValue(0)
        panel.switch.setChecked(True)

    def on_serving(url: str) -> None:
        started = threading.Event()
        threading.Thread(target=client_stream, args=(url, started), daemon=True).start()
        started.wait(60)
        w.input.editor.setPlainText(QUESTION)
        w.input._on_editor_submit()
        QTimer.singleShot(1500, lambda: (shoot("serving-window-slot-dark.png" if dark else "serving-window-slot.png"),
                                         shots.app.quit() if dark else None))
        w.controller.answer_finished.connect(on_served_answer)

    def on_served_answer(_f: object) -> None:
        w.controller.answer_finished.disconnect(on_served_answer)
        proc = subprocess.Popen([sys.executable, "-m", "prefill", "serve", "--model", "bundled", "--port", "0",
                                 "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        remote.append(proc)
        line = proc.stdout.readline()  # type: ignore[union-attr]
        url = line.split(" at ")[1].split()[0].removesuffix("/v1")
        w.model_loaded.connect(on_remote)
        w.load_remote(SavedEndpoint("prefill serve", url))

    def on_remote(_m: object) -> None:
        w.controller.new_conversation(then=lambda _cid: w.controller.send("What is a lighthouse?"))
        w.controller.answer_finished.connect(lambda _f: QTimer.singleShot(300, lambda: (
            shoot("remote-endpoint.png"), shots.app.quit())))

    w.model_loaded.connect(on_loaded)
    QTimer.singleShot(500, lambda: w.load_model(str(bundled_model_path())))
    shots.run(180_000)
    for proc in remote:
        proc.terminate()
        proc.wait()
    return 0 if len(shots.saved) == (1 if dark else 2) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), *sys.argv[3:4]))
    raise SystemExit(main())
