"""The library facade: add, list, search, remove; and an embedding model adapted to the Embedder shape."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prefill.documents.embedding import ModelEmbedder
from prefill.documents.errors import CollectionNotFound
from prefill.documents.library import DocumentLibrary
from tests.documents.embedders import HashEmbedder, count_words


def test_add_list_search_remove(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.md").write_text("# A\n\nThe kettle boils water in two minutes.")
    (d / "b.txt").write_bytes(b"\x00junk")
    lib = DocumentLibrary(tmp_path / "documents.sqlite3")
    report = lib.add("kitchen", [d], HashEmbedder(), count_words)
    assert (report.count("indexed"), report.count("failed")) == (1, 1)
    [c] = lib.collections()
    assert (c.name, c.files, c.failed, c.chunks, c.model_id) == ("kitchen", 2, 1, 1, "test-hash-128")
    assert [(Path(f.path).name, f.state) for f in lib.files("kitchen")] == [("a.md", "indexed"), ("b.txt", "failed")]
    [hit] = lib.search("kitchen", "how long does the kettle take", HashEmbedder(), k=1)
    assert hit.text == "The kettle boils water in two minutes." and hit.heading == "A"
    assert lib.last_times[1] >= 0 and lib.vector_backend in ("numpy", "sqlite-vec")
    lib.remove("kitchen")
    assert lib.collections() == []
    with pytest.raises(CollectionNotFound):
        lib.files("kitchen")
    lib.close()


def test_forget_drops_a_file_or_a_folders_files_and_their_passages(tmp_path: Path) -> None:
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "a.md").write_text("# A\n\nThe kettle boils water.")
    (d / "sub" / "b.md").write_text("# B\n\nThe toaster browns bread.")
    (d / "sub" / "c.md").write_text("# C\n\nThe fridge keeps milk cold.")
    (tmp_path / "d-other.md").write_text("# D\n\nA name that starts like the folder's.")
    lib = DocumentLibrary(tmp_path / "documents.sqlite3")
    lib.add("kitchen", [d, tmp_path / "d-other.md"], HashEmbedder(), count_words)
    assert lib.forget("kitchen", [d / "sub"]) == 2
    assert sorted(Path(f.path).name for f in lib.files("kitchen")) == ["a.md", "d-other.md"]
    assert lib.forget("kitchen", [d / "a.md"]) == 1
    assert [Path(f.path).name for f in lib.files("kitchen")] == ["d-other.md"]
    assert [h.text for h in lib.search("kitchen", "toaster bread", HashEmbedder(), k=5)] == \
        ["A name that starts like the folder's."]
    with pytest.raises(CollectionNotFound):
        lib.forget("pantry", [d])
    lib.close()


class _FakeModel:
    name = "fake.gguf"
    n_embd = 3

    def embed(self, inputs: Sequence[Any], truncate: bool = False, normalize: bool = True) -> Any:
        assert truncate
        return np.array([[1.0, float(len(t)), 0.0] for t in inputs], dtype=np.float32)

    def count_tokens(self, inputs: Sequence[Any]) -> list[int]:
        return [len(t) + 2 for t in inputs]


def test_model_embedder_adapts_an_embedding_model() -> None:
    e = ModelEmbedder(_FakeModel())
    assert (e.model_id, e.n_embd, e.count_tokens("abc")) == ("fake.gguf", 3, 5)
    assert e.embed(["ab", "c"]) == [[1.0, 2.0, 0.0], [1.0, 1.0, 0.0]]
