"""Model names as a person reads them, from real-world file, repository and header names."""

from __future__ import annotations

import pytest

from prefill.engine.gguf.projector_files import is_projector_name
from prefill.hub.model_names import (
    display_name,
    model_display_name,
    quantization,
    repository_of,
)

CASES = [
    # (file name, repository, general.name, what a person reads)
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "", "Smollm2 135M 8k Lc100K Mix1 Ep2", "SmolLM2 135M Instruct · Q4_1"),
    ("smollm2-135m-instruct-q8_0.gguf", "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF",
     "Smollm2 135M 8k Lc100K Mix1 Ep2", "SmolLM2 135M Instruct · Q8_0"),
    ("qwen2.5-7b-instruct-q4_k_m.gguf", "Qwen/Qwen2.5-7B-Instruct-GGUF", "qwen2.5-7b-instruct",
     "Qwen2.5 7B Instruct · Q4_K_M"),
    ("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf", "Qwen/Qwen2.5-7B-Instruct-GGUF", "",
     "Qwen2.5 7B Instruct · Q4_K_M"),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "", "Meta Llama 3.1 8B Instruct", "Meta Llama 3.1 8B Instruct · Q4_K_M"),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "",
     "Meta Llama 3.1 8B Instruct · Q4_K_M"),
    ("gemma-3-4b-it-qat-q4_0.gguf", "", "", "gemma 3 4B it qat · Q4_0"),
    ("gemma-3-4b-it-q4_0.gguf", "google/gemma-3-4b-it-qat-q4_0-gguf", "Gemma 3 4b It", "gemma 3 4B it qat · Q4_0"),
    ("Phi-3-mini-4k-instruct-q4.gguf", "microsoft/Phi-3-mini-4k-instruct-gguf", "Phi3", "Phi 3 mini 4K instruct · Q4"),
    ("mistral-7b-instruct-v0.2.Q5_K_M.gguf", "TheBloke/Mistral-7B-Instruct-v0.2-GGUF",
     "mistralai_mistral-7b-instruct-v0.2", "Mistral 7B Instruct v0.2 · Q5_K_M"),
    ("mistral-7b-instruct-v0.2.Q5_K_M.gguf", "", "", "mistral 7B instruct v0.2 · Q5_K_M"),
    ("Llama-3.2-3B-Instruct-IQ3_XXS.gguf", "", "", "Llama 3.2 3B Instruct · IQ3_XXS"),
    ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "unsloth/Qwen3-30B-A3B-GGUF", "Qwen3-30B-A3B", "Qwen3 30B A3B · UD-Q4_K_XL"),
    ("DeepSeek-R1-Distill-Qwen-1.5B-Q8_0.gguf", "", "DeepSeek R1 Distill Qwen 1.5B",
     "DeepSeek R1 Distill Qwen 1.5B · Q8_0"),
    ("tinyllama-1.1b-chat-v1.0.Q2_K.gguf", "", "tinyllama_tinyllama-1.1b-chat-v1.0", "tinyllama 1.1B chat v1.0 · Q2_K"),
    ("Mixtral-8x7B-Instruct-v0.1-Q3_K_S.gguf", "", "", "Mixtral 8x7B Instruct v0.1 · Q3_K_S"),
    ("ggml-model-f16.gguf", "", "Llama 2 7b Chat Hf", "Llama 2 7b Chat Hf · F16"),
    ("model.gguf", "", "Granite 3.1 2b Instruct", "Granite 3.1 2b Instruct"),
    ("model.gguf", "", "", "model"),
    ("gpt-oss-20b-mxfp4.gguf", "ggml-org/gpt-oss-20b-GGUF", "Gpt Oss 20b", "gpt oss 20B · MXFP4"),
    ("Qwen2.5-Coder-1.5B-Instruct-bf16.gguf", "", "", "Qwen2.5 Coder 1.5B Instruct · BF16"),
    ("bitnet_b1_58-large-TQ1_0.gguf", "", "", "bitnet b1 58 large · TQ1_0"),
    ("SmolVLM-256M-Instruct-Q8_0.gguf", "ggml-org/SmolVLM-256M-Instruct-GGUF", "SmolVLM 256M Instruct",
     "SmolVLM 256M Instruct · Q8_0"),
    ("Llama-3.2-1B-Instruct-Q4_K_M-imat.gguf", "", "", "Llama 3.2 1B Instruct · Q4_K_M"),
    ("nomic-embed-text-v1.5.Q4_K_M.gguf", "nomic-ai/nomic-embed-text-v1.5-GGUF", "nomic-embed-text-v1.5",
     "nomic embed text v1.5 · Q4_K_M"),
]


@pytest.mark.parametrize(("file_name", "repository", "general_name", "expected"), CASES)
def test_display_name(file_name: str, repository: str, general_name: str, expected: str) -> None:
    assert display_name(file_name, repository, general_name) == expected


def test_twenty_real_names_at_least() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize(("file_name", "expected"), [
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
    ("gemma-3-4b-it-qat-q4_0.gguf", "Q4_0"),
    ("Qwen2.5-7B-Instruct-GGUF.gguf", ""),
    ("qwen2.5-7b-instruct-q4_k_m-00002-of-00002.gguf", "Q4_K_M"),
    ("model-f16.gguf", "F16"),
])
def test_quantization(file_name: str, expected: str) -> None:
    assert quantization(file_name) == expected


@pytest.mark.parametrize("file_name", [
    "mmproj-SmolVLM-256M-Instruct-Q8_0.gguf", "mmproj-model-f16.gguf", "gemma-3-4b-it-MMPROJ-f16.gguf",
])
def test_projectors_are_told_apart(file_name: str) -> None:
    assert is_projector_name(file_name)  # the one rule, as the model picker applies it
    assert not is_projector_name("SmolVLM-256M-Instruct-Q8_0.gguf")


def test_repository_from_where_the_file_lies() -> None:
    cache = "/home/a/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct-GGUF/snapshots/abc123/q.gguf"
    assert repository_of(cache) == "Qwen/Qwen2.5-7B-Instruct-GGUF"
    assert repository_of("/models/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/x.gguf") == (
        "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert repository_of("/models/local/x.gguf") == ""
    assert repository_of("x.gguf") == ""
    assert model_display_name("/m/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q8_0.gguf",
                              "Smollm2 135M 8k Lc100K Mix1 Ep2") == "SmolLM2 135M Instruct · Q8_0"


def test_markup_in_a_name_is_kept_as_text() -> None:
    # Shown as plain text by the UI; the function neither strips nor interprets it.
    assert display_name("model.gguf", "", '<img src="/dev/zero">') == '<img src="/dev/zero">'
