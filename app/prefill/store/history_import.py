"""The door for chat history files: Prefill's JSON export and llama.cpp's web UI export.

Everything in a file is checked here, before anything is written: the size, that it is
JSON, the shape and type of every field, text lengths, roles, times and duplicate ids.
Every fault becomes one ``ImportRejected`` naming where it is. What passes comes out as
``ArchivedConversation`` records that ``HistoryStore.import_conversations`` writes in one
transaction.

The llama.cpp web UI (``tools/server/webui``) exports ``{"conv": …, "messages": […]}`` or a
list of them. Its messages form a tree (``parent``, ``children``; edits and regenerations
are branches) under a hidden root; Prefill keeps the branch the web UI showed last
(``conv.currNode``). Its times are milliseconds since the epoch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from prefill.engine.message import ImagePart
from prefill.engine.units import format_bytes
from prefill.store.archive import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ArchivedConversation,
    ArchivedMessage,
)
from prefill.store.archive_images import BadImage, export_images, message_images
from prefill.store.errors import ImportRejected
from prefill.store.records import (
    DEFAULT_TITLE,
    MAX_VERSIONS,
    ROLES,
    AnswerVersion,
    check_role,
    title_from_text,
    to_json,
)

MAX_IMPORT_BYTES = 64 * 1024 * 1024
MAX_CONVERSATIONS = 100_000
MAX_MESSAGES = 100_000  # in one conversation
MAX_TEXT_CHARS = 4_000_000  # one message's text or reasoning, a system prompt
MAX_LINE_CHARS = 4_096  # a title, a model path, an id
MAX_MAPPING_CHARS = 64 * 1024  # a chat's settings, as JSON
MAX_FIGURES_CHARS = 4 * 1024 * 1024  # an answer's figures, as JSON: with its tool calls and their results
MAX_MAPPING_DEPTH = 32  # settings nest two or three levels; json's encoders recurse, one frame a level
_MAX_SECONDS = 1e11  # year 5138: anything later is not a time
WEBUI = "llama.cpp web UI"


@dataclass(frozen=True)
class ImportFile:
    """A checked history file.

    Attributes:
        source: "prefill" or "llama.cpp web UI".
        conversations: The chats in it, ready to write.
        left_out: Messages not taken: other branches of a web UI chat, tool calls.
    """

    source: str
    conversations: tuple[ArchivedConversation, ...]
    left_out: int = 0


class _Bad(Exception):
    """A fault found while reading; ``read_import`` words it as ImportRejected."""


def read_import_file(path: Path, max_bytes: int = MAX_IMPORT_BYTES) -> ImportFile:
    """Read and check a history file, writing nothing.

    Raises:
        ImportRejected: The file cannot be read, is too big, is not JSON, or does not hold
            a valid Prefill or llama.cpp web UI export.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ImportRejected(path, exc.strerror or str(exc)) from exc
    if len(data) > max_bytes:
        raise ImportRejected(
            path, f"it is larger than {format_bytes(max_bytes)}, the most an import takes"
        )
    return parse_import(data, path)


def parse_import(data: bytes, path: Path) -> ImportFile:
    """Check the bytes of a history file (see ``read_import_file``); ``path`` names it in errors."""
    try:
        return _parse(data)
    except _Bad as exc:
        raise ImportRejected(path, str(exc)) from None


