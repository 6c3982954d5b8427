"""The settings file: lenient load, atomic save."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from prefill.store import Settings, SettingsError, SettingsFile
from prefill.store.settings_file import default_settings_path


@pytest.fixture
def settings_file(tmp_path: Path) -> SettingsFile:
    return SettingsFile(tmp_path / "config" / "settings.json")


def test_default_path_is_in_the_config_folder() -> None:
    assert default_settings_path().name == "settings.json"
    assert "prefill" in default_settings_path().parent.name.lower()


def test_missing_file_gives_defaults(settings_file: SettingsFile) -> None:
    assert settings_file.load() == Settings()
    assert not settings_file.path.exists()


def test_save_then_load_round_trips(settings_file: SettingsFile) -> None:
    saved = Settings().replace("model.n_ctx", 16384).replace("model.last_model_path", "/m/é.gguf")
    settings_file.save(saved)
    assert settings_file.load() == saved
    assert json.loads(settings_file.path.read_text("utf-8"))["model"]["n_ctx"] == 16384


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b"[1, 2]", b""])
def test_corrupt_file_gives_defaults_and_is_kept(
    settings_file: SettingsFile, content: bytes
) -> None:
    settings_file.path.parent.mkdir(parents=True)
    settings_file.path.write_bytes(content)
    assert settings_file.load() == Settings()
    assert settings_file.backup_path.read_bytes() == content
    assert not settings_file.path.exists()


def test_wrong_types_and_unknown_keys(settings_file: SettingsFile) -> None:
    settings_file.path.parent.mkdir(parents=True)
    settings_file.path.write_text(
        json.dumps(
            {
                "model": {"n_ctx": "4k", "flash_attn": "on", "gone": 1},
                "sampling": {"top_k": 20.5, "temperature": 0},
                "extra": [1],
            }
        )
    )
    loaded = settings_file.load()
    assert (loaded.model.n_ctx, loaded.model.flash_attn) == (4096, "on")  # an older file's true
    assert (loaded.sampling.top_k, loaded.sampling.temperature) == (40, 0.0)
    assert not settings_file.backup_path.exists()


def test_save_leaves_no_temporary_files(settings_file: SettingsFile) -> None:
    settings_file.save(Settings())
    settings_file.save(Settings().replace("ui.theme", "dark"))
    assert [p.name for p in settings_file.path.parent.iterdir()] == ["settings.json"]


def test_failed_replace_keeps_the_old_file(
    settings_file: SettingsFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_file.save(Settings().replace("ui.theme", "light"))

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(SettingsError, match="No space left"):
        settings_file.save(Settings().replace("ui.theme", "dark"))
    monkeypatch.undo()
    assert settings_file.load().ui.theme == "light"
    assert [p.name for p in settings_file.path.parent.iterdir()] == ["settings.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_file_is_private(settings_file: SettingsFile) -> None:
    settings_file.save(Settings().replace("hub.hf_token", "hf_x"))
    assert stat.S_IMODE(settings_file.path.stat().st_mode) == 0o600


def test_unreadable_file_raises_a_typed_error(settings_file: SettingsFile) -> None:
    settings_file.path.mkdir(parents=True)  # reading a folder fails, even as root
    with pytest.raises(SettingsError) as info:
        settings_file.load()
    assert info.value.path == settings_file.path
    assert not settings_file.backup_path.exists()


def test_read_says_what_it_repaired(settings_file: SettingsFile) -> None:
    settings_file.path.parent.mkdir(parents=True)
    settings_file.path.write_text(json.dumps(
        {"model": {"kv_type": "q8_0", "flash_attn": "off", "n_ctx": 8192}, "sampling": {"top_p": 0, "min_p": 2}}))
    read = settings_file.read()
    assert [e.key for e in read.repaired] == ["model.kv_type", "sampling.min_p"]
    assert (read.settings.model.kv_type, read.settings.model.n_ctx, read.settings.sampling.top_p) == ("f16", 8192, 0)
    assert not read.set_aside and read.backup is None


@pytest.mark.parametrize(("content", "why"), [
    (b"[" * 100_000, "nested too deeply"),
    (b'{"pad": "' + b"x" * (2 << 20) + b'"}', "larger than"),
])
def test_hostile_files_are_set_aside(settings_file: SettingsFile, content: bytes, why: str) -> None:
    settings_file.path.parent.mkdir(parents=True)
    settings_file.path.write_bytes(content)
    read = settings_file.read()
    assert read.settings == Settings() and why in read.set_aside and read.backup == settings_file.backup_path
    assert settings_file.backup_path.read_bytes() == content


def test_an_older_files_flash_attn_true_or_false_reads_as_on_or_off(settings_file: SettingsFile) -> None:
    """Older versions stored flash attention as true/false: read as "on"/"off", with nothing repaired
    (no notice), for the model section and for a model file's own settings alike."""
    settings_file.path.parent.mkdir(parents=True)
    for old, new in ((True, "on"), (False, "off")):
        settings_file.path.write_text(json.dumps({
            "model": {"flash_attn": old}, "per_model": {"/m/big.gguf": {"flash_attn": not old}}}))
        read = settings_file.read()
        assert not read.repaired and read.settings.model.flash_attn == new
        assert read.settings.per_model["/m/big.gguf"] == {"flash_attn": "off" if old else "on"}
    assert Settings().model.flash_attn == "auto"
