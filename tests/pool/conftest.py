"""Real models for the pool: the bundled SmolLM2 and tiny models of other shapes and vocabularies
written by the project's writer (`prefill.bench.tiny_model`), in one folder as a library holds them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# name -> (n_vocab, n_embd, n_layer, n_ff): different vocabularies and shapes
TINY_SHAPES = {"tiny-a": (32000, 64, 2, 128), "tiny-b": (8000, 128, 3, 256), "tiny-c": (16000, 96, 2, 192)}
SAME = (4000, 64, 2, 128)  # the budget test's three: one size, so "a budget two fit" is exact


@pytest.fixture(scope="session")
def models_folder(tmp_path_factory: pytest.TempPathFactory, smollm2: Path) -> Path:
    """SmolLM2 and the three tiny ones of other shapes, in a folder of their own."""
    from prefill.bench.tiny_model import write_tiny_llama

    folder = tmp_path_factory.mktemp("library")
    for i, (name, (n_vocab, n_embd, n_layer, n_ff)) in enumerate(TINY_SHAPES.items()):
        write_tiny_llama(folder / f"{name}.gguf", n_layer=n_layer, n_embd=n_embd, n_vocab=n_vocab, n_ff=n_ff,
                         seed=i, context_length=4096, weight_scale=0.2)
    shutil.copyfile(smollm2, folder / "smollm2.gguf")
    return folder


@pytest.fixture(scope="session")
def same_size_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prefill.bench.tiny_model import write_tiny_llama

    folder = tmp_path_factory.mktemp("same")
    n_vocab, n_embd, n_layer, n_ff = SAME
    for i, name in enumerate(("one", "two", "three")):
        write_tiny_llama(folder / f"{name}.gguf", n_layer=n_layer, n_embd=n_embd, n_vocab=n_vocab, n_ff=n_ff,
                         seed=i, context_length=4096)
    return folder