def _parse(data: bytes) -> ImportFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _Bad("it is not UTF-8 text (not a JSON export)") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _Bad(f"it is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise _Bad("it is nested too deeply") from None
    except ValueError:  # an integer of thousands of digits
        raise _Bad("it holds a number too long to read") from None
    if isinstance(doc, dict) and "format" in doc:
        return _prefill(doc)
    if isinstance(doc, list) or (isinstance(doc, dict) and "conv" in doc):
        return _webui(doc if isinstance(doc, list) else [doc])
    raise _Bad("it is neither a Prefill history export nor a llama.cpp web UI conversation export")


def _no_constant(name: str) -> NoReturn:
    raise _Bad(f"it holds {name}, which is not a JSON number")


# --- checks on single values --------------------------------------------------------------
def _fail(where: str, problem: str) -> NoReturn:
    raise _Bad(f"{where}: {problem}")


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(where, f"expected an object, found {_kind(value)}")
    return value


def _list(value: object, where: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        _fail(where, f"expected a list, found {_kind(value)}")
    if len(value) > limit:
        _fail(where, f"more than {limit} entries")
    return value


def _text(
    obj: Mapping[str, Any], key: str, where: str, limit: int, default: str | None = None
) -> str:
    value = obj.get(key, default)
    if value is None and default is None and key not in obj:
        _fail(where, f'"{key}" is missing')
    if not isinstance(value, str):
        _fail(f"{where}.{key}", f"expected text, found {_kind(value)}")
    if len(value) > limit:
        _fail(f"{where}.{key}", f"longer than {limit} characters")
    _encodable(value, f"{where}.{key}")
    return value


def _optional_text(obj: Mapping[str, Any], key: str, where: str, limit: int) -> str | None:
    if obj.get(key) is None:
        return None
    return _text(obj, key, where, limit)


def _time(obj: Mapping[str, Any], key: str, where: str, per_second: float = 1.0) -> float:
    if key not in obj:
        _fail(where, f'"{key}" is missing')
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(f"{where}.{key}", f"expected a time (a number), found {_kind(value)}")
    try:
        seconds = value / per_second
    except OverflowError:  # an integer too large for a float
        _fail(f"{where}.{key}", f"{str(value)[:20]}… is not a time")
    if not (math.isfinite(seconds) and 0 <= seconds <= _MAX_SECONDS):
        _fail(f"{where}.{key}", f"{value} is not a time")
    return float(seconds)


def _mapping(obj: Mapping[str, Any], key: str, where: str, limit: int = MAX_MAPPING_CHARS) -> dict[str, Any]:
    value = _object(obj.get(key, {}), f"{where}.{key}")
    _plain_json(value, f"{where}.{key}")
    encoded = to_json(value)
    if len(encoded) > limit:
        _fail(f"{where}.{key}", f"larger than {limit} characters")
    _encodable(encoded, f"{where}.{key}")
    return value


def _plain_json(value: object, where: str, depth: int = 0) -> None:
    """Fail on what JSON cannot write back: too deep a nesting, or a number read as infinity (1e999)."""
    if depth > MAX_MAPPING_DEPTH:
        _fail(where, f"nested more than {MAX_MAPPING_DEPTH} levels deep")
    if isinstance(value, float) and not math.isfinite(value):
        _fail(where, f"holds {value}, which is not a JSON number")
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        _plain_json(child, where, depth + 1)


def _encodable(text: str, where: str) -> None:
    # JSON can spell lone surrogates (\ud800) that no UTF-8 database column can hold.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        _fail(where, "holds text that is not valid Unicode")


def _kind(value: object) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "text", bool: "true/false"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def _unique(ids: list[str], what: str, where: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            _fail(where, f"{what} id {i!r} appears twice")
        seen.add(i)


# --- Prefill's own export -----------------------------------------------------------------
def _prefill(doc: dict[str, Any]) -> ImportFile:
    if doc.get("format") != FORMAT_NAME:
        _fail("format", f"expected {FORMAT_NAME!r}, found {doc.get('format')!r}")
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        _fail("version", f"expected a whole number, found {version!r}")
    if version > FORMAT_VERSION:
        _fail("version", f"{version} was written by a newer Prefill; update Prefill")
    items = _list(doc.get("conversations"), "conversations", MAX_CONVERSATIONS)
    try:
        images = export_images(doc.get("images"))  # each one through the image door
    except BadImage as e:
        raise _Bad(str(e)) from None
    conversations = tuple(
        _prefill_conversation(_object(item, f"conversations[{n}]"), f"conversations[{n}]", images)
        for n, item in enumerate(items)
    )
    _unique([c.uid for c in conversations], "conversation", "conversations")
    return ImportFile("prefill", conversations)


def _prefill_conversation(obj: dict[str, Any], where: str, images: dict[str, ImagePart]) -> ArchivedConversation:
    uid = _text(obj, "id", where, MAX_LINE_CHARS)
    if not uid.strip():
        _fail(f"{where}.id", "is empty")
    raw_messages = _list(obj.get("messages"), f"{where}.messages", MAX_MESSAGES)
    return ArchivedConversation(
        uid=uid,
        title=_text(obj, "title", where, MAX_LINE_CHARS),
        created_at=_time(obj, "created_at", where),
        updated_at=_time(obj, "updated_at", where),
        system_prompt=_text(obj, "system_prompt", where, MAX_TEXT_CHARS, ""),
        model=_text(obj, "model", where, MAX_LINE_CHARS, ""),
        settings=_mapping(obj, "settings", where),
        messages=tuple(
            _prefill_message(_object(m, f"{where}.messages[{n}]"), f"{where}.messages[{n}]", images)
            for n, m in enumerate(raw_messages)
        ),
    )


def _prefill_message(obj: dict[str, Any], where: str, images: dict[str, ImagePart]) -> ArchivedMessage:
    role = _text(obj, "role", where, MAX_LINE_CHARS)
    if role not in ROLES:
        _fail(f"{where}.role", f"expected one of {', '.join(ROLES)}, found {role!r}")
    shown = _version(obj, where)
    versions: tuple[AnswerVersion, ...] = ()
    version = 0
    if "versions" in obj or "version" in obj:  # an answer's other versions: exports before them have none
        if role != "assistant":
            _fail(f"{where}.versions", f"only an answer has versions, not a {role} message")
        raw = _list(obj.get("versions"), f"{where}.versions", MAX_VERSIONS - 1)
        versions = tuple(_version(_object(v, f"{where}.versions[{n}]"), f"{where}.versions[{n}]")
                         for n, v in enumerate(raw))
        version = obj.get("version", 0)
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= len(versions):
            _fail(f"{where}.version", f"expected a whole number from 0 to {len(versions)}, found {version!r}")
    return ArchivedMessage(
        role=check_role(role),
        content=shown.content,
        created_at=_time(obj, "created_at", where),
        reasoning=shown.reasoning,
        finish_reason=shown.finish_reason,
        figures=shown.figures,
        complete=shown.complete,
        versions=versions,
        version=version,
        images=_images_of(obj, where, images),
    )


def _images_of(obj: dict[str, Any], where: str, images: dict[str, ImagePart]) -> tuple[ImagePart, ...]:
    try:
        return message_images(obj.get("images"), images, where)
    except BadImage as e:
        raise _Bad(str(e)) from None


def _version(obj: dict[str, Any], where: str) -> AnswerVersion:
    """What a message and each of an answer's versions hold: its text, thinking, end and figures."""
    complete = obj.get("complete", True)
    if not isinstance(complete, bool):
        _fail(f"{where}.complete", f"expected true or false, found {_kind(complete)}")
    return AnswerVersion(
        content=_text(obj, "content", where, MAX_TEXT_CHARS),
        reasoning=_text(obj, "reasoning", where, MAX_TEXT_CHARS, ""),
        finish_reason=_optional_text(obj, "finish_reason", where, MAX_LINE_CHARS),
        figures=_mapping(obj, "figures", where, MAX_FIGURES_CHARS),
        complete=complete,
    )


# --- llama.cpp web UI ---------------------------------------------------------------------
_WEBUI_ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class _Node:
    id: str
    parent: str | None
    kind: str  # the web UI's message type: "root", "text", "think", "system", "tool"
    role: str
    message: ArchivedMessage
    model: str


def _webui(items: list[Any]) -> ImportFile:
    _list(items, "the file", MAX_CONVERSATIONS)
    conversations: list[ArchivedConversation] = []
    left_out = 0
    all_message_ids: list[str] = []
    for n, item in enumerate(items):
        where = f"[{n}]"
        obj = _object(item, where)
        conv, dropped, ids = _webui_conversation(obj, where)
        conversations.append(conv)
        left_out += dropped
        all_message_ids += ids
    _unique([c.uid for c in conversations], "conversation", "the file")
    _unique(all_message_ids, "message", "the file")
    return ImportFile(WEBUI, tuple(conversations), left_out)


def _webui_conversation(
    obj: dict[str, Any], where: str
) -> tuple[ArchivedConversation, int, list[str]]:
    conv = _object(obj.get("conv"), f"{where}.conv")
    cwhere = f"{where}.conv"
    uid = _text(conv, "id", cwhere, MAX_LINE_CHARS)
    if not uid.strip():
        _fail(f"{cwhere}.id", "is empty")
    name = _text(conv, "name", cwhere, MAX_TEXT_CHARS, "")
    last_modified = _time(conv, "lastModified", cwhere, 1000.0)
    current = _optional_text(conv, "currNode", cwhere, MAX_LINE_CHARS)
    raw = _list(obj.get("messages"), f"{where}.messages", MAX_MESSAGES)
    nodes = [
        _webui_node(_object(m, f"{where}.messages[{k}]"), f"{where}.messages[{k}]", uid)
        for k, m in enumerate(raw)
    ]
    ids = [node.id for node in nodes]
    _unique(ids, "message", f"{where}.messages")
    path = _branch(nodes, current, where)
    shown = [node for node in path if node.kind != "root" and node.role != "tool"]
    system_prompt = ""
    if shown and shown[0].role == "system":
        system_prompt = shown.pop(0).message.content
    models = [node.model for node in shown if node.model]
    times = [node.message.created_at for node in nodes if node.kind != "root"]
    dropped = sum(1 for node in nodes if node.kind != "root") - len(shown) - bool(system_prompt)
    first_question = next((node.message.content for node in shown if node.role == "user"), "")
    archived = ArchivedConversation(
        uid=uid,
        title=title_from_text(name) or title_from_text(first_question) or DEFAULT_TITLE,
        created_at=min(times, default=last_modified),
        updated_at=last_modified,
        system_prompt=system_prompt,
        model=models[-1] if models else "",
        messages=tuple(node.message for node in shown),
    )
    return archived, dropped, ids


def _webui_node(obj: dict[str, Any], where: str, conv_id: str) -> _Node:
    node_id = _text(obj, "id", where, MAX_LINE_CHARS)
    if _text(obj, "convId", where, MAX_LINE_CHARS) != conv_id:
        _fail(f"{where}.convId", f"does not match its conversation {conv_id!r}")
    role = _text(obj, "role", where, MAX_LINE_CHARS)
    if role not in _WEBUI_ROLES:
        _fail(f"{where}.role", f"expected one of {', '.join(_WEBUI_ROLES)}, found {role!r}")
    kind = _text(obj, "type", where, MAX_LINE_CHARS, "text")
    _list(obj.get("children", []), f"{where}.children", MAX_MESSAGES)
    _list(obj.get("extra", []) or [], f"{where}.extra", MAX_MESSAGES)
    # Newer web UIs may name the reasoning differently; take whichever is there.
    key = "reasoningContent" if obj.get("reasoningContent") is not None else "thinking"
    reasoning = _optional_text(obj, key, where, MAX_TEXT_CHARS) or ""
    timings = _object(obj.get("timings") or {}, f"{where}.timings")
    return _Node(
        id=node_id,
        parent=_optional_text(obj, "parent", where, MAX_LINE_CHARS),
        kind=kind,
        role=role,
        message=ArchivedMessage(
            # A tool result is never kept (see _webui_conversation); its role here is a stand-in.
            role=check_role(role if role != "tool" else "assistant"),
            content=_text(obj, "content", where, MAX_TEXT_CHARS, ""),
            created_at=_time(obj, "timestamp", where, 1000.0),
            reasoning=reasoning,
            figures=_figures(timings, f"{where}.timings"),
        ),
        model=_optional_text(obj, "model", where, MAX_LINE_CHARS) or "",
    )


def _branch(nodes: list[_Node], current: str | None, where: str) -> list[_Node]:
    """Return the messages from the root down to the one the web UI showed last."""
    by_id = {node.id: node for node in nodes}
    if current not in by_id:
        # No (or a stale) current node: the newest message that starts no branch of its own.
        parents = {node.parent for node in nodes}
        leaves = [n for n in nodes if n.id not in parents] or nodes
        current = max(leaves, key=lambda n: n.message.created_at).id if leaves else None
    path: list[_Node] = []
    seen: set[str] = set()
    while current is not None:
        if current in seen:
            _fail(f"{where}.messages", f"message {current!r} is its own ancestor")
        if current not in by_id:
            _fail(f"{where}.messages", f"parent message {current!r} is missing")
        seen.add(current)
        node = by_id[current]
        path.append(node)
        current = node.parent
    path.reverse()
    return path


_TIMING_FIGURES: dict[str, Callable[[dict[str, float]], float | int]] = {
    "prompt_tokens": lambda t: int(t.get("prompt_n", 0) + t.get("cache_n", 0)),
    "cached_tokens": lambda t: int(t.get("cache_n", 0)),
    "evaluated_tokens": lambda t: int(t.get("prompt_n", 0)),
    "completion_tokens": lambda t: int(t.get("predicted_n", 0)),
    "prefill_ms": lambda t: t.get("prompt_ms", 0.0),
    "prefill_tps": lambda t: _rate(t.get("prompt_n", 0), t.get("prompt_ms", 0)),
    "decode_tps": lambda t: _rate(t.get("predicted_n", 0), t.get("predicted_ms", 0)),
}


def _figures(timings: dict[str, Any], where: str) -> dict[str, float | int]:
    """Turn the web UI's timings into Prefill's figure names."""
    known: dict[str, float] = {}
    for key in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n"):
        value = timings.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(f"{where}.{key}", f"expected a number, found {_kind(value)}")
        if not 0 <= value <= 1e12:  # NaN and infinity fail it too; math.isfinite overflows on a huge int
            _fail(f"{where}.{key}", f"{value} is out of range")
        known[key] = value
    if not known:
        return {}
    return {name: make(known) for name, make in _TIMING_FIGURES.items()}


def _rate(count: float, ms: float) -> float:
    rate = count * 1000.0 / ms if ms > 0 else 0.0
    return round(rate, 2) if math.isfinite(rate) else 0.0  # 5e-324 ms: infinity, which JSON cannot write
