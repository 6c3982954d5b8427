"""The prompt cache's second tier: prompts that no longer fit in host memory, kept on disk.

A prompt the host-memory cache (`engine/batch/prompt_cache.py`) lets go to make room is written here, in the window's
KV state format (`engine/local/kv_disk.py`: a signed header with the tokens, then llama.cpp's bytes,
both under an HMAC keyed with this install's secret), in a folder of the model's own within a byte
budget, the least recently used file out first. A file is read back only through that format's
checks: one that was damaged, cut short or written by anyone else is discarded before llama.cpp
sees a byte of it, and the reason is kept in words (`notes`, and the cache's snapshot).

Each owner's prompts have a scope of their own (the model, the cache's shape, the llama.cpp build
and the owner), so another client's files are never even listed for a request. The files outlive
the server: a server restarted on the same model finds them again.

It lives in the pool, which may use both the batch engine and the window's file format (the two
engine rooms never import each other): the scheduler knows it only as `engine.batch.prompt_cache.Spill`.
Two threads use it: the prompt cache's writer puts files, the scheduler's finds, reads and drops them.
A lock keeps the folder's listing, reading and deleting apart from the writer's eviction; the writer
signs and writes a file's bytes outside it (a file appears whole, by a rename), so a step that looks for
a prompt waits for no write.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path

import numpy as np

from prefill.engine.batch.prompt_cache import Spilled, shared_prefix
from prefill.engine.local.kv_disk import (
    HEAD_SIZE,
    CorruptState,
    KvDiskCache,
    StateHeader,
    default_cache_dir,
    default_secret_file,
)
from prefill.engine.local.kv_resume import build_tag, llama_build, model_identity

log = logging.getLogger(__name__)
NOTES_KEPT = 8
PROMPT = "prompt"  # the one segment a header carries: the tokens of the prompt its answer followed


def default_spill_dir() -> Path:
    """The platform's cache folder for Prefill, then `prompts` (beside the window's `kv`)."""
    return default_cache_dir().parent / "prompts"


def spill_folder(root: Path, model: Path, n_ctx_seq: int) -> Path:
    """A model's own folder under `root`: its budget is its own, and no other scheduler evicts from it."""
    name = blake2b(f"{model.resolve()}|{n_ctx_seq}".encode(), digest_size=8).hexdigest()
    return root / f"{model.stem[:40]}-{name}"


@dataclass(frozen=True)
class DiskEntry:
    """A prompt's state file, its header checked."""

    path: Path
    header: StateHeader
    owner: str
    ids: np.ndarray

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.header.tokens

    @property
    def prompt_len(self) -> int:
        return next((n for text, n in self.header.segments if text == PROMPT), len(self.header.tokens))

    @property
    def size(self) -> int:
        return self.header.blob_size + HEAD_SIZE


