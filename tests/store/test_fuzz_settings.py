"""Property-based fuzz of what is read from the config folder: settings.json and endpoints.json.
Whatever a file holds, reading it gives usable values (each bad one repaired to its default and
said so, a file that is not ours set aside) and never raises; what was read can be saved and read
back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from prefill.engine.errors import InvalidSetting
from prefill.store.app_settings import SECTIONS, Settings, keys
from prefill.store.endpoints import EndpointsFile, SavedEndpoint
from prefill.store.settings_file import SettingsFile
from tests.json_fuzz import FUZZ, GONE, Raw, encode, mutated
from tests.json_fuzz import json_values as json_values_of
from tests.json_fuzz import raw_values as raw_values_of

json_values = json_values_of([0, -1, 1, 127, 128, 512, 2**31 - 1, 2**31, 1_048_576, 1_048_577, 2**63, 1e308, 5e-324])
raw_values = raw_values_of(["1e999", "-1e400", "[1e999]"])


def _valid_settings() -> dict[str, Any]:
    """A settings file as `save` writes it, with values other than the defaults."""
    chosen = Settings().with_values({
        "model.n_ctx": 8192, "model.n_gpu_layers": 12, "model.flash_attn": "on", "model.kv_type": "q8_0",
        "model.last_model_path": "/models/a.gguf", "model.overflow_policy": "stop", "sampling.temperature": 0.2,
        "sampling.stop": ("</s>", "\n\n"), "sampling.seed": 42, "ui.theme": "dark", "hub.hf_token": "hf_x",
    })
    doc: dict[str, Any] = chosen.to_dict()
    return doc


PATHS: list[tuple[Any, ...]] = [
    *((name,) for name in SECTIONS),
    *((name, key.partition(".")[2]) for name in SECTIONS for key in keys([SECTIONS[name]])),
    ("sampling", "stop", 0), ("model", "unknown"), ("unknown",),
]
replacements = st.just(GONE) | json_values | raw_values
near_valid = st.builds(mutated, st.just(_valid_settings()), st.sampled_from(PATHS), replacements)
settings_files = st.one_of(
    st.binary(max_size=64),
    json_values.map(encode),
    near_valid.map(encode),
    st.lists(st.tuples(st.sampled_from(PATHS), replacements), min_size=2, max_size=5).map(
        lambda changes: encode(_apply(_valid_settings(), changes))
    ),
    st.integers(1, 5000).map(lambda n: b'{"model": ' + b"[" * n + b"]" * n + b"}"),
    st.integers(4000, 6000).map(lambda n: b'{"model": {"n_ctx": ' + b"9" * n + b"}}"),  # past int's digit limit
    st.sampled_from([b'{"model": "\xff"}', b"\xef\xbb\xbf{}", b"NaN", b"[]", b'{"sampling": {"top_p": NaN}}']),
)


def _apply(base: Any, changes: list[tuple[tuple[str, ...], Any]]) -> Any:
    for path, value in changes:
        try:
            base = mutated(base, path, value)
        except (KeyError, IndexError, TypeError, AttributeError):  # an earlier change replaced the parent
            pass
    return base


# --- settings.json ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config")


def _read(folder: Path, data: bytes) -> Settings:
    """Read a settings file holding `data`: usable settings, never an exception; they save and read back."""
    path = folder / "settings.json"
    path.write_bytes(data)
    Path(str(path) + ".bak").unlink(missing_ok=True)
    read = SettingsFile(path).read()
    assert isinstance(read.settings, Settings)
    for exc in read.repaired:
        assert isinstance(exc, InvalidSetting) and exc.key and str(exc).strip()
        str(exc).encode("utf-8")  # logged, and shown in a notice
    if read.set_aside:
        assert read.settings == Settings() and not read.repaired
    SettingsFile(path).save(read.settings)
    again = SettingsFile(path).read()
    assert (again.settings, again.repaired, again.set_aside) == (read.settings, (), "")
    json.dumps(read.settings.to_dict(), allow_nan=False)
    return read.settings


@FUZZ
@given(settings_files)
@example(encode(mutated(_valid_settings(), ("hub", "hf_token"), "\ud800")))  # read, then could not be saved
@example(encode(mutated(_valid_settings(), ("sampling", "stop"), ["\udfff"])))
@example(encode(mutated(_valid_settings(), ("sampling", "temperature"), Raw("1e999"))))
def test_any_settings_file_reads_as_usable_settings(folder: Path, data: bytes) -> None:
    _read(folder, data)


@FUZZ
@given(st.sampled_from(PATHS), replacements)
def test_one_bad_value_leaves_the_others_as_they_were(folder: Path, path: tuple[str, ...], value: Any) -> None:
    got = _read(folder, encode(mutated(_valid_settings(), path, value))).to_dict()
    for section, values in _valid_settings().items():
        for key, want in values.items():
            if (section, key)[: len(path)] == path[:2]:
                continue  # the value changed, or its whole section
            if (section, key) == ("model", "kv_type") and path[:2] == ("model", "flash_attn"):
                continue  # a quantised cache needs flash attention: the rule resets the cache type
            assert got[section][key] == want, (section, key)


@FUZZ
@given(st.dictionaries(st.sampled_from([*SECTIONS, "other"]), json_values, max_size=5) | json_values)
def test_from_dict_repairs_or_refuses_in_words(data: Any) -> None:
    if not isinstance(data, dict):
        data = {"model": data, "sampling": data}
    repaired: list[InvalidSetting] = []
    loose = Settings.from_dict(data, repaired=repaired)
    assert all(isinstance(e, InvalidSetting) and str(e).strip() for e in repaired)
    try:
        strict = Settings.from_dict(data, strict=True)
    except InvalidSetting as e:
        assert repaired and str(e).strip()
    else:
        assert strict == loose and not repaired


def test_nesting_at_every_depth_reads_as_usable_settings(folder: Path) -> None:
    for depth in range(1, 1100, 3):
        nested = "[" * depth + "]" * depth
        _read(folder, b'{"sampling": {"stop": %s}, "model": %s}' % (nested.encode(), nested.encode()))


# --- endpoints.json -----------------------------------------------------------------------
def _valid_endpoints() -> dict[str, Any]:
    return {"endpoints": [
        {"name": "Local", "url": "http://127.0.0.1:8080", "model": "", "api_key": ""},
        {"name": "Box", "url": "http://10.0.0.2:8000/v1", "model": "qwen", "api_key": "sk-1"},
    ]}


ENDPOINT_PATHS: list[tuple[Any, ...]] = [("endpoints",), ("endpoints", 0), ("other",)] + [
    ("endpoints", i, k) for i in (0, 1) for k in ("name", "url", "model", "api_key", "extra")
]
endpoint_files = st.one_of(
    st.binary(max_size=64),
    json_values.map(encode),
    st.builds(mutated, st.just(_valid_endpoints()), st.sampled_from(ENDPOINT_PATHS), replacements).map(encode),
    st.integers(1, 5000).map(lambda n: b'{"endpoints": ' + b"[" * n + b"]" * n + b"}"),
)


@FUZZ
@given(endpoint_files)
@example(encode(mutated(_valid_endpoints(), ("endpoints", 1, "name"), "\ud800")))  # read, then could not be saved
def test_any_endpoints_file_reads_as_endpoints(folder: Path, data: bytes) -> None:
    path = folder / "endpoints.json"
    path.write_bytes(data)
    got = EndpointsFile(path).load()
    assert all(isinstance(e, SavedEndpoint) and e.name and e.url for e in got)
    assert len({e.name for e in got}) == len(got)
    EndpointsFile(path).save(got)
    assert EndpointsFile(path).load() == got
