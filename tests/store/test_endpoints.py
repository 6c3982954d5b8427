"""Saved remote endpoints: kept like the hub token (mode 0600, key never shown), checked when read."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from prefill.store.app_settings import HubSettings, Settings
from prefill.store.endpoints import EndpointsFile, SavedEndpoint
from prefill.store.settings_file import SettingsFile

LOCAL = SavedEndpoint("local llama", "http://127.0.0.1:8080", "smollm2", api_key="sk-secret")


def test_endpoints_round_trip_in_a_file_only_the_owner_reads(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = EndpointsFile(tmp_path / "cfg" / "endpoints.json")
    assert f.load() == []
    f.put(LOCAL)
    f.put(SavedEndpoint("other", "https://example.org/v1/"))
    f.put(SavedEndpoint("local llama", LOCAL.url, "other-model", "sk-secret"))  # replaces by name
    assert [e.name for e in f.load()] == ["other", "local llama"]
    assert f.for_url("http://127.0.0.1:8080/").model == "other-model"  # type: ignore[union-attr]
    assert f.for_url("https://example.org/v1").api_key == ""  # type: ignore[union-attr]
    assert stat.S_IMODE(f.path.stat().st_mode) == 0o600
    assert "sk-secret" not in repr(f.load())
    f.remove("other")
    assert [e.name for e in f.load()] == ["local llama"]
    assert "sk-secret" not in caplog.text


def test_bad_entries_are_skipped_and_a_bad_file_reads_as_none(tmp_path: Path) -> None:
    p = tmp_path / "endpoints.json"
    p.write_text(json.dumps({"endpoints": [
        {"name": "ok", "url": "http://h"}, {"name": 3, "url": "http://h"}, "text", {"name": "ok", "url": "http://x"},
        {"name": "no url"},
    ]}))
    assert EndpointsFile(p).load() == [SavedEndpoint("ok", "http://h")]
    for text in ("not json", "[1, 2]", '{"endpoints": 5}'):
        p.write_text(text)
        assert EndpointsFile(p).load() == []


def test_the_settings_file_is_still_written_owner_only(tmp_path: Path) -> None:
    f = SettingsFile(tmp_path / "settings.json")
    f.save(Settings(hub=HubSettings(hf_token="hf_x")))
    assert stat.S_IMODE(f.path.stat().st_mode) == 0o600
    assert f.load().hub.hf_token == "hf_x"
