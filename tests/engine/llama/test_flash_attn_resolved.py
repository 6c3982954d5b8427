"""Whether flash attention is on, as llama.cpp resolved it at context creation (its log says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.engine.llama.runtime import context_error, flash_attn_resolved
from prefill.engine.settings import LoadSettings

# Lines as this build of llama.cpp logs them.
AUTO_ON = "llama_context: flash_attn            = auto\nresolve_fused_ops: Flash Attention enabled\n"
FORCED_ON = ("llama_init_from_model: enabling flash_attn since it is required for quantized V cache\n"
             "llama_context: flash_attn            = enabled\n")


@pytest.mark.parametrize(("setting", "log", "on"), [
    ("auto", AUTO_ON, True),
    ("auto", FORCED_ON, True),
    ("auto", "llama_context: flash_attn            = auto\nresolve_fused_ops: Flash Attention disabled\n", False),
    ("auto", "llama_context: flash_attn            = auto\n", False),  # nothing said: the safe side
    ("on", "llama_context: flash_attn            = enabled\n", True),
    ("off", "llama_context: flash_attn            = disabled\n", False),
    ("on", "", True),
    ("off", "", False),
])
def test_the_log_says_what_llama_cpp_decided(setting: str, log: str, on: bool) -> None:
    assert flash_attn_resolved(setting, log) is on


def test_a_quantised_cache_refused_without_flash_attention_is_worded() -> None:
    log = "llama_init_from_model: quantized V cache was requested, but this requires Flash Attention\n"
    said = context_error(LoadSettings(kv_type="q8_0"), log)
    assert "q8_0 KV cache needs flash attention" in said and "f16" in said


def test_the_bundled_model_on_the_cpu_resolves_auto_to_on(smollm2: Path) -> None:
    from prefill.engine.llama.runtime import LlamaRuntime

    rt = LlamaRuntime(smollm2, LoadSettings(n_ctx=256, n_batch=64, n_threads=1), 0, 31)
    try:
        assert rt.settings.flash_attn == "auto" and rt.flash_attn_on
    finally:
        rt.close()
    off = LlamaRuntime(smollm2, LoadSettings(n_ctx=256, n_batch=64, n_threads=1, flash_attn="off"), 0, 31)
    try:
        assert not off.flash_attn_on
    finally:
        off.close()
