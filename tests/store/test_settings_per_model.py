"""Load settings remembered per model file, the model section's values as the defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefill.engine.errors import InvalidSetting
from prefill.engine.settings import LoadSettings
from prefill.store import Settings, SettingsFile

BIG = "/models/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
SMALL = "/models/local/SmolLM2-135M-Instruct.Q4_1.gguf"


def test_a_model_without_its_own_settings_loads_with_the_defaults() -> None:
    s = Settings().replace("model.n_ctx", 8192)
    assert s.load_settings_for(BIG) == s.model.load_settings()
    assert s.load_settings_for(BIG).n_ctx == 8192


def test_overrides_apply_to_their_model_only_and_round_trip(tmp_path: Path) -> None:
    s = Settings().with_model_overrides(BIG, {"n_ctx": 16384, "n_gpu_layers": 20, "flash_attn": "on",
                                              "kv_type": "q8_0"})
    assert s.load_settings_for(BIG) == LoadSettings(n_ctx=16384, n_gpu_layers=20, flash_attn="on", kv_type="q8_0")
    assert s.load_settings_for(SMALL) == Settings().model.load_settings()
    f = SettingsFile(tmp_path / "settings.json")
    f.save(s)
    assert f.load() == s
    stored = json.loads(f.path.read_text("utf-8"))["per_model"]
    assert stored[BIG]["n_ctx"] == 16384 and SMALL not in stored


def test_only_what_differs_is_kept_and_the_defaults_still_reach_the_rest() -> None:
    s = Settings().with_model_overrides(BIG, {"n_ctx": 16384, "n_batch": Settings().model.n_batch})
    assert s.per_model == {BIG: {"n_ctx": 16384}}
    s = s.replace("model.n_batch", 256)  # a new default reaches every field the model does not own
    assert s.load_settings_for(BIG).n_batch == 256 and s.load_settings_for(BIG).n_ctx == 16384
    assert s.with_model_overrides(BIG, {"n_ctx": s.model.n_ctx}).per_model == {}  # reset: forgotten


def test_bad_overrides_are_refused_in_code() -> None:
    with pytest.raises(InvalidSetting):
        Settings().with_model_overrides(BIG, {"n_ctx": 3})
    with pytest.raises(InvalidSetting):  # a rule between fields: q4_0 needs flash attention
        Settings().with_model_overrides(BIG, {"kv_type": "q4_0", "flash_attn": "off"})
    with pytest.raises(KeyError):
        Settings().with_model_overrides(BIG, {"temperature": 0.5})


def test_a_bad_stored_value_is_repaired_and_said(tmp_path: Path) -> None:
    f = SettingsFile(tmp_path / "settings.json")
    f.path.write_text(json.dumps({"per_model": {
        BIG: {"n_ctx": "huge", "n_gpu_layers": 12, "temperature": 2},
        SMALL: {"kv_type": "q4_0", "flash_attn": "off"},  # without flash attention: the rule repairs it
        "": {"n_ctx": 4096},
        "/x.gguf": [1, 2],
    }}), "utf-8")
    repaired: list[InvalidSetting] = []
    s = Settings.from_dict(json.loads(f.path.read_text("utf-8")), repaired=repaired)
    assert s.per_model == {BIG: {"n_gpu_layers": 12}, SMALL: {"flash_attn": "off"}}
    assert {e.key for e in repaired} == {"model.n_ctx", "model.kv_type", "per_model"}
    assert f.load().per_model == s.per_model  # the file loads the same, leniently
    with pytest.raises(InvalidSetting):
        Settings.from_dict({"per_model": {BIG: {"n_ctx": "huge"}}}, strict=True)
    assert Settings.from_dict({"per_model": "nonsense"}).per_model == {}


def test_an_override_the_defaults_now_break_gives_way() -> None:
    s = Settings().replace("model.flash_attn", "on").with_model_overrides(BIG, {"kv_type": "q8_0"})
    s = s.replace("model.flash_attn", "off")  # every model without flash attention now
    assert s.load_settings_for(BIG).kv_type == "f16"  # loads, with the default, rather than failing


def test_a_thinking_budget_is_remembered_per_model_and_is_no_load_setting(tmp_path: Path) -> None:
    assert Settings().model.reasoning_budget == -1  # no limit
    s = Settings().with_model_overrides(BIG, {"reasoning_budget": 512})
    assert s.model_for(BIG).reasoning_budget == 512 and s.model_for(SMALL).reasoning_budget == -1
    assert s.load_settings_for(BIG) == Settings().model.load_settings()  # nothing to reload for
    f = SettingsFile(tmp_path / "settings.json")
    f.save(s)
    assert f.load() == s and json.loads(f.path.read_text("utf-8"))["per_model"] == {BIG: {"reasoning_budget": 512}}
    repaired: list[InvalidSetting] = []
    read = Settings.from_dict({"per_model": {BIG: {"reasoning_budget": -5}, SMALL: {"reasoning_budget": 0}}},
                              repaired=repaired)
    assert read.per_model == {SMALL: {"reasoning_budget": 0}}
    assert [e.key for e in repaired] == ["model.reasoning_budget"]
    with pytest.raises(InvalidSetting):
        Settings().with_model_overrides(BIG, {"reasoning_budget": -2})
