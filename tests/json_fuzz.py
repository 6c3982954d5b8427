"""Hypothesis strategies for what a JSON door may be handed, shared by the fuzz tests of the request
parser, the history importer and the settings files."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

# 300 examples in `make test`; the fast tier (tests/tiers.py sets PREFILL_FAST_TIER before collection) tries 50.
FUZZ = settings(max_examples=50 if os.environ.get("PREFILL_FAST_TIER") == "1" else 300, deadline=None)

# Text as json.loads can return it: any code point, lone surrogates too (JSON spells them "\ud800").
texts = st.text(st.characters(codec=None), max_size=12) | st.text(st.characters(categories=["Cs"]), max_size=3)


def numbers(edges: Sequence[float]) -> st.SearchStrategy[Any]:
    """Integers (past any float too, as JSON integers may be), floats with nan and the infinities
    (json.loads reads NaN and Infinity), and the door's own edge values."""
    return st.one_of(st.integers(), st.integers(min_value=-(10**400), max_value=10**400), st.floats(),
                     st.sampled_from(list(edges)))


def json_values(edges: Sequence[float]) -> st.SearchStrategy[Any]:
    """Any JSON value, nested a little."""
    scalars = st.none() | st.booleans() | numbers(edges) | texts
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
                        max_leaves=12)


@dataclass(frozen=True)
class Raw:
    """JSON text spliced into a document as it is: what json.dumps would not write (1e999, read back
    as infinity) or cannot (a list nested past the recursion limit, which deepcopy could not copy either)."""

    text: str


def raw_values(extra: Sequence[str]) -> st.SearchStrategy[Raw]:
    return st.integers(1, 1200).map(lambda n: Raw("[" * n + "]" * n)) | st.sampled_from([Raw(t) for t in extra])


GONE = object()  # the field is removed instead of replaced


def mutated(base: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of `base` with the value at `path` replaced by `value` (or removed: GONE)."""
    doc = copy.deepcopy(base)
    holder = doc
    for step in path[:-1]:
        holder = holder[step]
    if value is GONE:
        holder.pop(path[-1]) if isinstance(holder, list) else holder.pop(path[-1], None)
    else:
        holder[path[-1]] = value
    return doc


def encode(doc: Any) -> bytes:
    """The document as JSON bytes, Raw values spliced in; ensure_ascii writes a lone surrogate as its
    \\ud800 escape, and NaN and Infinity go through."""
    raws: list[str] = []

    def keep(raw: Raw) -> str:
        raws.append(raw.text)
        return f"<raw {len(raws) - 1}>"

    text = json.dumps(doc, default=keep)
    return re.sub(r'"<raw (\d+)>"', lambda m: raws[int(m[1])], text).encode("ascii")
