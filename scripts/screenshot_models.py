"""Screenshots of the Models tab and the model finder, under Xvfb.

A hub stand-in on 127.0.0.1 (tests/hub/fake_hub.py, HF_ENDPOINT pointed at it) serves a few
repositories: one of tiny GGUF files with a README written like a real card (front matter, a table,
code, an HTML image tag), one with a bigger file to download, and others that only show up as search
results with their download counts, likes, dates and sizes. One file is already in the models folder,
so its row says Downloaded. For each theme and size the window searches, opens the first card and waits
for the model card and every fit badge:

- models-{light,dark}-{1400,900}.png: Discover, the cards beside the details pane
  (models-card.png is the light one at 1400×900, the name the docs use);
- models-serve-{light,dark}-900.png: Discover at 900×600 with the Serve panel open below the page;
- models-card-code-{light,dark}.png (1400): the details pane with the card scrolled to its code block,
  whose Copy was just pressed (a check and "Copied");
- models-downloads-{theme}-{size}.png: a download whose hub went silent mid-file (its bytes, how long);
- models-library-{theme}-{size}.png: On this machine, Load and Import in view;
- picker.png (light, 1400): the model finder (Ctrl+K) with the bundled model loaded (resident).

    python scripts/screenshot_models.py [--out packaging/screenshots]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, under_xvfb  # noqa: E402

REPO = "bartowski/Tiny-Chat-1B-Instruct-GGUF"
BIG_REPO = "example/Tiny-Chat-1B-Instruct-v2-GGUF"
BIG = "Tiny-Chat-1B-Instruct-v2-Q8_0.gguf"
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
    args = ap.parse_args()
    status = 0
    for theme, width in (("light", 1400), ("dark", 1400), ("light", 900), ("dark", 900)):
        status |= under_xvfb(__file__, args.out, lambda _home, t=theme, w=width: [t, str(w)])
    shutil.copyfile(args.out / "models-light-1400.png", args.out / "models-card.png")
    return status


def inside(out: Path, theme: str, width: int) -> int:
    import tempfile
    from datetime import UTC, datetime, timedelta

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.hub.bundled import bundled_model_path
    from prefill.store.app_settings import Settings
    from prefill.ui.models import repo_files
    from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo
    from tests.hub.gguf_factory import write_tiny_gguf

    work = Path(tempfile.mkdtemp(prefix="prefill-models-shot-"))
    names = ("Tiny-Chat-1B-Instruct-Q4_K_M.gguf", "Tiny-Chat-1B-Instruct-Q5_K_M.gguf",
             "Tiny-Chat-1B-Instruct-Q8_0.gguf", "Tiny-Chat-1B-Instruct-f16.gguf")
    files = {n: FakeFile(write_tiny_gguf(work / "src" / n, name=n).read_bytes()) for n in names}
    files["README.md"] = FakeFile(README)
    big = FakeFile(write_tiny_gguf(work / "src" / BIG, name="v2", n_embd=256, n_vocab=4096).read_bytes())
    now = datetime.now(UTC)

    def ago(days: int) -> str:
        return (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    hub = FakeHub()
    hub.add(FakeRepo(REPO, files, downloads=948_210, likes=312, last_modified=ago(3), params=1_100_048_384))
    hub.add(FakeRepo("lmstudio-community/Qwen2.5-7B-Instruct-GGUF", {"q-Q4_K_M.gguf": FakeFile(b"x")},
                     downloads=1_912_400, likes=1_250, last_modified=ago(12), params=7_615_616_512))
    hub.add(FakeRepo("bartowski/Mistral-Nemo-Instruct-2407-GGUF", {"m-Q4_K_M.gguf": FakeFile(b"x")},
                     downloads=640_118, likes=430, last_modified=ago(40), params=12_247_782_400))
    hub.add(FakeRepo("unsloth/Llama-3.3-70B-Instruct-GGUF", {"l-Q4_K_M.gguf": FakeFile(b"x")},
                     downloads=420_551, likes=880, last_modified=ago(95), params=70_553_706_496))
    hub.add(FakeRepo(BIG_REPO, {BIG: big}, downloads=1_204, likes=9, last_modified="2024-05-01T00:00:00.000Z",
                     params=1_100_048_384))
    hub.start()
    os.environ.update(HF_ENDPOINT=hub.url, NO_PROXY="127.0.0.1,localhost", HF_HUB_DISABLE_XET="1")
    models = work / "models"
    have = models / REPO / names[0]  # already downloaded: its row says so
    have.parent.mkdir(parents=True)
    have.write_bytes(files[names[0]].data or b"")
    for extra in ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Qwen2.5-Coder-1.5B-Instruct-Q8_0.gguf"):
        write_tiny_gguf(models / "local" / extra, name=extra)

    def adjust(s: Settings) -> Settings:
        return s.with_values({"ui.models_dir": str(models), "model.n_ctx": 4096})

    first = theme == "light" and width == 1400
    bundled = bundled_model_path()
    shots = Shots(out, adjust, bundled, theme)
    w, app = shots.window, shots.app
    if width == 900:
        w.resize(900, 600)
    size = f"{theme}-{width}"

    def shoot(name: str) -> None:
        shots.shoot(name, window_only=width == 900)

    def later(ms: int, then) -> None:  # noqa: ANN001 - a callable
        QTimer.singleShot(ms, then)

    def wait(cond, then, tries: int = 0) -> None:  # noqa: ANN001 - callables
        if cond() or tries > 150:
            later(400, then)
        else:
            later(100, lambda: wait(cond, then, tries + 1))

    def discover_ready() -> bool:
        page = w.models_page
        if page is None or page.listing is None or len(page.fits) < len(names):
            return False
        marks = [i.text(repo_files.HERE) for i in repo_files.model_items(page.files)]
        return repo_files.DOWNLOADED in marks and "Tiny Chat 1B" in page.card.toPlainText()

    def start() -> None:
        w.open_models()
        page = w.models_page
        assert page is not None
        page.query.setText("Instruct")
        page.search_button.click()
        wait(lambda: page.result_cards.rowCount() > 0, lambda: (page.select_result(REPO),
                                                                wait(discover_ready, discovered)))

    def discovered() -> None:
        shoot(f"models-{size}.png")
        if width == 1400:
            code_copied()
        else:
            w.serve_action.trigger()  # the Server panel opens below the page; the window keeps its size
            w.resize(900, 600)
            later(600, served)
            return
        download_stalled()

    def served() -> None:
        shoot(f"models-serve-{size}.png")
        w.serve_action.trigger()
        later(300, lambda: (w.resize(900, 600), later(300, download_stalled)))  # back to 900×600 once it is shut

    def download_stalled() -> None:
        page = w.models_page
        hub.stall(BIG, len(big.data or b"") // 2)
        page.open_repository(BIG_REPO, select=BIG)
        wait(lambda: page.selected_model() is not None and page.download_button.isEnabled(),
             lambda: (page.download_button.click(), wait(stalled, downloading)))

    def code_copied() -> None:
        card = w.models_page.card
        layout = card.document().documentLayout()
        card.verticalScrollBar().setValue(int(layout.blockBoundingRect(card._labels[0]).top()) - 120)
        card.copy_buttons[0].click()
        app.processEvents()
        name = f"models-card-code-{theme}.png"
        w.models_page.details.grab().save(str(out / name))
        shots.saved.append(name)
        print(f"saved {out / name}", flush=True)
        card.verticalScrollBar().setValue(0)

    def stalled() -> bool:
        rows = list(w.models_page.queue.rows.values())
        return bool(rows) and "no data from the hub for 3" in rows[0].words.text()

    def downloading() -> None:
        page = w.models_page
        page.show_section("downloads")
        later(300, lambda: (shoot(f"models-downloads-{size}.png"), library()))

    def library() -> None:
        page = w.models_page
        hub.release()
        page.show_section("library")
        wait(lambda: len(page.library_panel.models) >= 3,
             lambda: (page.library_panel.select_row(0), later(300, lambda: (shoot(f"models-library-{size}.png"),
                                                                            finder() if first else app.quit()))))

    def finder() -> None:
        w.tabs.show_chat()
        if bundled is None:
            app.quit()
            return
        w.model_loaded.connect(lambda _m: later(300, open_finder))
        w.load_model(str(bundled))

    def open_finder() -> None:
        f = w.model_finder
        f.open_finder()
        wait(lambda: all(p in f.measured for p in w.picker.listed()),
             lambda: (shots.shoot("picker.png"), app.quit()))

    later(300, start)
    shots.run(90_000)
    hub.release()
    hub.stop()
    QApplication.processEvents()
    shutil.rmtree(work, ignore_errors=True)
    return 0 if shots.saved else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
    raise SystemExit(main())
