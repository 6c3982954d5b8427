"""Property-based fuzz of the embeddings doors (`prefill.server.embeddings.parse` for /v1/embeddings and
/v1/rerank, and the inputs' bounds every dialect's embedding route keeps, `core.check_inputs`): whatever a
client sends, the door returns checked inputs or raises an `ApiError` with a 4xx status and a worded
message; nothing else escapes. What it lets through is what a tokenizer takes: texts of valid Unicode,
token ids that are integers, at least one input and no empty one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given

from prefill.server.embeddings.core import check_inputs
from prefill.server.embeddings.parse import parse_embeddings, parse_rerank
from prefill.server.errors import ApiError
from prefill.server.fields import parse_json
from tests.json_fuzz import FUZZ, GONE, mutated
from tests.json_fuzz import json_values as json_values_of

json_values = json_values_of([0, 1, -1, 2, 384, 2**31, 2**63, 1e308, -0.0, 1.5])
EMBED = {"model": "all-MiniLM-L6-v2", "input": ["A cat.", "A dog."], "encoding_format": "float",
         "dimensions": 384, "truncate": False, "user": "someone"}
RERANK = {"model": "minilm-rank", "query": "Which animal?", "documents": ["A cat.", {"text": "A dog."}],
          "top_n": 1, "return_documents": True, "truncate": False}
EMBED_PATHS: list[tuple[Any, ...]] = [(k,) for k in EMBED] + [("input", 0), ("input", 1)]
RERANK_PATHS: list[tuple[Any, ...]] = [(k,) for k in RERANK] + [("documents", 0), ("documents", 1),
                                                                 ("documents", 1, "text")]


def _refused(e: ApiError) -> None:
    assert 400 <= e.status < 500 and e.message.strip(), (e.status, e.message)
    json.dumps(e.body()).encode("utf-8")


def _embeddings_door(obj: Any) -> None:
    try:
        body = parse_embeddings(obj)
        check_inputs(body.inputs)
    except ApiError as e:
        _refused(e)
        return
    assert body.inputs and body.encoding_format in ("float", "base64")
    for x in body.inputs:
        if isinstance(x, str):
            assert x and x.encode("utf-8")
        else:
            assert x and all(type(t) is int for t in x)
    assert body.dimensions is None or (type(body.dimensions) is int and body.dimensions >= 1)


def _rerank_door(obj: Any) -> None:
    try:
        body = parse_rerank(obj)
        check_inputs(body.documents, "documents")
        if not body.query:
            return  # the core refuses an empty query before any model is leased
        body.query.encode("utf-8")
    except ApiError as e:
        _refused(e)
        return
    assert body.documents and all(isinstance(d, str) and d and d.encode("utf-8") for d in body.documents)
    assert body.top_n is None or (type(body.top_n) is int and body.top_n >= 1)


@FUZZ
@given(json_values)
@example(["\ud800"])
@example([[1, 2], "a"])
@example([[True]])
@example([[]])
def test_any_input_to_embeddings_is_inputs_or_a_4xx(value: Any) -> None:
    _embeddings_door({**EMBED, "input": value})
    _embeddings_door(value if isinstance(value, dict) else {"input": value})


@FUZZ
@given(json_values)
def test_any_near_valid_embeddings_body_is_inputs_or_a_4xx(value: Any) -> None:
    for path in EMBED_PATHS:
        _embeddings_door(mutated(EMBED, path, value))
        _embeddings_door(mutated(EMBED, path, GONE))


@FUZZ
@given(json_values)
@example("\udfff")
@example({"text": "\ud800"})
def test_any_near_valid_rerank_body_is_documents_or_a_4xx(value: Any) -> None:
    for path in RERANK_PATHS:
        _rerank_door(mutated(RERANK, path, value))
        _rerank_door(mutated(RERANK, path, GONE))
    try:
        _rerank_door(parse_json(json.dumps(value).encode()))
    except ApiError:
        pass
