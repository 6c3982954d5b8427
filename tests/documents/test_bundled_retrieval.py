"""Retrieval with the bundled embedding model (all-MiniLM-L6-v2 through llama.cpp) on the project's corpus:
the fused search finds at least 9 answers in 10 among its first five passages."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.documents.embedding import ModelEmbedder
from prefill.documents.library import DocumentLibrary
from tests.documents.corpus import write_corpus

pytestmark = pytest.mark.model


def test_fused_recall_at_5_on_the_corpus(tmp_path: Path) -> None:
    bundled = pytest.importorskip("prefill.engine.embed.bundled")
    from prefill.engine.embed.model import EmbeddingModel

    path = bundled.bundled_embed_path()  # converted once into the user's cache, as `--model bundled-embed` does
    if path is None:
        pytest.skip("the bundled embedding model's package is not installed")
    model = EmbeddingModel.load(path)
    try:
        e = ModelEmbedder(model)
        questions = write_corpus(tmp_path / "c")
        lib = DocumentLibrary(tmp_path / "i.sqlite3")
        assert lib.add("c", [tmp_path / "c"], e, e.count_tokens).count("failed") == 0
        hits = 0
        for q in questions:
            found = lib.search("c", q.question, e, k=5, mode="both")
            hits += any(Path(p.file).name == q.file and " ".join(q.passage.split()) in " ".join(p.text.split())
                        for p in found)
        assert hits / len(questions) >= 0.9
    finally:
        model.close()
