"""An embedding model as the documents' `Embedder`: engine/embed's `EmbeddingModel`, or anything shaped so.

Known by its shape (a name, `n_embd`, `embed(texts, truncate=…)`, `count_tokens(texts)`), so this package
needs nothing of llama.cpp's. The model's file name is its id: the bundled model's carries its checkpoint's
hash, so a different checkpoint is a different model and its collections are indexed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class EmbeddingModelLike(Protocol):
    @property
    def name(self) -> str: ...

    n_embd: int

    def embed(self, inputs: Sequence[Any], truncate: bool = False, normalize: bool = True) -> Any: ...

    def count_tokens(self, inputs: Sequence[Any]) -> list[int]: ...


class ModelEmbedder:
    """Passages and questions to vectors through an embedding model; longer inputs are cut to its context
    (the chunker keeps passages under it; a question longer than that is cut)."""

    def __init__(self, model: EmbeddingModelLike):
        self.model = model

    @property
    def model_id(self) -> str:
        return self.model.name

    @property
    def n_embd(self) -> int:
        return int(self.model.n_embd)

    def embed(self, texts: list[str]) -> list[list[float]]:
        rows = self.model.embed(texts, truncate=True)
        return [list(map(float, r)) for r in rows]

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as the model reads it (framing included)."""
        return self.model.count_tokens([text])[0]
