"""What a model file is for, read from its header: writing text, or turning text into vectors.

llama.cpp loads an embedding model (an encoder such as BERT, or a decoder whose header names a
pooling) as readily as a chat model, and a chat then "answers" with whatever the pooled outputs
sample into. The header says which it is: a pooling type other than none (`{arch}.pooling_type`),
or attention that is not causal (`{arch}.attention.causal` false).
"""

from __future__ import annotations

from prefill.engine.gguf.header import GGUFError, GGUFHeader

POOLING_NONE = 0  # LLAMA_POOLING_TYPE_NONE: every token's output kept, as a chat model's
POOLING_RANK = 4  # LLAMA_POOLING_TYPE_RANK: a reranker's classification head scores each input


def is_causal(header: GGUFHeader) -> bool:
    """Whether llama.cpp runs the model causally: unless its header says otherwise."""
    return header.arch_value("attention.causal", True) is not False


def pooling_of(header: GGUFHeader) -> int | None:
    """The header's pooling type, or None where it names none."""
    v = header.arch_value("pooling_type")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def is_embedding_model(header: GGUFHeader) -> bool:
    pooling = pooling_of(header)
    return (pooling is not None and pooling != POOLING_NONE) or not is_causal(header)


def is_rerank_model(header: GGUFHeader) -> bool:
    """A reranker: its header pools by rank (a classification head over a query and document pair)."""
    return pooling_of(header) == POOLING_RANK


def check_chat_model(header: GGUFHeader, name: str) -> None:
    """Refuse an embedding model where a model must write text.

    Raises:
        GGUFError: the header describes an embedding or reranking model.
    """
    if is_embedding_model(header):
        raise GGUFError(f"{name} is an embedding model: it turns text into vectors for search and cannot "
                        "write an answer. Choose a chat model to talk to; an embedding model serves "
                        "embeddings and documents.")
