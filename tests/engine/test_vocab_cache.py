"""A test run reads llama.cpp's tokenizers from the cache `make vocab` fills (scripts/test_vocabs.py) and
never downloads them: without them a test fails saying which target fetches them, or skips where that
fetch found no registry (never in CI)."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from scripts.test_vocabs import folder, unreachable_note
from tests.engine.vocab_models import vocab_dir


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PREFILL_TEST_CACHE", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    return tmp_path


def test_the_fetched_folder_is_read(cache: Path) -> None:
    out = folder(version("llama_cpp_python"))
    out.mkdir()
    (out / "ggml-vocab-qwen2.gguf").write_bytes(b"GGUF")
    assert vocab_dir() == out == cache / f"llama-vocab-{version('llama_cpp_python')}"


def test_without_them_the_test_fails_naming_the_make_target(cache: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"`make vocab` fetches them"):
        vocab_dir()
    assert list(cache.iterdir()) == []  # nothing fetched


def test_an_unreachable_registry_skips_except_in_ci(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unreachable_note(version("llama_cpp_python")).write_text("cannot fetch: no network")
    with pytest.raises(pytest.skip.Exception, match="no network"):
        vocab_dir()
    monkeypatch.setenv("CI", "1")
    with pytest.raises((pytest.fail.Exception, pytest.skip.Exception)) as refused:
        vocab_dir()
    assert refused.type is pytest.fail.Exception and "make vocab" in str(refused.value)
