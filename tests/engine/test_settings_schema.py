"""One settings schema (issue 10): the engine's sections carry every rule, the store persists
those very sections, and nothing above the engine re-states a rule."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest

from prefill.engine.errors import InvalidSetting
from prefill.engine.settings import LoadSettings, OverflowSettings, SamplingSettings
from prefill.store.app_settings import ModelSettings, Settings

APP = Path(__file__).resolve().parents[2] / "app" / "prefill"


def test_the_store_persists_the_engines_own_sections() -> None:
    s = Settings()
    assert type(s.sampling) is SamplingSettings
    assert isinstance(s.model, LoadSettings)
    assert type(s.model.load_settings()) is LoadSettings and s.model.load_settings() == LoadSettings()
    assert s.model.overflow() == OverflowSettings()
    load_fields = {f.name: f for f in dataclasses.fields(LoadSettings)}
    for f in dataclasses.fields(ModelSettings):  # the same fields, not copies that can drift
        if f.name in load_fields:
            assert f.metadata == load_fields[f.name].metadata and f.default == load_fields[f.name].default
    policy = {f.name: f for f in dataclasses.fields(OverflowSettings)}["policy"]
    overflow = {f.name: f for f in dataclasses.fields(ModelSettings)}["overflow_policy"]
    assert overflow.metadata == policy.metadata and overflow.default == policy.default


# Each case once broke the app: one side accepted what the other refused, or llama.cpp would.
CASES = [
    ("model", {"kv_type": "q8_0", "flash_attn": "off"}, "flash attention"),
    ("model", {"n_ctx": 64}, "below the minimum 128"),
    ("model", {"n_batch": 0}, "below the minimum 1"),
    ("model", {"n_gpu_layers": -1}, "below the minimum 0"),
    ("sampling", {"repeat_penalty": 0.0}, "must be above 0"),
    ("sampling", {"temperature": math.nan}, "not a finite number"),
    ("sampling", {"top_p": math.inf}, "not a finite number"),
    ("sampling", {"min_p": 1.5}, "above the maximum 1"),
    ("sampling", {"seed": 2**40}, "above the maximum"),
    ("sampling", {"stop": ["ok", 3]}, "not a list of texts"),
]


@pytest.mark.parametrize(("section", "values", "message"), CASES)
def test_engine_and_store_refuse_the_same_values(section: str, values: dict, message: str) -> None:
    engine_section = LoadSettings if section == "model" else SamplingSettings
    with pytest.raises(InvalidSetting, match=message):
        engine_section(**values)
    with pytest.raises(InvalidSetting, match=message):
        Settings().with_values({f"{section}.{k}": v for k, v in values.items()})
    repaired: list[InvalidSetting] = []
    read = Settings.from_dict({section: values}, repaired=repaired)  # a file holding it is repaired
    assert repaired and message in str(repaired[0])
    kept = {f"{section}.{k}": v for k, v in values.items() if f"{section}.{k}" != repaired[0].key}
    assert read == Settings().with_values(kept)  # the value named is reset, the others kept


def test_values_both_sides_accept() -> None:
    # top_p = 0: llama.cpp keeps at least one token, so it means "only the likeliest".
    for values in ({"top_p": 0.0}, {"top_p": 1}, {"min_p": 0}, {"temperature": 0}, {"stop": ["\n\n"]}):
        assert Settings().with_values({f"sampling.{k}": v for k, v in values.items()}).sampling == \
            SamplingSettings(**values)
    assert LoadSettings(kv_type="q4_0", flash_attn="on", n_ctx=128).kv_type == "q4_0"
    assert SamplingSettings(stop=["a"]).stop == ("a",)  # a JSON list is kept as a tuple


def test_a_rule_between_fields_resets_only_the_field_it_names() -> None:
    repaired: list[InvalidSetting] = []
    s = Settings.from_dict({"model": {"kv_type": "q4_0", "flash_attn": "off", "n_ctx": 8192}}, repaired=repaired)
    assert (s.model.kv_type, s.model.flash_attn, s.model.n_ctx) == ("f16", "off", 8192)
    assert [e.key for e in repaired] == ["model.kv_type"]
    with pytest.raises(InvalidSetting):
        Settings.from_dict({"model": {"kv_type": "q4_0", "flash_attn": "off"}}, strict=True)
    # flash attention "auto" (the default): llama.cpp turns it on for a quantised cache
    assert Settings.from_dict({"model": {"kv_type": "q4_0"}}, strict=True).model.kv_type == "q4_0"
    both = Settings().with_values({"model.kv_type": "q8_0", "model.flash_attn": "on"})  # set together: fine
    assert (both.model.kv_type, both.model.flash_attn) == ("q8_0", "on")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return [n for n in names if n.startswith("prefill")]


# Upward imports found when this check was written; the list may only shrink.
KNOWN_UPWARD: dict[str, set[str]] = {}  # none left: keep it empty


def test_arrows_point_down() -> None:
    for path in (APP / "engine").glob("*.py"):  # the engine imports nothing above it
        upward = {n for n in _imports(path) if not n.startswith("prefill.engine")}
        assert upward <= KNOWN_UPWARD.get(path.name, set()), path
    leaf = {"prefill.engine.settings", "prefill.engine.setting_fields", "prefill.engine.errors",
            "prefill.engine.message", "prefill.engine.units", "prefill.engine.private_paths",
            "prefill.engine.request", "prefill.engine.speculation"}  # a turn's inputs; speculation as a setting
    # and the image door (Pillow, for images kept with messages and imported), never llama.cpp
    door = {"prefill.engine.vision.image_door", "prefill.engine.vision.errors"}
    for path in (APP / "store").glob("*.py"):  # the store takes the schema, never the runtime
        engine = {n for n in _imports(path) if n.startswith("prefill.engine")}
        assert engine <= leaf | door, path
        assert not {n for n in _imports(path) if n.split(".")[1] in ("hub", "ui", "commands")}, path
    for module in leaf:  # and the schema modules are leaves: the standard library only
        path = APP.parent / (module.replace(".", "/") + ".py")
        assert set(_imports(path)) <= leaf, path
    for module in door:  # the door reads images with Pillow, on the schema's leaves
        path = APP.parent / (module.replace(".", "/") + ".py")
        assert {n for n in _imports(path) if n.startswith("prefill.")} <= leaf | door, path


@pytest.mark.parametrize(("cores", "decode", "prompt"), [(1, 1, 1), (2, 1, 2), (4, 3, 4), (8, 4, 4), (32, 16, 16)])
def test_automatic_threads_give_the_prompt_every_core_of_a_small_machine(
    monkeypatch: pytest.MonkeyPatch, cores: int, decode: int, prompt: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    s = LoadSettings()
    assert (s.threads, s.prefill_threads) == (decode, prompt)
    assert (LoadSettings(n_threads=3).threads, LoadSettings(n_threads=3).prefill_threads) == (3, 3)  # as set
