"""An embedding model is refused, in words, wherever a model must write text: the chat engine, the
server's batch and a draft model, before llama.cpp loads it; and `prefill chat` says so in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.errors import DraftModelError, ModelLoadError
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.model_kind import is_embedding_model
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.settings import LoadSettings


def test_the_header_says_embedding(minilm_gguf: Path, minilm_reranker: Path) -> None:
    assert is_embedding_model(read_model_header(minilm_gguf))
    assert is_embedding_model(read_model_header(minilm_reranker))


@pytest.mark.parametrize("load", [
    lambda p: ChatEngine.load(p, LoadSettings(n_ctx=256)),
    lambda p: load_batch_model(p, LoadSettings(n_ctx=256), 2),
], ids=["chat engine", "server batch"])
def test_a_chat_loader_refuses_an_embedding_model(minilm_gguf: Path, load) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ModelLoadError, match="is an embedding model: it turns text into vectors"):
        load(minilm_gguf)


@pytest.mark.model
def test_a_draft_model_that_embeds_is_refused(minilm_gguf: Path, smollm2: Path) -> None:
    engine = ChatEngine.load(smollm2, LoadSettings(n_ctx=256))
    try:
        with pytest.raises(DraftModelError, match="is an embedding model"):
            engine.use_draft_model(minilm_gguf)
    finally:
        engine.close()


def test_prefill_chat_says_it_in_one_line(minilm_gguf: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "prefill", "chat", "--model", str(minilm_gguf), "--prompt", "hello"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "is an embedding model" in run.stderr and "Traceback" not in run.stderr
    assert run.stdout == ""
