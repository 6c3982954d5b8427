"""All of Prefill's settings, as the settings file holds them.

The engine owns the schema of what it consumes (``prefill.engine.settings``: the load
and sampling sections with their rules); this module persists those sections as they
are and adds the app's own (which model, the window, the hub) with the same machinery.
A bad value set in code fails at once with ``InvalidSetting`` (a ValueError). Reading
a file is lenient instead: ``Settings.from_dict`` repairs what it cannot use (the
default takes its place) and says what it repaired.
Change a setting with ``settings.replace("model.n_ctx", 8192)``.

How a model loads (``LoadSettings``: context, GPU layers, KV type…) and its thinking budget are also
remembered per model file (``PER_MODEL_FIELDS``): ``per_model`` maps a file's path to the values that
differ for it, and the ``model`` section's values are the defaults for every other field and every
other model (``model_for(path)``, ``load_settings_for(path)``, ``with_model_overrides``). Of those,
only the load settings (``RELOAD_FIELDS``) take a reload of the model when they change.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple

from prefill.engine.errors import InvalidSetting
from prefill.engine.request import MAX_REASONING_BUDGET
from prefill.engine.setting_fields import Section, doc
from prefill.engine.settings import (
    LoadSettings,
    OverflowPolicy,
    OverflowSettings,
    SamplingSettings,
)
from prefill.engine.speculation import Speculation, SpeculativeMode

log = logging.getLogger(__name__)

Theme = Literal["system", "light", "dark"]
MemoryBudget = Literal["auto", "none"] | int  # MiB, or what this machine has, or no bound
IdleMinutes = Literal["never"] | int
MIB = 1 << 20


def _field_of(section: type[Section], name: str) -> dataclasses.Field[Any]:
    return {f.name: f for f in dataclasses.fields(section)}[name]  # type: ignore[arg-type]


# The overflow policy is stored in the model section but declared once, by the engine.
_POLICY = _field_of(OverflowSettings, "policy")


@dataclass(frozen=True)
class ModelSettings(LoadSettings):
    """The ``model`` section: how to load (LoadSettings' fields and rules), which model, and
    what to do when a chat outgrows the context."""

    NAME: ClassVar[str] = "model"
    last_model_path: str = field(default="", metadata=doc('The model opened last; "" = none.'))
    overflow_policy: OverflowPolicy = field(default=_POLICY.default, metadata=_POLICY.metadata)
    kv_disk_budget_mb: int = field(
        default=4096,
        metadata=doc("Disk space for chats' saved KV caches, in MiB; 0 = none saved.",
                     label="Chat cache budget (MiB)", minimum=0, maximum=1_048_576),
    )
    # Set on the loaded engine as they change (no reload), so they are not LoadSettings' fields.
    speculative: SpeculativeMode = field(
        default="off",
        metadata=doc("Speculative decoding: off, from the text itself, or with a draft model (guesses checked "
                     "in one step; the same answer; temperature 0, repeat penalty 1, flash attention on).",
                     label="Speculative decoding"),
    )
    draft_model_path: str = field(
        default="",
        metadata=doc('A small GGUF model that shares the main model\'s vocabulary, for speculative decoding '
                     'with a draft model; "" = none.', label="Draft model"),
    )
    draft_max: int = field(
        default=16,
        metadata=doc("The most tokens guessed ahead per step (the guess shortens by itself when the model "
                     "keeps refusing it).", label="Longest draft (tokens)", minimum=1, maximum=32),
    )
    # Read for each answer (no reload); remembered per model file, as the load settings are.
    reasoning_budget: int = field(
        default=-1,
        metadata=doc("The most tokens a reasoning model thinks before it answers, where a chat sets none "
                     "(-1 = no limit; 0 = no thinking).", label="Thinking budget (tokens)",
                     minimum=-1, maximum=MAX_REASONING_BUDGET),
    )

    def speculation(self) -> Speculation:
        """How answers are decoded, as the engine takes it ("draft" names its file)."""
        return Speculation(self.speculative, self.draft_model_path, self.draft_max)

    def load_settings(self) -> LoadSettings:
        """What the engine takes to load a model (a change of it takes a reload)."""
        return LoadSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(LoadSettings)})

    def overflow(self) -> OverflowSettings:
        """What the engine takes for a prompt that outgrows the context."""
        return OverflowSettings(policy=self.overflow_policy)

    def thinking_budget(self) -> int | None:
        """The thinking budget a chat without its own is answered with (None: no limit)."""
        return None if self.reasoning_budget < 0 else self.reasoning_budget


@dataclass(frozen=True)
class UiSettings(Section):
    """How the window looks and where it was."""

    NAME: ClassVar[str] = "ui"
    theme: Theme = field(default="system", metadata=doc("Colour theme: system, light or dark.", label="Theme"))
    window_geometry: str = field(default="", metadata=doc("Saved window geometry (base64)."))
    splitter_states: str = field(default="", metadata=doc("Saved splitter positions (base64)."))
    models_dir: str = field(
        default="", metadata=doc('Folder for downloaded models; "" = the default.', label="Models folder", folder=True)
    )
    tools_off: str = field(
        default="", metadata=doc("MCP tools not offered in chats: their model-facing names, comma-separated.")
    )
    max_tool_rounds: int = field(
        default=8, metadata=doc("Rounds of tool calls one answer may run before Prefill stops it (0 = no calls run).",
                                label="Tool rounds per answer", minimum=0, maximum=64)
    )


@dataclass(frozen=True)
class MemorySettings(Section):
    """How many local models the window keeps in memory at once, and for how long (session/residents.py;
    `prefill chat` takes the same as --memory-budget, --max-models and --ttl)."""

    NAME: ClassVar[str] = "memory"
    budget_mb: MemoryBudget = field(
        default="auto",
        metadata=doc("Memory the local models kept in memory may take together, in MiB: auto = what this machine "
                     "has (its free GPU memory when layers are offloaded, else its available RAM), less 10% "
                     "(at least 512 MiB); none = no limit.", label="Memory for models", minimum=64,
                     maximum=16_777_216),
    )
    max_models: int = field(
        default=0,
        metadata=doc("Local models kept in memory at once, the chat's included (0 = as many as the memory for "
                     "models holds; 1 = one at a time).", label="Models in memory at once", minimum=0, maximum=64),
    )
    idle_minutes: IdleMinutes = field(
        default=60,
        metadata=doc("An idle model (not the chat's, not pinned) is unloaded this many minutes after it was last "
                     "used; never = idle models stay.", label="Unload idle models", minimum=1, maximum=10_080),
    )

    def limits(self) -> tuple[int | None, int, float | None]:
        """(budget, max_models, ttl_s) as `session.residents.Residents` takes them: the budget in bytes
        (None: what this machine has, less a margin; 0: no bound), the time to live in seconds (None: never)."""
        budget = None if self.budget_mb == "auto" else 0 if self.budget_mb == "none" else int(self.budget_mb) * MIB
        ttl = None if self.idle_minutes == "never" else float(self.idle_minutes) * 60
        return budget, self.max_models, ttl


@dataclass(frozen=True)
class DocumentsSettings(Section):
    """How documents are indexed and searched: the window's, and `prefill docs` and `chat --docs` without
    --embed-model."""

    NAME: ClassVar[str] = "documents"
    embedding_model: str = field(
        default="",
        metadata=doc('The embedding model\'s GGUF that indexes and searches documents; "" = the bundled '
                     'all-MiniLM-L6-v2. A change re-indexes the collections indexed with another.',
                     label="Embedding model"),
    )


@dataclass(frozen=True)
class HubSettings(Section):
    """Hugging Face access."""

    NAME: ClassVar[str] = "hub"
    hf_token: str = field(
        default="",
        repr=False,
        metadata=doc('Hugging Face access token, for gated repositories; "" = anonymous.',
                     label="Hugging Face token", secret=True),
    )


class SettingInfo(NamedTuple):
    """One setting as a settings dialog or the CLI lists it."""

    key: str
    doc: str
    default: Any
    value: Any
    secret: bool


# The model section's fields a change of which reloads the model: how it loads.
RELOAD_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(LoadSettings))
# The model section's fields a model file may override: how it loads, and how long it may think.
PER_MODEL_FIELDS: tuple[str, ...] = (*RELOAD_FIELDS, "reasoning_budget")
PER_MODEL = "per_model"  # the settings file's key for them

SECTIONS: dict[str, type[Section]] = {
    "model": ModelSettings,
    "sampling": SamplingSettings,
    "ui": UiSettings,
    "memory": MemorySettings,
    "hub": HubSettings,
    "documents": DocumentsSettings,
}


@dataclass(frozen=True)
class Settings:
    """All settings of Prefill, one section per concern."""

    model: ModelSettings = field(default_factory=ModelSettings)
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    ui: UiSettings = field(default_factory=UiSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    hub: HubSettings = field(default_factory=HubSettings)
    documents: DocumentsSettings = field(default_factory=DocumentsSettings)
    # A model file's path → its own values of PER_MODEL_FIELDS, those that differ from the model section's.
    per_model: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Return plain nested dicts, ready for JSON (the token included)."""
        out = {name: _plain(dataclasses.asdict(getattr(self, name))) for name in SECTIONS}
        out[PER_MODEL] = {path: dict(values) for path, values in self.per_model.items()}
        return out

    def model_for(self, path: str) -> ModelSettings:
        """The model section as it holds for this model file: its own values over the defaults."""
        return _model_with(self.model, self.per_model.get(path, {}))

    def load_settings_for(self, path: str) -> LoadSettings:
        """What the engine takes to load this model file."""
        return self.model_for(path).load_settings()

    def with_model_overrides(self, path: str, values: Mapping[str, Any]) -> Settings:
        """Return a copy where this model file has `values` (names of PER_MODEL_FIELDS: its load
        settings, its thinking budget); only those that differ from the defaults are kept, and none at
        all forgets the file.

        Raises:
            KeyError: A name that is not remembered per model.
            InvalidSetting: A value does not fit, or the result breaks a rule.
        """
        unknown = set(values) - set(PER_MODEL_FIELDS)
        if unknown:
            raise KeyError(f"not remembered per model: {', '.join(sorted(unknown))}")
        merged = dataclasses.replace(self.model, **values)  # checks every value and the rules
        own = {k: getattr(merged, k) for k in PER_MODEL_FIELDS if getattr(merged, k) != getattr(self.model, k)}
        per_model = {p: v for p, v in self.per_model.items() if p != path}
        if own:
            per_model[path] = own
        return dataclasses.replace(self, per_model=per_model)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, strict: bool = False, repaired: list[InvalidSetting] | None = None
    ) -> Settings:
        """Build settings from nested dicts such as ``to_dict()`` returns.

        Unknown keys are ignored and a missing value takes its default. A value that does
        not fit its field, or breaks a rule between fields (a quantised KV cache without
        flash attention), is repaired: its default takes its place.

        Args:
            data: ``{"model": {"n_ctx": 8192, ...}, ...}``.
            strict: Raise on a bad value instead of repairing it.
            repaired: Receives one InvalidSetting per value repaired (for a notice).

        Raises:
            InvalidSetting: With ``strict``, for the first value that does not fit.
        """
        sections: dict[str, Section] = {}
        for name, section in SECTIONS.items():
            stored = data.get(name)
            stored = stored if isinstance(stored, Mapping) else {}
            values: dict[str, Any] = {}
            for item in dataclasses.fields(section):  # type: ignore[arg-type]
                if item.name not in stored:
                    continue
                try:
                    values[item.name] = section.check_field(item.name, stored[item.name])
                except InvalidSetting as exc:
                    _repair(exc, strict, repaired)
            sections[name] = _build(section, values, strict, repaired)
        model = sections["model"]
        assert isinstance(model, ModelSettings)
        per_model = _per_model_from(data.get(PER_MODEL), model, strict, repaired)
        return cls(**sections, per_model=per_model)  # type: ignore[arg-type]

    def replace(self, key: str, value: Any) -> Settings:
        """Return a copy with one setting changed.

        Args:
            key: Dotted name, such as ``"model.n_ctx"``.
            value: The new value.

        Raises:
            KeyError: No such setting.
            InvalidSetting: The value does not fit the setting or its rules.
        """
        return self.with_values({key: value})

    def with_values(self, values: Mapping[str, Any]) -> Settings:
        """Return a copy with several settings changed at once, so a rule between fields
        (a quantised KV cache needs flash attention) sees them all together.

        Raises:
            KeyError: No such setting.
            InvalidSetting: A value does not fit its setting, or the result breaks a rule.
        """
        changes: dict[str, dict[str, Any]] = {}
        for key, value in values.items():
            section_name, _, name = key.partition(".")
            section = getattr(self, section_name, None) if section_name in SECTIONS else None
            if section is None or name not in {f.name for f in dataclasses.fields(section)}:
                raise KeyError(f"no setting named {key!r}")
            changes.setdefault(section_name, {})[name] = value
        new = {name: dataclasses.replace(getattr(self, name), **fields) for name, fields in changes.items()}
        return dataclasses.replace(self, **new)

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


