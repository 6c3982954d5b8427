"""--flash-attn: auto (the default), on or off; a bare --flash-attn, as older versions took it, is on."""

from __future__ import annotations

import argparse

import pytest

from prefill.commands.errors import CliError
from prefill.commands.options import add_model_options, load_settings


def parse(*argv: str) -> str:
    p = argparse.ArgumentParser()
    add_model_options(p)
    return load_settings(p.parse_args(list(argv))).flash_attn


@pytest.mark.parametrize(("argv", "want"), [
    ((), "auto"), (("--flash-attn",), "on"), (("--flash-attn", "on"), "on"), (("--flash-attn", "off"), "off"),
    (("--flash-attn", "auto"), "auto"), (("--flash-attn", "--ctx", "512"), "on"),
])
def test_flash_attn_takes_a_word_or_stands_alone(argv: tuple[str, ...], want: str) -> None:
    assert parse(*argv) == want


def test_a_quantised_cache_needs_flash_attention_not_off() -> None:
    assert parse("--kv-type", "q8_0") == "auto"  # llama.cpp turns flash attention on for it
    with pytest.raises(CliError, match="--kv-type"):
        parse("--kv-type", "q8_0", "--flash-attn", "off")