class PromptSpill:
    """Prompts' states on disk, `budget` bytes at most; `shape` is what a state depends on besides its
    owner and tokens (the model file's identity, the slot's context, the KV type, flash attention).

    `secret_file` signs the files (the install's by default; a test passes its own).
    """

    def __init__(self, folder: Path, budget: int, shape: str, secret_file: Path | None = None):
        self.disk = KvDiskCache(folder, budget, secret_file=secret_file or default_secret_file())
        self.shape = shape
        self.notes: deque[str] = deque(maxlen=NOTES_KEPT)
        self.discarded = 0
        self._scopes: dict[str, str] = {}
        self._lock = threading.RLock()  # the folder's listing, reads and deletes against the writer's eviction
        foreign = self.disk.discard_foreign(build_tag())
        if foreign:
            self._note(f"{foreign} cached prompt file{'s were' if foreign > 1 else ' was'} deleted: written by "
                       "another llama.cpp build, which cannot read them")

    @classmethod
    def for_model(cls, root: Path, budget: int, model: Path, n_ctx_seq: int, kv_type: str, flash_attn_on: bool,
                  secret_file: Path | None = None) -> PromptSpill:
        """The spill of one loaded model, in its own folder under `root`."""
        shape = json.dumps({"model": model_identity(model), "n_ctx_seq": n_ctx_seq, "kv_type": kv_type,
                            "flash_attn": flash_attn_on, "build": llama_build()}, sort_keys=True)
        return cls(spill_folder(root, model, n_ctx_seq), budget, shape, secret_file)

    def scope(self, owner: str) -> str:
        """The scope of `owner`'s files: the build's tag first (kv_disk names files by it), then a hash
        of the shape and the owner."""
        found = self._scopes.get(owner)
        if found is None:
            found = build_tag() + blake2b(f"{self.shape}|{owner}".encode(), digest_size=20).hexdigest()
            self._scopes[owner] = found
        return found

    @property
    def budget(self) -> int:
        return self.disk.budget

    def usage(self) -> tuple[int, int]:
        """(files, bytes) in the folder."""
        with self._lock:
            for _ in range(3):
                try:
                    u = self.disk.usage()
                except FileNotFoundError:  # a file being written was renamed as it was listed
                    continue
                return u.files, u.bytes
        return 0, 0

    # --- writing ----------------------------------------------------------------------------
    def put(self, owner: str, tokens: Sequence[int], prompt_len: int, state: bytearray) -> bool:
        """Write one prompt's state (least recently used files out first to make room); False when it
        was not written (the reason in `notes`)."""
        scope = self.scope(owner)
        header = StateHeader(scope, tuple(tokens), ((PROMPT, min(prompt_len, len(tokens))),), len(state))
        with self._lock:
            if self.disk.has(scope, header.key):
                return True
            why = self.disk.room_for(len(state) + HEAD_SIZE + 64 + 12 * len(tokens))
        if why:
            log.info("a prompt was not kept on disk: %s", why)
            return False
        try:
            self.disk.write(header, state)
        except OSError as e:
            self._note(f"a prompt could not be written to disk: {e.strerror or e}")
            return False
        return True

    # --- reading ----------------------------------------------------------------------------
    def entries(self, owner: str) -> list[DiskEntry]:
        """`owner`'s files with their checked headers; a file whose header fails its checks is deleted
        and said in `notes`."""
        out = []
        with self._lock:
            for path, found in list(self.disk.candidates(self.scope(owner))):
                if isinstance(found, CorruptState):
                    self._discard(path, found)
                    continue
                out.append(DiskEntry(path, found, owner, np.asarray(found.tokens, dtype=np.int64)))
        return out

    def best(self, owner: str, prompt: Sequence[int]) -> tuple[DiskEntry | None, int]:
        """`owner`'s file that shares the longest prefix with `prompt`, and how long that is."""
        ids = np.asarray(prompt, dtype=np.int64)
        found, most = None, 0
        for e in self.entries(owner):
            n = shared_prefix(e.ids, ids)
            if n > most:
                found, most = e, n
        return found, most

    def load(self, entry: Spilled) -> bytearray | None:
        """The state of `entry`, checked whole against its signature; None when it fails (the file is then
        deleted, and why is said in `notes`)."""
        assert isinstance(entry, DiskEntry)
        with self._lock:
            if not entry.path.exists():  # let go to make room since it was listed: a miss, not a fault
                return None
            try:
                state = self.disk.read_blob(entry.path, entry.header)
            except CorruptState as fault:
                self._discard(entry.path, fault)
                return None
        return state

    def drop(self, entry: Spilled) -> None:
        """Delete a file whose prompt a slot holds now (it is kept again when it leaves the slot), or one
        llama.cpp refused."""
        assert isinstance(entry, DiskEntry)
        with self._lock:
            self.disk.discard(entry.path)

    def _discard(self, path: Path, fault: CorruptState) -> None:
        self.disk.discard(path)
        self.discarded += 1
        self._note(f"a cached prompt on disk was discarded ({fault}); its prompt is read again")

    def _note(self, words: str) -> None:
        log.warning("%s", words)
        self.notes.append(words)
