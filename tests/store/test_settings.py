"""The typed settings schema: defaults, docs, validation, dict round trips."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from prefill.store import InvalidSetting, Settings
from prefill.store.app_settings import SECTIONS


def test_defaults() -> None:
    s = Settings()
    assert (s.model.n_ctx, s.model.n_gpu_layers, s.model.flash_attn, s.model.kv_type) == (
        4096,
        "auto",
        "auto",
        "f16",
    )
    assert (s.model.n_threads, s.model.n_batch, s.model.overflow_policy) == (
        0,
        512,
        "rolling_window",
    )
    assert (s.sampling.temperature, s.sampling.top_p, s.sampling.top_k, s.sampling.min_p) == (
        0.7,
        0.95,
        40,
        0.05,
    )
    assert (s.sampling.repeat_penalty, s.sampling.max_tokens, s.sampling.seed) == (1.1, 1024, -1)
    assert (s.ui.theme, s.ui.models_dir, s.hub.hf_token, s.model.last_model_path) == (
        "system",
        "",
        "",
        "",
    )


def test_every_field_has_a_one_line_doc() -> None:
    for section in SECTIONS.values():
        for item in dataclasses.fields(section):  # type: ignore[arg-type]
            doc = item.metadata.get("doc", "")
            assert doc and "\n" not in doc, f"{section.__name__}.{item.name}"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("model.kv_type", "q5", "model.kv_type: 'q5' is not 'f16', 'q8_0' or 'q4_0'"),
        ("model.n_gpu_layers", "most", "'auto', 'all', 'none' or a whole number"),
        ("model.n_gpu_layers", -2, "below the minimum 0"),
        ("model.n_ctx", True, "model.n_ctx: True is not a whole number"),
        ("model.n_ctx", 4096.5, "not a whole number"),
        ("model.flash_attn", "yes", "not 'auto', 'on' or 'off'"),
        ("model.overflow_policy", "drop", "'rolling_window', 'truncate_middle', 'stop' or 'summarise'"),
        ("sampling.top_p", 1.5, "sampling.top_p: 1.5 is above the maximum 1"),
        ("sampling.temperature", -0.1, "below the minimum 0"),
        ("sampling.seed", -7, "below the minimum -1"),
        ("ui.theme", "solarized", "'system', 'light' or 'dark'"),
    ],
)
def test_bad_values_set_in_code_raise_a_clear_value_error(key: str, value, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Settings().replace(key, value)
    assert isinstance(info.value, InvalidSetting) and info.value.key == key
    assert message in str(info.value)


def test_bad_value_in_a_constructor_raises_too() -> None:
    with pytest.raises(InvalidSetting, match="kv_type"):
        dataclasses.replace(Settings().model, kv_type="q5")


def test_replace_and_get_by_dotted_key() -> None:
    s = Settings().replace("model.n_gpu_layers", 24).replace("sampling.temperature", 1)
    assert s.get("model.n_gpu_layers") == 24
    assert s.sampling.temperature == 1.0 and isinstance(s.sampling.temperature, float)
    assert Settings().model.n_gpu_layers == "auto"
    with pytest.raises(KeyError):
        Settings().replace("model.no_such", 1)
    with pytest.raises(KeyError):
        Settings().replace("NAME.x", 1)


def test_dict_round_trip() -> None:
    s = Settings().replace("ui.theme", "dark").replace("hub.hf_token", "hf_secret")
    data = s.to_dict()
    assert data["ui"]["theme"] == "dark" and data["hub"]["hf_token"] == "hf_secret"
    assert Settings.from_dict(data) == s


def test_from_dict_ignores_unknown_keys_and_falls_back_per_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = {
        "model": {"n_ctx": 8192, "kv_type": "q5", "n_batch": "big", "future_knob": 1},
        "sampling": "not a section",
        "ui": {"theme": "light"},
        "plugins": {"x": 1},
    }
    with caplog.at_level(logging.WARNING):
        s = Settings.from_dict(data)
    assert (s.model.n_ctx, s.model.kv_type, s.model.n_batch) == (8192, "f16", 512)
    assert s.sampling == Settings().sampling
    assert s.ui.theme == "light"
    assert "model.kv_type" in caplog.text and "model.n_batch" in caplog.text


def test_from_dict_strict_raises() -> None:
    with pytest.raises(InvalidSetting, match="n_ctx"):
        Settings.from_dict({"model": {"n_ctx": "lots"}}, strict=True)


def test_token_stays_out_of_repr_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    s = Settings().replace("hub.hf_token", "hf_abcdef123456")
    assert "hf_abcdef123456" not in repr(s) and "hf_abcdef123456" not in str(s)
    with caplog.at_level(logging.WARNING):
        Settings.from_dict({"hub": {"hf_token": ["hf_listsecret"]}})
    assert "hub.hf_token" in caplog.text and "hf_listsecret" not in caplog.text
    (token,) = [info for info in s.describe() if info.key == "hub.hf_token"]
    assert token.secret


def test_describe_lists_every_setting_once() -> None:
    infos = Settings().describe()
    keys = [info.key for info in infos]
    assert len(keys) == len(set(keys)) == sum(len(dataclasses.fields(c)) for c in SECTIONS.values())
    assert ("model.n_ctx", 4096) in [(i.key, i.default) for i in infos]
