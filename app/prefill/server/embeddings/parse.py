"""The door for the bodies of POST /v1/embeddings (OpenAI's) and POST /v1/rerank (llama.cpp's, after
Jina's): typed fields, each fault a 400 naming the field. The bounds on the inputs' number and size are
the core's (core.py `check_inputs`), so every dialect keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from prefill.server.embeddings.core import Input
from prefill.server.errors import bad_request
from prefill.server.fields import get_bool, get_int, unicode_text

EncodingFormat = Literal["float", "base64"]
_INPUT_SHAPES = "a text, a list of texts, a list of token ids, or a list of lists of token ids"


@dataclass(frozen=True)
class EmbeddingsBody:
    inputs: list[Input]
    encoding_format: EncodingFormat = "float"
    dimensions: int | None = None
    truncate: bool = False  # cut inputs longer than the model's context (ours: OpenAI refuses them)


@dataclass(frozen=True)
class RerankBody:
    query: str
    documents: list[str]
    top_n: int | None = None  # None: every document
    return_documents: bool = False  # each result carries its document's text (Jina's and Cohere's field)
    truncate: bool = False


def parse_embeddings(obj: dict[str, Any]) -> EmbeddingsBody:
    """OpenAI's embeddings body: `input`, `encoding_format`, `dimensions` (`user` is read and ignored);
    and `truncate`, this server's own."""
    raw = obj.get("encoding_format")
    fmt: EncodingFormat = "base64" if raw == "base64" else "float"
    if raw is not None and raw != fmt:
        raise bad_request("'encoding_format' is \"float\" or \"base64\".", "encoding_format")
    return EmbeddingsBody(_inputs(obj.get("input")), fmt, get_int(obj, "dimensions", None, 1),
                          get_bool(obj, "truncate", False))


def _inputs(raw: object) -> list[Input]:
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not raw:
        raise bad_request(f"'input' is required: {_INPUT_SHAPES}.", "input")
    if all(isinstance(x, str) for x in raw):
        return list(raw)
    if all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
        return [raw]  # one token array
    if all(isinstance(x, list) for x in raw):
        return list(raw)  # token arrays: their ids are checked by the core, their range by the model
    raise bad_request(f"'input' must be {_INPUT_SHAPES}, one kind throughout.", "input")


def parse_rerank(obj: dict[str, Any]) -> RerankBody:
    """llama.cpp's rerank body: `query`, `documents` (texts, or objects with a `text`), `top_n`;
    `return_documents` and `truncate`."""
    query = obj.get("query")
    if not isinstance(query, str):
        raise bad_request("'query' is required: the text the documents are ranked against.", "query")
    unicode_text(query, "query")
    docs = obj.get("documents")
    if not isinstance(docs, list):
        raise bad_request("'documents' is required: a list of texts to rank against the query.", "documents")
    texts = []
    for i, d in enumerate(docs):
        if isinstance(d, dict):
            d = d.get("text")
        if not isinstance(d, str):
            raise bad_request(f"Document {i} is not a text (nor an object with a \"text\").", "documents")
        texts.append(d)
    return RerankBody(query, texts, get_int(obj, "top_n", None, 1), get_bool(obj, "return_documents", False),
                      get_bool(obj, "truncate", False))
