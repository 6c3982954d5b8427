"""Property-based fuzz of the history import door (`parse_import`): whatever a file holds, it comes
out as a checked `ImportFile` or as one worded `ImportRejected`; nothing else escapes. What passes
is what the store can write and the exporter can write back out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from prefill.store.archive import ArchivedConversation, ArchivedMessage
from prefill.store.errors import ImportRejected
from prefill.store.history_export import to_json_text
from prefill.store.history_import import ImportFile, parse_import
from prefill.store.records import ROLES, AnswerVersion
from tests.json_fuzz import FUZZ, GONE, Raw, encode, mutated
from tests.json_fuzz import json_values as json_values_of
from tests.json_fuzz import raw_values as raw_values_of

FILE = Path("chats.json")
WEBUI_EXPORT = Path(__file__).parent / "data" / "llamacpp_webui_export.json"
json_values = json_values_of([0, -1, 1e11, 1e14, 1e12 + 1, 2**63, 1e308, 5e-324, -0.0])
raw_values = raw_values_of(["1e999", "-1e400", "1E+309", '{"a": [1e999]}'])


def _prefill_export() -> dict[str, Any]:
    """A valid file, as the exporter writes it."""
    messages = (
        ArchivedMessage("system", "Be brief.", 1_700_000_001.0),
        ArchivedMessage("user", "How far is the Moon?", 1_700_000_002.0),
        ArchivedMessage("assistant", "About 384,400 km.", 1_700_000_003.5, reasoning="Mean distance.",
                        finish_reason="stop", figures={"prompt_tokens": 12, "decode_tps": 31.5}, complete=True,
                        versions=(AnswerVersion("Far.", "Guess.", "length", {"decode_tps": 30.0}, False),), version=1),
    )
    chats = (
        ArchivedConversation("c-1", "The Moon", 1_700_000_000.0, 1_700_000_003.5, system_prompt="Be brief.",
                             model="SmolLM2.gguf", settings={"sampling": {"temperature": 0.7}}, messages=messages),
        ArchivedConversation("c-2", "Empty", 1_700_000_010.0, 1_700_000_010.0),
    )
    doc: dict[str, Any] = json.loads(to_json_text(chats, 1_700_000_100.0))
    return doc


def _webui_export() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(WEBUI_EXPORT.read_text(encoding="utf-8"))
    return doc


CONV = ("conversations", 0)
MSG = (*CONV, "messages", 2)
PREFILL_PATHS: list[tuple[Any, ...]] = [
    ("format",), ("version",), ("exported_at",), ("conversations",), CONV, ("conversations", 1),
    *((*CONV, k) for k in ("id", "title", "created_at", "updated_at", "system_prompt", "model", "settings",
                           "messages")),
    (*CONV, "settings", "sampling"), (*CONV, "settings", "sampling", "temperature"), (*CONV, "messages", 0),
    *((*MSG, k) for k in ("role", "content", "reasoning", "created_at", "finish_reason", "figures", "complete")),
    (*MSG, "figures", "decode_tps"), ("conversations", 1, "id"), (*MSG, "version"), (*MSG, "versions"),
    *((*MSG, "versions", 0, k) for k in ("content", "reasoning", "finish_reason", "figures", "complete")),
    (*MSG, "versions", 0), (*MSG, "versions", 0, "figures", "decode_tps"),
]
NODE = (0, "messages", 4)
WEBUI_PATHS: list[tuple[Any, ...]] = [
    (0,), (1,), (0, "conv"), (0, "messages"), (0, "messages", 0), (1, "messages", 2),
    *((0, "conv", k) for k in ("id", "name", "lastModified", "currNode")),
    *((*NODE, k) for k in ("id", "convId", "type", "timestamp", "role", "content", "parent", "thinking",
                           "reasoningContent", "children", "extra", "timings", "model")),
    *((*NODE, "timings", k) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")),
    (0, "messages", 2, "extra", 0), (0, "messages", 1, "parent"), (0, "messages", 3, "id"), (1, "conv", "id"),
]
replacements = st.just(GONE) | json_values | raw_values
prefill_docs = st.builds(mutated, st.just(_prefill_export()), st.sampled_from(PREFILL_PATHS), replacements)
webui_docs = st.builds(mutated, st.just(_webui_export()), st.sampled_from(WEBUI_PATHS), replacements)


files = st.one_of(
    st.binary(max_size=64),
    json_values.map(encode),
    prefill_docs.map(encode),
    webui_docs.map(encode),
    prefill_docs.map(lambda d: b"\xef\xbb\xbf" + encode(d)),  # a byte order mark
    st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),  # nested past the recursion limit
    st.integers(4000, 6000).map(lambda n: b'{"format": ' + b"9" * n + b"}"),  # past int's digit limit
    st.sampled_from([b'{"format": NaN}', b"[Infinity]", b'{"conv": "\xff"}', b"\xff\xfe[\x00]\x00"]),
)


# --- the property ---------------------------------------------------------------------------
def _check_file(checked: ImportFile) -> None:
    """What the door lets through, the store can write."""
    assert isinstance(checked, ImportFile) and checked.source in ("prefill", "llama.cpp web UI")
    assert checked.left_out >= 0
    for conv in checked.conversations:
        for text in (conv.uid, conv.title, conv.system_prompt, conv.model):
            assert isinstance(text, str)
            text.encode("utf-8")
        assert conv.uid.strip()
        for when in (conv.created_at, conv.updated_at):
            assert type(when) is float and math.isfinite(when) and when >= 0
        json.dumps(dict(conv.settings), allow_nan=False)
        for m in conv.messages:
            assert m.role in ROLES and type(m.complete) is bool
            for text in (m.content, m.reasoning, m.finish_reason or ""):
                assert isinstance(text, str)
                text.encode("utf-8")
            assert type(m.created_at) is float and math.isfinite(m.created_at) and m.created_at >= 0
            json.dumps(dict(m.figures), allow_nan=False)  # no NaN or Infinity: a re-import refuses them
            assert type(m.version) is int and 0 <= m.version <= len(m.versions)
            assert not m.versions or m.role == "assistant"
            for v in m.versions:
                assert isinstance(v.content, str) and isinstance(v.reasoning, str) and type(v.complete) is bool
                (v.content + v.reasoning + (v.finish_reason or "")).encode("utf-8")
                json.dumps(dict(v.figures), allow_nan=False)


def _door(data: bytes) -> ImportFile | None:
    try:
        checked = parse_import(data, FILE)
    except ImportRejected as e:
        assert e.path == FILE and isinstance(e.reason, str) and e.reason.strip()
        str(e).encode("utf-8")  # the window shows it, a log may write it
        return None
    _check_file(checked)
    return checked


@FUZZ
@given(files)
@example(encode(mutated(_webui_export(), (*NODE, "timings", "prompt_n"), 10**400)))  # isfinite overflowed
@example(encode(mutated(_prefill_export(), (*CONV, "settings", "sampling"), Raw("[" * 990 + "]" * 990))))
def test_any_file_is_an_import_or_a_worded_refusal(data: bytes) -> None:
    _door(data)


@FUZZ
@given(json_values)
def test_any_json_value_is_an_import_or_a_worded_refusal(value: Any) -> None:
    _door(encode(value))
    _door(encode({"format": "prefill-history", "version": 1, "conversations": value}))
    _door(encode({"conv": value, "messages": value}))


def _with_raw(doc: Any, old: str, new: str) -> bytes:
    """The file with one value written as JSON text that json.dumps would not write."""
    text = encode(doc).decode("ascii")
    assert text.count(old) == 1
    return text.replace(old, new).encode("ascii")


@FUZZ
@given(prefill_docs.map(encode))
@example(encode(mutated(_prefill_export(), (*MSG, "figures", "decode_tps"), math.inf)))
@example(_with_raw(_prefill_export(), '"decode_tps": 31.5', '"decode_tps": 1e999'))  # read as inf, kept
@example(_with_raw(_prefill_export(), '"temperature": 0.7', '"temperature": -1e400'))
def test_a_near_valid_prefill_export_is_an_import_or_a_worded_refusal(data: bytes) -> None:
    _door(data)


@FUZZ
@given(webui_docs)
@example(mutated(_webui_export(), (*NODE, "timings", "predicted_ms"), 5e-324))  # a rate of infinity
def test_a_near_valid_webui_export_is_an_import_or_a_worded_refusal(doc: list[dict[str, Any]]) -> None:
    _door(encode(doc))


def test_the_unchanged_files_import() -> None:
    ours = _door(encode(_prefill_export()))
    assert ours is not None and len(ours.conversations) == 2 and len(ours.conversations[0].messages) == 3
    theirs = _door(encode(_webui_export()))
    assert theirs is not None and len(theirs.conversations) == 2


def test_nesting_at_every_depth_is_an_import_or_a_worded_refusal() -> None:
    """Every depth up to past the recursion limit, where json.loads gives up: just under it, a
    settings or figures mapping is read whole and encoded again deeper in the stack."""
    for depth in range(1, 1100):
        nested = "[" * depth + "]" * depth
        _door(_with_raw(_prefill_export(), '"temperature": 0.7', f'"temperature": {nested}'))
        _door(_with_raw(_prefill_export(), '"decode_tps": 31.5', f'"decode_tps": {nested}'))


# --- what imports, exports and imports again, the same --------------------------------------
@FUZZ
@given(st.one_of(prefill_docs, webui_docs))
@example(mutated(_webui_export(), (*NODE, "timings", "predicted_ms"), 5e-324))
def test_what_imports_exports_and_imports_again(doc: Any) -> None:
    first = _door(encode(doc))
    if first is None:
        return
    again = _door(to_json_text(first.conversations, 1_700_000_200.0).encode("utf-8"))
    assert again is not None and again.conversations == first.conversations
