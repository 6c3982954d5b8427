"""Saved KV cache states on disk: the file format, its checks, and the folder's budget.

One file holds one sequence's state: a fixed 84-byte head, a JSON header (what the
state depends on, the tokens it holds, the text segments they came from) and the
blob llama.cpp wrote. This module is the door for those files: a file that is
truncated, garbled, from another format or whose checksums do not match raises
`CorruptState` here, before any of its bytes reach llama.cpp (which aborts the
process on some input it dislikes). A file is named after its key, the hash of
its scope (model, cache settings, llama.cpp build) and its tokens, so a file whose
header does not hash to its own name is refused too.

The checksums are HMAC-SHA256s keyed with a per-install secret (`install_secret`,
kept in the app's data folder, not beside the states): one over the header, checked
when the folder is listed, and one over the header and the blob together, checked as
the blob is read. A file someone else wrote into the folder, or a header moved onto
another blob, fails them like a damaged file.

Files are written to a temporary name and renamed, so a reader sees a whole file
or none; no fsync, as a file cut short by a crash fails its checks and is dropped.
The folder keeps to a byte budget by deleting the least recently used files (a
file's mtime is its last use) and never writes into the last `min_free` bytes of
the disk.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import struct
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path
from typing import BinaryIO

import platformdirs

from prefill.engine.private_paths import open_private, private_file, private_folder

MAGIC = b"PFKVST\x00\x02"  # the last two bytes are the format version
_SIZES = struct.Struct("<8sIQ")  # magic, header length, blob length: what both MACs start with
_HEAD = struct.Struct("<8sIQ32s32s")  # the sizes, then the header's MAC and the state's MAC
HEAD_SIZE = _HEAD.size
SECRET_SIZE = 32
SUFFIX = ".kvstate"
GIB = 1024**3
DEFAULT_BUDGET = 4 * GIB
DEFAULT_MIN_FREE = 2 * GIB
MAX_HEADER = 64 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024


class CorruptState(Exception):
    """A saved state file is damaged, foreign or inconsistent; it must not be used."""


def default_cache_dir() -> Path:
    """The platform's cache folder for Prefill, then `kv`."""
    return Path(platformdirs.user_cache_dir("prefill", appauthor=False)) / "kv"


def default_secret_file() -> Path:
    """The platform's data folder for Prefill, then `kv-state.key`: out of the cache folder."""
    return Path(platformdirs.user_data_dir("prefill", appauthor=False)) / "kv-state.key"


def install_secret(path: Path) -> bytes:
    """The secret kept at `path`: 32 random bytes made on first need, 0600 in a 0700 folder.

    A new one is written under a temporary name and hard-linked into place, so of two processes
    starting at once the first to link wins and the other reads its secret. One that cannot be
    read or is not 32 bytes is replaced; the states signed with the old one then fail their checks
    and are discarded like damaged ones (a prompt read again).

    Raises:
        OSError: the folder cannot be made or written.
    """
    try:
        with open(path, "rb") as f:
            found = f.read(SECRET_SIZE + 1)
    except FileNotFoundError:
        damaged = False
    except OSError:
        damaged = True
    else:
        if len(found) == SECRET_SIZE:
            private_file(path)  # narrowed, should it have been widened
            return found
        damaged = True
    private_folder(path.parent)
    secret = secrets.token_bytes(SECRET_SIZE)
    tmp = path.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}-{path.name}")
    try:
        with os.fdopen(open_private(tmp), "wb") as f:
            f.write(secret)
            f.flush()
            os.fsync(f.fileno())  # never linked into place half written
        if damaged:
            os.replace(tmp, path)
            return secret
        try:
            os.link(tmp, path)
        except FileExistsError:
            return install_secret(path)  # another process was first: its secret, whole
        except OSError:  # a file system without hard links: the last writer wins instead
            os.replace(tmp, path)
        return secret
    finally:
        tmp.unlink(missing_ok=True)


def _mac(secret: bytes, label: bytes, hlen: int, blen: int) -> hmac.HMAC:
    """An HMAC-SHA256 started with what it is for and the sizes of the header and the blob."""
    return hmac.new(secret, label + _SIZES.pack(MAGIC, hlen, blen), "sha256")


