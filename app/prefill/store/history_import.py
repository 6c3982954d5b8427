"""The door for chat history files: Prefill's JSON export and llama.cpp's web UI export.

Everything in a file is checked here: the size, that it is JSON, the shape and type of every
field, text lengths, roles, times and duplicate ids. Every fault becomes one ``ImportRejected``
naming where it is. What passes comes out as ``ArchivedConversation`` records that
``HistoryStore.import_conversations`` writes in one transaction.

A file is read one chat at a time (``open_import_file``, an ``ImportStream``): opening it checks
its size, that it is JSON, its format and header and its images; each chat is then decoded,
checked and handed on as the store asks for it, so an import of a million messages holds the
file's text and one chat, not every message as objects at once (737 MB before, issue 33). A fault
found in a later chat raises then, inside the store's transaction, which leaves nothing behind.
``read_import_file`` and ``parse_import`` read every chat at once, for a caller that wants them all.

The llama.cpp web UI (``tools/server/webui``) exports ``{"conv": …, "messages": […]}`` or a
list of them. Its messages form a tree (``parent``, ``children``; edits and regenerations
are branches) under a hidden root; Prefill keeps the branch the web UI showed last
(``conv.currNode``). Its times are milliseconds since the epoch.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
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
    MAX_KEPT_DEPTH,
    MAX_VERSIONS,
    ROLES,
    AnswerVersion,
    ImageRef,
    KeptTurn,
    check_role,
    title_from_text,
    to_json,
)

MAX_IMPORT_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024  # bytes read at a time past a file's stated size
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


def open_import_file(path: Path, max_bytes: int = MAX_IMPORT_BYTES) -> ImportStream:
    """Open a history file to import it chat by chat (see ``ImportStream``), writing nothing.

    Raises:
        ImportRejected: The file cannot be read, is too big, is not JSON, or does not hold
            a Prefill or llama.cpp web UI export (its header, its images).
    """
    return ImportStream(_read(path, max_bytes), path)


def read_import_file(path: Path, max_bytes: int = MAX_IMPORT_BYTES) -> ImportFile:
    """Read and check a whole history file, writing nothing (every chat in memory at once).

    Raises:
        ImportRejected: The file cannot be read, is too big, is not JSON, or does not hold
            a valid Prefill or llama.cpp web UI export.
    """
    return open_import_file(path, max_bytes).read_all()


def parse_import(data: bytes, path: Path) -> ImportFile:
    """Check the bytes of a history file (see ``read_import_file``); ``path`` names it in errors."""
    return ImportStream(data, path).read_all()


def _read(path: Path, max_bytes: int) -> bytes:
    # Read what the file's size says, then the rest (if it grew, or is not a regular file) a chunk
    # at a time: f.read(max_bytes + 1) would allocate the whole cap however small the file.
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            parts = [f.read(min(size, max_bytes) + 1)] if size else []
            total = sum(map(len, parts))
            while total <= max_bytes and (chunk := f.read(min(_CHUNK, max_bytes + 1 - total))):
                parts.append(chunk)
                total += len(chunk)
            data = parts[0] if len(parts) == 1 else b"".join(parts)
    except OSError as exc:
        raise ImportRejected(path, exc.strerror or str(exc)) from exc
    if len(data) > max_bytes:
        raise ImportRejected(
            path, f"it is larger than {format_bytes(max_bytes)}, the most an import takes"
        )
    return data


class ImportStream:
    """A history file's chats, checked and handed on one at a time: iterate it once.

    Opening checks the file's form (UTF-8, JSON, a known format, its header and images); each chat
    is decoded and checked as the iteration reaches it, and a fault raises ``ImportRejected`` then.
    ``HistoryStore.import_conversations`` iterates it inside one transaction, so a fault anywhere
    still leaves nothing imported. Memory: the file's text, one chat, and the ids seen.

    Attributes:
        path: The file.
        source: "prefill" or "llama.cpp web UI".
        left_out: Messages not taken so far (other branches of a web UI chat, tool calls).

    Raises:
        ImportRejected: On opening, as ``open_import_file`` says.
    """

    def __init__(self, data: bytes, path: Path) -> None:
        self.path = path
        try:
            self._reader = _Reader(_decode(data))
        except _Bad as exc:
            raise ImportRejected(path, str(exc)) from None
        self.source = self._reader.source

    @property
    def left_out(self) -> int:
        return self._reader.left_out

    def __iter__(self) -> Iterator[ArchivedConversation]:
        try:
            yield from self._reader.chats
        except _Bad as exc:
            raise ImportRejected(self.path, str(exc)) from None

    def read_all(self) -> ImportFile:
        """Every chat at once, checked."""
        conversations = tuple(self)
        return ImportFile(self.source, conversations, self.left_out)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _Bad("it is not UTF-8 text (not a JSON export)") from None


def _not_json(exc: json.JSONDecodeError) -> _Bad:
    return _Bad(f"it is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})")


_SPACE = re.compile(r"[ \t\n\r]*")


class _Json:
    """One JSON text read a value at a time; an array or an object can be walked member by member.

    ``json``'s own decoder reads each value (``raw_decode``), so the text is checked as
    ``json.loads`` checks it; only the walk between the members of an array or object is here.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self._decoder = json.JSONDecoder(parse_constant=_no_constant)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        match = _SPACE.match(self.text, self.at)
        self.at = match.end() if match else self.at
        return self.text[self.at : self.at + 1]

    def value(self) -> Any:
        """Decode the next value whole."""
        self.peek()
        try:
            value, self.at = self._decoder.raw_decode(self.text, self.at)
        except json.JSONDecodeError as exc:
            raise _not_json(exc) from None
        except RecursionError:
            raise _Bad("it is nested too deeply") from None
        except ValueError:  # an integer of thousands of digits
            raise _Bad("it holds a number too long to read") from None
        return value

    def items(self) -> Iterator[int]:
        """Walk the array that comes next: yields each element's index; the caller reads the element."""
        self.at += 1  # the "[" the caller peeked
        if self.peek() == "]":
            self.at += 1
            return
        n = 0
        while True:
            yield n
            n += 1
            if not self._next("]"):
                return

    def members(self) -> Iterator[str]:
        """Walk the object that comes next: yields each key; the caller reads its value."""
        self.at += 1  # the "{" the caller peeked
        if self.peek() == "}":
            self.at += 1
            return
        while True:
            if self.peek() != '"':
                self._error("Expecting property name enclosed in double quotes")
            key = self.value()
            if self.peek() != ":":
                self._error("Expecting ':' delimiter")
            self.at += 1
            yield key
            if not self._next("}"):
                return

    def end(self) -> None:
        """Nothing but white space may follow the document."""
        if self.peek():
            self._error("Extra data")

    def _next(self, close: str) -> bool:
        """After a member: True at a comma (another follows), False at ``close``."""
        c = self.peek()
        self.at += 1
        if c == ",":
            return True
        if c != close:
            self.at -= 1
            self._error("Expecting ',' delimiter")
        return False

    def _error(self, message: str) -> NoReturn:
        raise _not_json(json.JSONDecodeError(message, self.text, self.at))


