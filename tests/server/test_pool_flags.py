"""prefill serve's pool flags as the pool takes them (no model loads here)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from prefill.commands.errors import CliError
from prefill.commands.serve import pool_limits, split_aliases, stem_aliases
from prefill.engine.settings import LoadSettings
from prefill.pool.catalogue import ModelEntry

CPU = LoadSettings(n_gpu_layers="none")


def _args(**kw: object) -> argparse.Namespace:
    base = {"max_models": 0, "ttl": "60m", "memory_budget": ""}
    return argparse.Namespace(**{**base, **kw})


def test_model_alone_has_no_budget_unless_one_is_given() -> None:
    assert pool_limits(_args(), CPU, one_model=True).budget == 0  # today's server: llama.cpp judges the fit
    assert pool_limits(_args(), CPU).budget > 0  # a folder: what this machine has, less a margin
    assert pool_limits(_args(memory_budget="8G"), CPU, one_model=True).budget == 8 << 30


def test_ttl_and_count() -> None:
    limits = pool_limits(_args(ttl="10m", max_models=2, memory_budget="none"), CPU)
    assert (limits.ttl_s, limits.max_models, limits.budget) == (600, 2, 0)
    assert pool_limits(_args(ttl="never"), CPU).ttl_s is None
    with pytest.raises(CliError, match="--ttl"):
        pool_limits(_args(ttl="later"), CPU)
    with pytest.raises(CliError, match="--memory-budget"):
        pool_limits(_args(memory_budget="lots"), CPU)
    with pytest.raises(CliError, match="--max-models"):
        pool_limits(_args(max_models=-1), CPU)


def test_aliases_and_the_model_id() -> None:
    assert split_aliases(["mine", "gpt-4o=a.gguf"]) == ("mine", (("gpt-4o", "a.gguf"),))
    with pytest.raises(CliError, match="NAME=ID"):
        split_aliases(["=a.gguf"])


def test_a_folder_s_models_answer_to_their_names_without_gguf() -> None:
    """The id --model FILE serves a model by (its name without .gguf) finds it in a folder too; a name
    already taken by another model or an alias is left to it."""
    models = [ModelEntry(n, Path(n), 1) for n in ("a.gguf", "b.gguf", "b")]
    assert stem_aliases(models, ()) == (("a", "a.gguf"),)
    assert stem_aliases(models, (("a", "b.gguf"),)) == ()