def _model_with(model: ModelSettings, own: Mapping[str, Any]) -> ModelSettings:
    """`model` with a file's own values; one that breaks a rule with today's defaults (a
    quantised KV cache once flash attention is off for every model) gives way to the default."""
    return dataclasses.replace(model, **_fitting(
        model, own, lambda exc: log.warning("settings: %s for a model file; using the default", exc)))


def _fitting(model: ModelSettings, own: Mapping[str, Any], drop: Callable[[InvalidSetting], None]) -> dict[str, Any]:
    """A model file's own values less those that break a rule together with `model`'s (the others
    being today's defaults): each such break is told to `drop`, and its value gives way."""
    values = dict(own)
    while values:
        try:
            dataclasses.replace(model, **values)
            return values
        except InvalidSetting as exc:
            name = exc.key.partition(".")[2]
            if name not in values:
                raise
            drop(exc)
            del values[name]
    return values


def _per_model_from(
    stored: Any, model: ModelSettings, strict: bool, repaired: list[InvalidSetting] | None
) -> dict[str, dict[str, Any]]:
    """The per-model values read from a file, each checked as the model section's are."""
    if not isinstance(stored, Mapping):
        if stored is not None:
            _repair(InvalidSetting(PER_MODEL, "must map model files to their settings"), strict, repaired)
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path, values in stored.items():
        if not isinstance(path, str) or not path or not isinstance(values, Mapping):
            _repair(InvalidSetting(PER_MODEL, f"{str(path)[:80]!r} is not a model file with its settings"),
                    strict, repaired)
            continue
        own: dict[str, Any] = {}
        for name in PER_MODEL_FIELDS:
            if name in values:
                try:
                    own[name] = ModelSettings.check_field(name, values[name])
                except InvalidSetting as exc:
                    _repair(exc, strict, repaired)
        own = _fitting(model, own, lambda exc: _repair(exc, strict, repaired))
        if own:
            out[path] = own
    return out


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def _repair(exc: InvalidSetting, strict: bool, repaired: list[InvalidSetting] | None) -> None:
    if strict:
        raise exc
    log.warning("settings: %s; using the default", exc)
    if repaired is not None:
        repaired.append(exc)


def _build(
    section: type[Section], values: dict[str, Any], strict: bool, repaired: list[InvalidSetting] | None
) -> Section:
    """The section from checked values; a broken rule resets the field it names, until none is."""
    for _ in range(len(values) + 1):
        try:
            return section(**values)
        except InvalidSetting as exc:
            name = exc.key.partition(".")[2]
            if name not in values:  # a rule the defaults break: a bug, not a file to repair
                raise
            _repair(exc, strict, repaired)
            del values[name]
    raise AssertionError("unreachable: every stored value was reset")


def keys(sections: Iterable[type[Section]] = SECTIONS.values()) -> list[str]:
    """Every dotted key of the given sections, in order."""
    return [f"{s.NAME}.{f.name}" for s in sections for f in dataclasses.fields(s)]  # type: ignore[arg-type]
