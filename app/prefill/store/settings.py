"""The one typed settings schema.

Each section is a frozen dataclass; each field carries its default and a one-line
description (``metadata["doc"]``) and is checked on construction, so a bad value set in
code fails at once with ``InvalidSetting`` (a ValueError). Reading a file is lenient
instead: ``Settings.from_dict`` keeps the default for any value it cannot use.
Change a setting with ``settings.replace("model.n_ctx", 8192)``.
"""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple

from prefill.store.errors import InvalidSetting

log = logging.getLogger(__name__)

KvType = Literal["f16", "q8_0", "q4_0"]
GpuLayers = Literal["auto", "all", "none"]
OverflowPolicy = Literal["stop", "truncate_middle", "rolling_window"]
Theme = Literal["system", "light", "dark"]


def doc(
    text: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    secret: bool = False,
) -> dict[str, Any]:
    """Build a setting's field metadata: ``field(default=..., metadata=doc("..."))``.

    Args:
        text: One line for a settings dialog or ``--help``.
        minimum: The smallest number allowed (numbers only).
        maximum: The largest number allowed (numbers only).
        secret: Kept out of log messages; also pass ``repr=False`` to ``field``.
    """
    return {"doc": text, "min": minimum, "max": maximum, "secret": secret}


def _check(key: str, hint: Any, meta: Mapping[str, Any], value: Any) -> Any:
    """Return ``value`` (an int widened for a float field) or raise InvalidSetting."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = typing.get_args(hint) if union else (hint,)
    for option in options:
        if typing.get_origin(option) is Literal:
            if isinstance(value, str) and value in typing.get_args(option):
                return value
        elif option in (int, float) and _is_number(value, integral=option is int):
            low, high = meta.get("min"), meta.get("max")
            if low is not None and value < low:
                raise InvalidSetting(key, f"{value} is below the minimum {low}")
            if high is not None and value > high:
                raise InvalidSetting(key, f"{value} is above the maximum {high}")
            return option(value)
        elif option in (bool, str) and isinstance(value, option):
            return value
    shown = "(hidden)" if meta.get("secret") else repr(value)
    raise InvalidSetting(key, f"{shown} is not {_describe(options)}")


def _is_number(value: Any, integral: bool) -> bool:
    # bool is an int subclass, but True is no context length.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (not integral and isinstance(value, float))


_TYPE_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _describe(options: tuple[Any, ...]) -> str:
    names: list[str] = []
    for option in options:
        if typing.get_origin(option) is Literal:
            names.extend(repr(choice) for choice in typing.get_args(option))
        else:
            names.append(_TYPE_NAMES.get(option, str(option)))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


class _Section:
    """Checks every field of a section dataclass after construction."""

    NAME: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            key = f"{self.NAME}.{item.name}"
            value = _check(key, hints[item.name], item.metadata, getattr(self, item.name))
            object.__setattr__(self, item.name, value)


@dataclass(frozen=True)
class ModelSettings(_Section):
    """How a model is loaded."""

    NAME: ClassVar[str] = "model"
    last_model_path: str = field(default="", metadata=doc('The model opened last; "" = none.'))
    n_ctx: int = field(default=4096, metadata=doc("Context length in tokens.", minimum=128))
    n_gpu_layers: GpuLayers | int = field(
        default="auto",
        metadata=doc("Layers offloaded to the GPU: auto, all, none or a count.", minimum=0),
    )
    flash_attn: bool = field(
        default=False, metadata=doc("Use flash attention (where the backend supports it).")
    )
    kv_type: KvType = field(default="f16", metadata=doc("KV cache type: f16, q8_0 or q4_0."))
    n_threads: int = field(
        default=0, metadata=doc("CPU threads for generation; 0 = automatic.", minimum=0)
    )
    n_batch: int = field(default=512, metadata=doc("Prompt tokens per batch.", minimum=1))
    overflow_policy: OverflowPolicy = field(
        default="rolling_window",
        metadata=doc("When the chat outgrows the context: stop, truncate_middle, rolling_window."),
    )
    kv_disk_budget_mb: int = field(
        default=4096,
        metadata=doc("Disk space for chats' saved KV caches, in MiB; 0 = none saved.", minimum=0),
    )


@dataclass(frozen=True)
class SamplingSettings(_Section):
    """How the next token is chosen."""

    NAME: ClassVar[str] = "sampling"
    temperature: float = field(
        default=0.7, metadata=doc("Randomness; 0 = always the likeliest token.", minimum=0)
    )
    top_p: float = field(
        default=0.95,
        metadata=doc(
            "Keep the likeliest tokens up to this total probability.", minimum=0, maximum=1
        ),
    )
    top_k: int = field(
        default=40, metadata=doc("Keep only the k likeliest tokens; 0 = all.", minimum=0)
    )
    min_p: float = field(
        default=0.05,
        metadata=doc("Drop tokens less likely than this times the best one.", minimum=0, maximum=1),
    )
    repeat_penalty: float = field(
        default=1.1, metadata=doc("Penalty for repeating recent tokens; 1 = none.", minimum=0)
    )
    max_tokens: int = field(default=1024, metadata=doc("Longest answer in tokens.", minimum=1))
    seed: int = field(
        default=-1, metadata=doc("Random seed; -1 = a new one each time.", minimum=-1)
    )


@dataclass(frozen=True)
class UiSettings(_Section):
    """How the window looks and where it was."""

    NAME: ClassVar[str] = "ui"
    theme: Theme = field(default="system", metadata=doc("Colour theme: system, light or dark."))
    window_geometry: str = field(default="", metadata=doc("Saved window geometry (base64)."))
    splitter_states: str = field(default="", metadata=doc("Saved splitter positions (base64)."))
    models_dir: str = field(
        default="", metadata=doc('Folder for downloaded models; "" = the default.')
    )


@dataclass(frozen=True)
class HubSettings(_Section):
    """Hugging Face access."""

    NAME: ClassVar[str] = "hub"
    hf_token: str = field(
        default="",
        repr=False,
        metadata=doc('Hugging Face access token; "" = anonymous.', secret=True),
    )


class SettingInfo(NamedTuple):
    """One setting as a settings dialog or the CLI lists it."""

    key: str
    doc: str
    default: Any
    value: Any
    secret: bool


SECTIONS: dict[str, type[_Section]] = {
    "model": ModelSettings,
    "sampling": SamplingSettings,
    "ui": UiSettings,
    "hub": HubSettings,
}


@dataclass(frozen=True)
class Settings:
    """All settings of Prefill, one section per concern."""

    model: ModelSettings = field(default_factory=ModelSettings)
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    ui: UiSettings = field(default_factory=UiSettings)
    hub: HubSettings = field(default_factory=HubSettings)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Return plain nested dicts, ready for JSON (the token included)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, strict: bool = False) -> Settings:
        """Build settings from nested dicts such as ``to_dict()`` returns.

        Unknown keys are ignored. A missing value takes its default.

        Args:
            data: ``{"model": {"n_ctx": 8192, ...}, ...}``.
            strict: Raise on a bad value instead of logging it and using the default.

        Raises:
            InvalidSetting: With ``strict``, for the first value that does not fit.
        """
        sections: dict[str, _Section] = {}
        for name, section in SECTIONS.items():
            stored = data.get(name)
            stored = stored if isinstance(stored, Mapping) else {}
            values: dict[str, Any] = {}
            for item in dataclasses.fields(section):  # type: ignore[arg-type]
                if item.name not in stored:
                    continue
                try:
                    section(**{item.name: stored[item.name]})
                except InvalidSetting as exc:
                    if strict:
                        raise
                    log.warning("settings: %s; using the default", exc)
                    continue
                values[item.name] = stored[item.name]
            sections[name] = section(**values)
        return cls(**sections)  # type: ignore[arg-type]

    def replace(self, key: str, value: Any) -> Settings:
        """Return a copy with one setting changed.

        Args:
            key: Dotted name, such as ``"model.n_ctx"``.
            value: The new value.

        Raises:
            KeyError: No such setting.
            InvalidSetting: The value does not fit the setting.
        """
        section_name, _, name = key.partition(".")
        section = getattr(self, section_name, None) if section_name in SECTIONS else None
        if section is None or name not in {f.name for f in dataclasses.fields(section)}:
            raise KeyError(f"no setting named {key!r}")
        changed = dataclasses.replace(section, **{name: value})
        return dataclasses.replace(self, **{section_name: changed})

    def get(self, key: str) -> Any:
        """Return one setting by dotted name. Raises KeyError."""
        return {info.key: info.value for info in self.describe()}[key]

    def describe(self) -> list[SettingInfo]:
        """List every setting with its description, default and current value."""
        infos = []
        for name in SECTIONS:
            section = getattr(self, name)
            for item in dataclasses.fields(section):
                infos.append(
                    SettingInfo(
                        f"{name}.{item.name}",
                        item.metadata["doc"],
                        item.default,
                        getattr(section, item.name),
                        item.metadata["secret"],
                    )
                )
        return infos
