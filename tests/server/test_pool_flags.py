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


def test_a_folder_s_model_loads_with_the_settings_the_window_keeps_for_it(tmp_path: Path, capsys) -> None:
    """What the person set for one model in the window (Settings → this model only) is what a load on
    demand uses for it; the other models keep the server's flags."""
    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.commands.own_settings import own_settings
    from prefill.commands.serve import folder_models
    from prefill.pool.chat_model import ChatLoad
    from prefill.store.app_settings import Settings
    from prefill.store.settings_file import SettingsFile

    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("a", "b"):
        write_tiny_llama(folder / f"{name}.gguf", n_vocab=256, n_embd=32, n_layer=1, n_ff=64)
    kept = SettingsFile(tmp_path / "settings.json")
    kept.save(Settings().with_model_overrides(str(folder / "a.gguf"), {"n_ctx": 512, "kv_type": "q8_0"}))
    server = LoadSettings(n_gpu_layers="none", n_ctx=2048)
    entries = {e.id: e for e in folder_models(str(folder), "auto", own_settings(server, kept))}
    a, b = entries["a.gguf"], entries["b.gguf"]
    assert a.settings is not None and (a.settings.n_ctx, a.settings.kv_type) == (512, "q8_0")
    assert a.settings.n_gpu_layers == "none"  # the rest from the server's flags
    assert b.settings is None and ChatLoad(server, 1).settings_for(b).n_ctx == 2048
    assert ChatLoad(server, 1).settings_for(a).n_ctx == 512

    (tmp_path / "unreadable").mkdir()  # a settings "file" that cannot be read: said, and nothing taken
    none = own_settings(server, SettingsFile(tmp_path / "unreadable"))
    assert none(folder / "a.gguf") is None and "per-model settings are not used" in capsys.readouterr().err


def test_the_prompt_cache_flag_and_its_bound_in_the_models_memory(tmp_path: Path) -> None:
    """--cache-ram is MiB per chat model (0: off), and the bound counts whole in the model's memory before
    it loads, so the pool's budget holds it; without the flag, as much as the slots' KV cache."""
    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.commands.serve import cache_ram
    from prefill.pool.catalogue import entry_for_file
    from prefill.pool.chat_model import ChatLoad
    from prefill.server.lifecycle import ServeOptions

    assert cache_ram("0") == 0 and cache_ram("64") == 64 << 20
    for bad in ("-1", "lots", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            cache_ram(bad)
    entry = entry_for_file(write_tiny_llama(tmp_path / "tiny.gguf"))
    plain = ChatLoad(CPU, 2).estimate(entry)
    assert plain.prompt_cache == plain.kv > 0  # the default: the slots' KV cache again
    sized = ServeOptions(entry.path, CPU, parallel=2, prompt_cache=64 << 20).chat_load().estimate(entry)
    assert sized.prompt_cache == 64 << 20 and sized.total == plain.total - plain.kv + (64 << 20)
    assert sized.as_dict()["prompt_cache"] == 64 << 20
    assert ChatLoad(CPU, 2, prompt_cache=0).estimate(entry).total == plain.total - plain.kv