class _Reader:
    """Reads what a file holds: its format and header at once, its chats as ``chats`` is iterated."""

    def __init__(self, text: str) -> None:
        self.json = _Json(text)
        self.left_out = 0
        self.chats: Iterator[ArchivedConversation]
        first = self.json.peek()
        if first == "[":
            self.source = WEBUI
            self.chats = self._webui_chats()
            return
        if first == "{":
            head, start = self._head()
            if "format" in head:
                self.source = "prefill"
                self.chats = self._prefill(head, start)
                return
            if "conv" in head:
                self.source = WEBUI
                self.chats = self._webui_one(head)
                return
        else:
            self.json.value()
            self.json.end()
        raise _Bad("it is neither a Prefill history export nor a llama.cpp web UI conversation export")

    def _head(self) -> tuple[dict[str, Any], int | None]:
        """The top-level object's members but ``conversations``, and where that list starts.

        The list is walked here one chat at a time (checking its JSON, counting it), and read again
        when the chats are asked for: the images an export lists after its chats must be checked
        before the first message naming one is.
        """
        head: dict[str, Any] = {}
        start = None
        for key in self.json.members():
            if key == "conversations" and self.json.peek() == "[":
                start = self.json.at
                head.pop(key, None)
                for n in self.json.items():
                    if n >= MAX_CONVERSATIONS:
                        _fail("conversations", f"more than {MAX_CONVERSATIONS} entries")
                    self.json.value()
            else:
                head[key] = self.json.value()
                if key == "conversations":
                    start = None
        self.json.end()
        return head, start

    def _prefill(self, doc: dict[str, Any], start: int | None) -> Iterator[ArchivedConversation]:
        if doc.get("format") != FORMAT_NAME:
            _fail("format", f"expected {FORMAT_NAME!r}, found {doc.get('format')!r}")
        version = doc.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            _fail("version", f"expected a whole number, found {version!r}")
        if version > FORMAT_VERSION:
            _fail("version", f"{version} was written by a newer Prefill; update Prefill")
        if start is None:
            _list(doc.get("conversations"), "conversations", MAX_CONVERSATIONS)  # not a list: words why
        try:
            images = export_images(doc.get("images"))  # each one through the image door
        except BadImage as e:
            raise _Bad(str(e)) from None
        return self._prefill_chats(start, images)

    def _prefill_chats(self, start: int | None, images: dict[str, ImagePart]) -> Iterator[ArchivedConversation]:
        if start is None:
            return
        self.json.at = start
        uids: set[str] = set()
        for n in self.json.items():
            where = f"conversations[{n}]"
            conv = _prefill_conversation(_object(self.json.value(), where), where, images)
            if conv.uid in uids:
                _fail("conversations", f"conversation id {conv.uid!r} appears twice")
            uids.add(conv.uid)
            yield conv

    def _webui_chats(self) -> Iterator[ArchivedConversation]:
        uids: set[str] = set()
        message_ids: set[str] = set()
        for n in self.json.items():
            if n >= MAX_CONVERSATIONS:
                _fail("the file", f"more than {MAX_CONVERSATIONS} entries")
            where = f"[{n}]"
            conv, dropped, ids = _webui_conversation(_object(self.json.value(), where), where)
            if conv.uid in uids:
                _fail("the file", f"conversation id {conv.uid!r} appears twice")
            uids.add(conv.uid)
            for i in ids:
                if i in message_ids:
                    _fail("the file", f"message id {i!r} appears twice")
                message_ids.add(i)
            self.left_out += dropped
            yield conv
        self.json.end()

    def _webui_one(self, doc: dict[str, Any]) -> Iterator[ArchivedConversation]:
        conv, dropped, _ = _webui_conversation(doc, "[0]")
        self.left_out += dropped
        yield conv


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
    if not value:
        return value  # most messages' figures and most chats' settings: nothing to check
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
    kept: list[ImagePart] = []  # the images of the turns its versions keep
    versions, version = _versions_of(obj, role, where, images, kept, 0)
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
        kept_images=tuple(kept),
    )


