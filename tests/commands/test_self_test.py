"""`prefill --self-test`'s documents part: the bundled embedding model indexes two small files into a
throwaway index and finds the right one again; it says whether sqlite-vec searched the vectors, and why not
where it did not (a Python built without loadable SQLite extensions, as pyenv builds it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from prefill.commands.self_test import documents_check

pytestmark = pytest.mark.model


def test_the_documents_check_indexes_and_finds_with_the_bundled_model(monkeypatch: pytest.MonkeyPatch,
                                                                      embed_cache_home: Path,
                                                                      minilm_gguf: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(embed_cache_home))  # where minilm_gguf was converted
    report = documents_check()
    assert report["ok"] is True, report
    assert report["embedding_model"] == minilm_gguf.name and report["found"] == "keeper.md"
    assert isinstance(report["passages"], int) and report["passages"] >= 2
    loads = hasattr(sqlite3.connect(":memory:"), "enable_load_extension")
    assert report["vectors"] == ("sqlite-vec" if loads else "numpy")
    assert report["why_numpy"] == ("" if loads else "this Python's sqlite3 was built without loadable extensions")
