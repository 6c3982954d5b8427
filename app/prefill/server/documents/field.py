"""The `documents` field, one shape in every dialect: a collection's name, or an object saying how.

    "documents": "notes"
    "documents": {"collection": "notes", "mode": "auto" | "passages" | "tool", "rerank": true | false | "MODEL"}

`mode` "passages" puts the passages found for the last user message before it; "tool" gives the model a
`search_documents` tool over the collection, which the server runs; "auto" (the default) is "tool" when
the request offers tools of its own, else "passages". `rerank`: true (the default) reranks with the pool's
reranking model when it has one, false never, a name with that model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from prefill.server.errors import bad_request
from prefill.server.fields import unicode_text

Mode = Literal["auto", "passages", "tool"]
MODES: tuple[Mode, ...] = ("auto", "passages", "tool")
KEYS = frozenset({"collection", "mode", "rerank"})
MAX_NAME = 256


@dataclass(frozen=True)
class DocumentsAsked:
    """What a request asks of a collection (checked).

    Attributes:
        collection: its name, as `prefill docs ls` lists it.
        mode: "auto", "passages" or "tool" (see the module's words).
        rerank: True: the pool's reranker if there is one; False: none; a string: that model.
    """

    collection: str
    mode: Mode = "auto"
    rerank: bool | str = True


def documents_field(obj: dict[str, Any]) -> DocumentsAsked | None:
    """The body's `documents` (None when it has none).

    Raises:
        ApiError: 400 naming the field, in words.
    """
    raw = obj.get("documents")
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"collection": raw}
    if not isinstance(raw, dict):
        raise bad_request("'documents' is a collection's name, or an object with its 'collection' (and 'mode', "
                          "'rerank').", "documents")
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise bad_request(f"'documents' has no field {unknown[0][:40]!r}: it takes 'collection', 'mode' and "
                          "'rerank'.", "documents")
    name = raw.get("collection")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise bad_request(f"'documents.collection' is a collection's name (1 to {MAX_NAME} characters).", "documents")
    mode = raw.get("mode", "auto")
    if mode not in MODES:
        raise bad_request("'documents.mode' is \"auto\", \"passages\" or \"tool\".", "documents")
    rerank = raw.get("rerank", True)
    if not isinstance(rerank, bool) and not (isinstance(rerank, str) and 0 < len(rerank) <= MAX_NAME):
        raise bad_request("'documents.rerank' is true, false or a reranking model's name.", "documents")
    if isinstance(rerank, str):
        rerank = unicode_text(rerank, "documents")
    return DocumentsAsked(unicode_text(name, "documents"), mode, rerank)