def _versions_of(obj: dict[str, Any], role: str, where: str, images: dict[str, ImagePart], kept: list[ImagePart],
                 depth: int) -> tuple[tuple[AnswerVersion, ...], int]:
    """A message's other versions and where the shown one stands: an answer's (exports before them have
    none), or a question's, each with the turns that followed it (`later`)."""
    if "versions" not in obj and "version" not in obj:
        return (), 0
    if role not in ("assistant", "user"):
        _fail(f"{where}.versions", f"only an answer or a question has versions, not a {role} message")
    raw = _list(obj.get("versions"), f"{where}.versions", MAX_VERSIONS - 1)
    versions = tuple(_version(_object(v, f"{where}.versions[{n}]"), f"{where}.versions[{n}]", images, kept, depth)
                     for n, v in enumerate(raw))
    version = obj.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= len(versions):
        _fail(f"{where}.version", f"expected a whole number from 0 to {len(versions)}, found {version!r}")
    return versions, version


def _images_of(obj: dict[str, Any], where: str, images: dict[str, ImagePart]) -> tuple[ImagePart, ...]:
    try:
        return message_images(obj.get("images"), images, where)
    except BadImage as e:
        raise _Bad(str(e)) from None


def _version(obj: dict[str, Any], where: str, images: dict[str, ImagePart] | None = None,
             kept: list[ImagePart] | None = None, depth: int = 0) -> AnswerVersion:
    """What a message and each of its versions hold: its text, thinking, end and figures; a version not
    shown, the turns that followed it (`later`)."""
    complete = obj.get("complete", True)
    if not isinstance(complete, bool):
        _fail(f"{where}.complete", f"expected true or false, found {_kind(complete)}")
    later: tuple[KeptTurn, ...] = ()
    if images is not None and kept is not None and "later" in obj:
        if depth >= MAX_KEPT_DEPTH:
            _fail(f"{where}.later", f"versions nested more than {MAX_KEPT_DEPTH} levels deep")
        raw = _list(obj["later"], f"{where}.later", MAX_MESSAGES)
        later = tuple(_kept_turn(_object(t, f"{where}.later[{n}]"), f"{where}.later[{n}]", images, kept, depth + 1)
                      for n, t in enumerate(raw))
    return AnswerVersion(
        content=_text(obj, "content", where, MAX_TEXT_CHARS),
        reasoning=_text(obj, "reasoning", where, MAX_TEXT_CHARS, ""),
        finish_reason=_optional_text(obj, "finish_reason", where, MAX_LINE_CHARS),
        figures=_mapping(obj, "figures", where, MAX_FIGURES_CHARS),
        complete=complete,
        later=later,
    )


def _kept_turn(obj: dict[str, Any], where: str, images: dict[str, ImagePart], kept: list[ImagePart],
               depth: int) -> KeptTurn:
    """One of the turns a version keeps: a message as the export writes one."""
    role = _text(obj, "role", where, MAX_LINE_CHARS)
    if role not in ROLES:
        _fail(f"{where}.role", f"expected one of {', '.join(ROLES)}, found {role!r}")
    shown = _version(obj, where)
    versions, version = _versions_of(obj, role, where, images, kept, depth)
    parts = _images_of(obj, where, images)
    kept.extend(parts)
    return KeptTurn(check_role(role), shown.content, _time(obj, "created_at", where), shown.reasoning,
                    shown.finish_reason, shown.figures, shown.complete, versions, version,
                    tuple(ImageRef.of(p) for p in parts))


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