def state_key(scope: str, tokens: Sequence[int]) -> str:
    """The key of a state: a hash of its scope and of the exact tokens it holds."""
    h = blake2b(scope.encode(), digest_size=20)
    h.update(array("i", tokens).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class StateHeader:
    """What a saved state holds, checked: the segments' token counts add up to at most its tokens."""

    scope: str  # hash of the model, the cache settings and the llama.cpp build
    tokens: tuple[int, ...]
    segments: tuple[tuple[str, int], ...]  # text and token count of each segment, in order
    blob_size: int

    @property
    def key(self) -> str:
        return state_key(self.scope, self.tokens)


@dataclass(frozen=True)
class Usage:
    bytes: int
    files: int


@dataclass(frozen=True)
class SaveResult:
    """What a save did: `written` (a new file), `kept` (the same state was already there),
    `nothing` (an empty cache, or the disk cache is off) or `skipped` (why in `note`)."""

    outcome: str
    size: int = 0
    ms: float = 0.0
    note: str = ""


def _encode_header(h: StateHeader) -> bytes:
    doc = {"scope": h.scope, "tokens": list(h.tokens), "segments": [list(s) for s in h.segments]}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _decode_header(raw: bytes, blob_size: int) -> StateHeader:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptState(f"unreadable header ({e})") from None
    if not isinstance(doc, dict):
        raise CorruptState("the header is not an object")
    scope, tokens, segments = doc.get("scope"), doc.get("tokens"), doc.get("segments")
    if not isinstance(scope, str) or not isinstance(tokens, list) or not isinstance(segments, list):
        raise CorruptState("the header lacks its scope, tokens or segments")
    if not all(type(t) is int and 0 <= t < 2**31 for t in tokens):
        raise CorruptState("the header's tokens are not token ids")
    segs: list[tuple[str, int]] = []
    for s in segments:
        if not (isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and type(s[1]) is int and s[1] >= 0):
            raise CorruptState("a segment of the header is not (text, count)")
        segs.append((s[0], s[1]))
    if sum(n for _, n in segs) > len(tokens):
        raise CorruptState("the segments hold more tokens than the state")
    return StateHeader(scope, tuple(tokens), tuple(segs), blob_size)


def _read_head(f: BinaryIO, size: int) -> tuple[int, int, bytes, bytes]:
    """Header length, blob length, the header's MAC and the state's MAC, from a file of `size` bytes."""
    head = f.read(_HEAD.size)
    if len(head) != _HEAD.size:
        raise CorruptState("truncated")
    magic, hlen, blen, hmac_header, hmac_state = _HEAD.unpack(head)
    if magic != MAGIC:
        raise CorruptState("not a Prefill state file of this version")
    if hlen > MAX_HEADER or _HEAD.size + hlen + blen != size:
        raise CorruptState("truncated or padded")
    return hlen, blen, hmac_header, hmac_state


class KvDiskCache:
    """A folder of saved states with a byte budget. Not thread-safe: the engine thread uses it.

    Args:
        folder: where the states are; the platform's cache folder by default.
        secret_file: the secret the states are signed with (`install_secret`). By default the
            install's (`default_secret_file`, in the data folder) for the default folder, and
            `<folder>.key` beside any other folder (a test's), which never touches the install's.
    """

    def __init__(
        self, folder: Path | None = None, budget: int = DEFAULT_BUDGET, min_free: int = DEFAULT_MIN_FREE,
        secret_file: Path | None = None,
    ):
        self.folder = folder or default_cache_dir()
        if secret_file is None:
            secret_file = default_secret_file() if folder is None else folder.with_name(folder.name + ".key")
        self.secret_file = secret_file
        self.budget = budget
        self.min_free = min_free
        self._headers: dict[str, StateHeader] = {}  # by file name; a name's content never changes
        self._secret: bytes | None = None

    def _key(self) -> bytes:
        """The secret, read (or made) on first need."""
        if self._secret is None:
            self._secret = install_secret(self.secret_file)
        return self._secret

    # --- the folder -------------------------------------------------------------------
    def _files(self) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(self.folder) as it:
                yield from (e for e in it if e.name.endswith(SUFFIX) and e.is_file(follow_symlinks=False))
        except FileNotFoundError:
            return

    def path_for(self, scope: str, key: str) -> Path:
        return self.folder / f"{scope[:16]}-{key}{SUFFIX}"

    def usage(self) -> Usage:
        sizes = [e.stat(follow_symlinks=False).st_size for e in self._files()]
        return Usage(sum(sizes), len(sizes))

    def clear(self) -> int:
        """Delete every saved state (and any temporary file left by a crash); the bytes freed."""
        freed = 0
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return 0
        for e in entries:
            if e.name.endswith(SUFFIX) or e.name.startswith(".tmp-"):
                freed += self.discard(Path(e.path))
        self._headers.clear()
        return freed

    def discard(self, path: Path) -> int:
        """Delete one file; the bytes freed (0 when it was already gone)."""
        self._headers.pop(path.name, None)
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return 0
        return size

    def discard_foreign(self, prefix: str) -> int:
        """Delete the states whose scope does not start with `prefix` (another llama.cpp build
        writes another prefix: its states can never be used here); how many."""
        foreign = [Path(e.path) for e in self._files() if not e.name.startswith(prefix)]
        for path in foreign:
            self.discard(path)
        return len(foreign)

    def evict(self, room: int = 0) -> int:
        """Delete least recently used files until `room` more bytes fit the budget; the bytes freed."""
        entries = sorted(((e.stat(follow_symlinks=False), e.path) for e in self._files()),
                         key=lambda x: x[0].st_mtime_ns)
        total = sum(st.st_size for st, _ in entries)
        freed = 0
        for st, path in entries:
            if total + room <= self.budget:
                break
            freed += self.discard(Path(path))
            total -= st.st_size
        return freed

    # --- writing ----------------------------------------------------------------------
    def has(self, scope: str, key: str) -> bool:
        """Whether this state is saved; if so it becomes the most recently used."""
        path = self.path_for(scope, key)
        try:
            os.utime(path)
        except FileNotFoundError:
            return False
        return True

    def room_for(self, size: int) -> str:
        """"" when a file of `size` bytes may be written now (after evicting), else why not."""
        if size > self.budget:
            return f"the state ({size / GIB:.2f} GB) is larger than the cache budget ({self.budget / GIB:.2f} GB)"
        self.evict(size)
        private_folder(self.folder)
        free = shutil.disk_usage(self.folder).free
        if free - size < self.min_free:
            return f"only {free / GIB:.1f} GB free on the disk: the state was not saved"
        return ""

    def write(self, header: StateHeader, blob: bytes | bytearray | memoryview) -> Path:
        """Write one state atomically (temporary file, then rename); its path."""
        raw = _encode_header(header)
        mv = memoryview(blob)
        secret = self._key()
        hmac_header = _mac(secret, b"header\0", len(raw), mv.nbytes)
        hmac_header.update(raw)
        hmac_state = _mac(secret, b"state\0", len(raw), mv.nbytes)
        hmac_state.update(raw)
        hmac_state.update(mv)
        head = _HEAD.pack(MAGIC, len(raw), mv.nbytes, hmac_header.digest(), hmac_state.digest())
        path = self.path_for(header.scope, header.key)
        tmp = self.folder / f".tmp-{os.getpid()}-{path.name}"
        try:
            with os.fdopen(open_private(tmp), "wb") as f:
                f.write(head)
                f.write(raw)
                f.write(mv)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        self._headers[path.name] = header
        return path

    # --- reading ----------------------------------------------------------------------
    def candidates(self, scope: str) -> Iterator[tuple[Path, StateHeader | CorruptState]]:
        """Every saved state of this scope with its header, or the fault that makes it unusable."""
        prefix = scope[:16] + "-"
        for e in self._files():
            if not e.name.startswith(prefix):
                continue
            path = Path(e.path)
            try:
                yield path, self.header(path, scope)
            except CorruptState as fault:
                yield path, fault

    def header(self, path: Path, scope: str) -> StateHeader:
        """The checked header of one file (read once, then remembered).

        Raises:
            CorruptState: a damaged head or header, one not signed with this install's secret,
                another scope, or a key that is not its name.
            OSError: the secret cannot be made (its folder cannot be written).
        """
        known = self._headers.get(path.name)
        if known is not None:
            return known
        secret = self._key()
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                hlen, blen, expected, _ = _read_head(f, size)
                raw = f.read(hlen)
        except OSError as e:
            raise CorruptState(f"unreadable ({e.strerror})") from None
        mac = _mac(secret, b"header\0", hlen, blen)
        mac.update(raw)
        if len(raw) != hlen or not hmac.compare_digest(mac.digest(), expected):
            raise CorruptState("the header's checksum does not match (damaged, or not written here)")
        header = _decode_header(raw, blen)
        if header.scope != scope:
            raise CorruptState("saved for another model, other settings or another llama.cpp build")
        if path.name != self.path_for(scope, header.key).name:
            raise CorruptState("the header does not match the file's name")
        self._headers[path.name] = header
        return header

    def read_blob(self, path: Path, header: StateHeader) -> bytearray:
        """The state blob of a file whose header was checked, after the MAC over the header and
        the blob is.

        Raises:
            CorruptState: the file changed, was cut short, or fails the checksum (it was damaged,
                not written here, or its header was put on another blob).
            OSError: the secret cannot be made (its folder cannot be written).
        """
        secret = self._key()
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                hlen, blen, _, expected = _read_head(f, size)
                raw = f.read(hlen)
                if blen != header.blob_size or raw != _encode_header(header):
                    raise CorruptState("the file changed since its header was read")
                mac = _mac(secret, b"state\0", hlen, blen)
                mac.update(raw)
                blob = bytearray(blen)
                mv = memoryview(blob)
                got = 0
                while got < blen:  # read and check in pieces: hashing lets go of the GIL meanwhile
                    n = f.readinto(mv[got : got + _CHUNK])
                    if not n:
                        raise CorruptState("truncated")
                    mac.update(mv[got : got + n])
                    got += n
        except OSError as e:
            raise CorruptState(f"unreadable ({e.strerror})") from None
        if not hmac.compare_digest(mac.digest(), expected):
            raise CorruptState("the state's checksum does not match (damaged, or not written here)")
        os.utime(path)  # used now: the last to be evicted
        return blob
