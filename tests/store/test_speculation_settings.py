"""The speculative decoding settings: their defaults, descriptions and ranges, and a bad stored
value repaired to its default; none of them is a load setting (no reload)."""

from __future__ import annotations

import pytest

from prefill.engine.settings import LoadSettings
from prefill.store import InvalidSetting, Settings


def test_defaults_and_descriptions() -> None:
    s = Settings()
    assert (s.model.speculative, s.model.draft_model_path, s.model.draft_max) == ("off", "", 16)
    docs = {info.key: info.doc for info in s.describe()}
    assert docs["model.speculative"].startswith(
        "Speculative decoding: off, from the text itself, or with a draft model")
    assert "vocabulary" in docs["model.draft_model_path"] and "tokens guessed ahead" in docs["model.draft_max"]


def test_choices_and_range() -> None:
    s = Settings()
    for mode in ("off", "ngram", "draft"):
        assert s.replace("model.speculative", mode).model.speculative == mode
    assert s.replace("model.draft_max", 1).model.draft_max == 1
    assert s.replace("model.draft_max", 32).model.draft_max == 32
    for key, bad in (("model.speculative", "fast"), ("model.speculative", "ngram-simple"), ("model.draft_max", 0),
                     ("model.draft_max", 33), ("model.draft_max", 4.5), ("model.draft_max", True),
                     ("model.draft_model_path", 7)):
        with pytest.raises(InvalidSetting) as caught:
            s.replace(key, bad)
        assert caught.value.key == key


def test_a_bad_stored_value_falls_back_to_its_default() -> None:
    repaired: list[InvalidSetting] = []
    s = Settings.from_dict({"model": {"speculative": "turbo", "draft_max": 99, "draft_model_path": ["x"],
                                      "n_ctx": 2048}}, repaired=repaired)
    assert (s.model.speculative, s.model.draft_max, s.model.draft_model_path) == ("off", 16, "")
    assert s.model.n_ctx == 2048  # its neighbours are kept
    assert sorted(e.key for e in repaired) == ["model.draft_max", "model.draft_model_path", "model.speculative"]
    with pytest.raises(InvalidSetting):
        Settings.from_dict({"model": {"draft_max": -1}}, strict=True)


def test_round_trip_and_not_a_load_setting() -> None:
    s = Settings().with_values({"model.speculative": "draft", "model.draft_model_path": "/m/draft.gguf",
                                "model.draft_max": 8})
    assert Settings.from_dict(s.to_dict()) == s
    assert s.to_dict()["model"]["draft_max"] == 8
    # what a load takes is the same with speculation on or off: changing it reloads nothing
    assert s.model.load_settings() == Settings().model.load_settings()
    assert not {"speculative", "draft_model_path", "draft_max"} & set(LoadSettings.__dataclass_fields__)
