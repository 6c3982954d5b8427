"""A screenshot of the Models tab with a model card, under Xvfb: models-card.png.

A hub stand-in on 127.0.0.1 (tests/hub/fake_hub.py, HF_ENDPOINT pointed at it) serves a
repository of tiny GGUF files and a README written like a real card (front matter, a
table, code, an HTML image tag). One of its files is already in the models folder, so
its row says Downloaded. The window opens the Models tab, searches, selects the
repository, waits for the card and every fit badge, and shoots the screen. Needs Xvfb.

    python scripts/screenshot_models.py [--out packaging/screenshots] [--theme light|dark]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, under_xvfb  # noqa: E402

REPO = "bartowski/Tiny-Chat-1B-Instruct-GGUF"
README = b"""---
license: apache-2.0
base_model:
- example/Tiny-Chat-1B-Instruct
pipeline_tag: text-generation
tags: [gguf, chat]
---

# Tiny Chat 1B Instruct (GGUF)

<img src="https://example.com/banner.png" width="600"> quantised with llama.cpp b5000.

A small chat model for laptops. **Q4_K_M** is the usual choice; pick *Q8_0* when
memory allows.

| Quant | Size | Notes |
|---|---|---|
| Q4_K_M | 0.8 GB | recommended |
| Q8_0 | 1.3 GB | near lossless |

## Prompt format

```
<|user|>
{prompt}<|end|>
<|assistant|>
```

See the [original model](https://huggingface.co/example/Tiny-Chat-1B-Instruct) for details.
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    ap.add_argument("--theme", default="light", choices=("light", "dark"))
    args = ap.parse_args()
    return under_xvfb(__file__, args.out, lambda _home: [args.theme])


def inside(out: Path, theme: str) -> int:
    import tempfile

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.store.app_settings import Settings
    from prefill.ui.models import repo_files
    from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo
    from tests.hub.gguf_factory import write_tiny_gguf

    work = Path(tempfile.mkdtemp(prefix="prefill-models-shot-"))
    names = ("Tiny-Chat-1B-Instruct-Q4_K_M.gguf", "Tiny-Chat-1B-Instruct-Q5_K_M.gguf",
             "Tiny-Chat-1B-Instruct-Q8_0.gguf", "Tiny-Chat-1B-Instruct-f16.gguf")
    files = {n: FakeFile(write_tiny_gguf(work / "src" / n, name=n).read_bytes()) for n in names}
    files["README.md"] = FakeFile(README)
    hub = FakeHub()
    hub.add(FakeRepo(REPO, files, downloads=48_210, likes=312))
    hub.add(FakeRepo("example/Tiny-Chat-1B-Instruct-v2-GGUF", {names[0]: files[names[0]]}, downloads=1_204, likes=9))
    hub.start()
    os.environ.update(HF_ENDPOINT=hub.url, NO_PROXY="127.0.0.1,localhost", HF_HUB_DISABLE_XET="1")
    models = work / "models"
    have = models / REPO / names[0]  # already downloaded: its row says so
    have.parent.mkdir(parents=True)
    have.write_bytes(files[names[0]].data or b"")

    def adjust(s: Settings) -> Settings:
        return s.with_values({"ui.models_dir": str(models), "model.n_ctx": 4096})

    shots = Shots(out, adjust, None, theme)
    w, app = shots.window, shots.app
    name = "models-card.png" if theme == "light" else "models-card-dark.png"

    def ready() -> bool:
        page = w.models_page
        if page is None or page.listing is None or len(page.fits) < len(names):
            return False
        marks = [i.text(repo_files.HERE) for i in repo_files.model_items(page.files)]
        return repo_files.DOWNLOADED in marks and "Tiny Chat 1B" in page.card.toPlainText()

    def wait(tries: int = 0) -> None:
        if ready() or tries > 100:
            QTimer.singleShot(400, lambda: (shots.shoot(name), app.quit()))
        else:
            QTimer.singleShot(100, lambda: wait(tries + 1))

    def start() -> None:
        w.open_models()
        page = w.models_page
        assert page is not None
        page.query.setText("Tiny-Chat")
        page.search_button.click()

        def pick() -> None:
            if page.results.rowCount() == 0:
                QTimer.singleShot(100, pick)
                return
            page.results.selectRow(0)
            wait()

        pick()

    QTimer.singleShot(300, start)
    shots.run(60_000)
    hub.stop()
    QApplication.processEvents()
    return 0 if shots.saved else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "light"))
    raise SystemExit(main())
