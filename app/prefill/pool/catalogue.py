"""What the pool may load: one `ModelEntry` per model, checked at the door before it is offered.

The ids are the model library's names (`hub/library.py`: a file's path in the models folder,
`hf-cache:…`, `bundled:…`); the caller builds the entries (the pool knows no library), and
`checked` runs every usable one through the GGUF guard (`engine/gguf/guard.py`), so a file
llama.cpp would abort on is listed as unusable, with the reason, and never loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.header import GGUFError
from prefill.engine.gguf.model_kind import is_embedding_model, is_rerank_model
from prefill.engine.settings import LoadSettings

# What a resident model serves. "chat" is a BatchScheduler's slots; "embedding" (vectors) and "rerank"
# (a score per document) are an engine/embed EmbeddingModel (pool/embed_model.py). Each kind has a
# loader of its own, and the pool treats every resident alike (memory, LRU, TTL, pins).
Kind = Literal["chat", "embedding", "rerank"]
KIND_NAMES: dict[Kind, str] = {"chat": "a chat model", "embedding": "an embedding model",
                               "rerank": "a reranking model"}


@dataclass(frozen=True)
class ModelEntry:
    """A model the pool may load.

    Attributes:
        id: its name in the API (the library's name, or the file's stem for `--model`).
        path: the file llama.cpp opens (the first part of a split set).
        size: bytes on disk, every part.
        projector: a vision model's mmproj, loaded with it (None: text only).
        kind: what it serves once loaded.
        settings: its own load settings; None takes the pool's.
        unusable: why it cannot be loaded ("" when it can): a header the guard refused.
    """

    id: str
    path: Path
    size: int = 0
    projector: Path | None = None
    kind: Kind = "chat"
    settings: LoadSettings | None = None
    unusable: str = ""


def entry_for_file(path: Path, model_id: str = "", projector: Path | None = None) -> ModelEntry:
    """One model file as an entry (`prefill serve --model`): its id the file's name without .gguf."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return ModelEntry(model_id or path.name.removesuffix(".gguf"), path, size, projector)


def checked(entries: Iterable[ModelEntry]) -> list[ModelEntry]:
    """The entries, each usable one's header read through the guard: a refusal marks it unusable; a
    header that pools by rank (a classification head) makes it kind "rerank", and any other embedding
    model's (a pooling, or attention that is not causal) kind "embedding"."""
    out = []
    for e in entries:
        if not e.unusable:
            try:
                header = read_model_header(e.path)
                if is_rerank_model(header):
                    e = replace(e, kind="rerank")
                elif is_embedding_model(header):
                    e = replace(e, kind="embedding")
            except GGUFError as err:
                e = replace(e, unusable=str(err))
            except OSError as err:
                e = replace(e, unusable=f"cannot read the file ({err.__class__.__name__})")
        out.append(e)
    return out
