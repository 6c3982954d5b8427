"""Moving a sequence's KV cache between llama.cpp and the disk cache.

A saved state belongs to a scope: the model file, the settings that shape the
cache (context, KV type, flash attention) and the llama.cpp build. Restoring
picks, among the states of the engine's scope, the one whose segments the new
prompt starts with over the most tokens, and only when that beats what the live
cache already holds; what it holds past the prompt is trimmed by the usual
prefix logic of the next request.

llama.cpp reads a blob only after `kv_disk` checked its file (signed with this
install's secret, so a file dropped into the folder by someone else is refused
like a damaged one), and after the blob's own head (llama.cpp's magic, sequence
0) is checked here; a blob llama.cpp still refuses (it returns 0) is deleted and
the cache cleared, with a note.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path

import llama_cpp

from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.local.kv_disk import HEAD_SIZE, CorruptState, KvDiskCache, SaveResult, StateHeader, state_key
from prefill.engine.settings import LoadSettings
from prefill.engine.vision.projector import IMAGE_TOKEN_BASE

_LLAMA_SEQ_MAGIC = struct.pack("<Ii", 0xAF143CD8, 0)  # llama.cpp's state magic, then sequence 0
_EDGE = 1024 * 1024


@dataclass(frozen=True)
class Restored:
    """What a restore did. `header` is set when a state was restored; `note` says what was
    discarded and why; `cleared` when llama.cpp refused a state and the cache was emptied."""

    header: StateHeader | None = None
    ms: float = 0.0
    note: str = ""
    cleared: bool = False


def model_identity(path: Path) -> str:
    """The model file's identity: its size and a hash of its first MiB and last MiB (the header,
    vocabulary and the ends of the weights), the same wherever the file is moved or copied."""
    h = blake2b(digest_size=16)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(size.to_bytes(8, "little"))
        h.update(f.read(_EDGE))
        f.seek(max(0, size - _EDGE))
        h.update(f.read(_EDGE))
    return h.hexdigest()


@functools.cache
def llama_build() -> str:
    """The llama.cpp build: the bindings' version and the library file (a rebuild changes it)."""
    lib = getattr(getattr(llama_cpp, "llama_cpp", None), "_lib", None)
    name = getattr(lib, "_name", "") or ""
    try:
        st = os.stat(name)
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = "?"
    return f"{llama_cpp.__version__}:{stamp}"


def build_tag() -> str:
    """8 hex digits for the llama.cpp build; every scope starts with them."""
    return blake2b(llama_build().encode(), digest_size=4).hexdigest()


def cache_scope(model: str, settings: LoadSettings, n_ctx: int, flash_attn_on: bool) -> str:
    """Everything but the tokens that a saved state depends on: the build's tag, then a hash of
    the model's identity, the cache settings (flash attention as llama.cpp resolved it) and the build."""
    doc = {"model": model, "n_ctx": n_ctx, "kv_type": settings.kv_type, "flash_attn": flash_attn_on,
           "build": llama_build()}
    return build_tag() + blake2b(json.dumps(doc, sort_keys=True).encode(), digest_size=20).hexdigest()


def reusable(segments: Sequence[tuple[str, int]], text: str) -> int:
    """Tokens of the leading segments that `text` starts with (as ChatEngine reuses them)."""
    pos = n = 0
    for seg_text, count in segments:
        if not seg_text or not text.startswith(seg_text, pos):
            break
        pos += len(seg_text)
        n += count
    return n


# --- llama.cpp's per-sequence state ----------------------------------------------------
def read_seq_state(rt: LlamaRuntime) -> bytearray | None:
    """Sequence 0's state as llama.cpp writes it; None when it gives nothing."""
    size = int(llama_cpp.llama_state_seq_get_size(rt.ctx, 0))
    if size <= 0:
        return None
    blob = bytearray(size)
    ptr = (ctypes.c_uint8 * size).from_buffer(blob)
    n = int(llama_cpp.llama_state_seq_get_data(rt.ctx, ptr, size, 0))
    del ptr
    return blob if n == size else None


def write_seq_state(rt: LlamaRuntime, blob: bytearray) -> bool:
    """Put a checked blob into sequence 0; False when llama.cpp refuses it (the cache is then cleared)."""
    if len(blob) < len(_LLAMA_SEQ_MAGIC) or bytes(blob[: len(_LLAMA_SEQ_MAGIC)]) != _LLAMA_SEQ_MAGIC:
        return False
    rt.kv_truncate(0)
    ptr = (ctypes.c_uint8 * len(blob)).from_buffer(blob)
    ok = int(llama_cpp.llama_state_seq_set_data(rt.ctx, ptr, len(blob), 0)) > 0
    del ptr
    if not ok:
        rt.kv_truncate(0)
    return ok


# --- save and restore ------------------------------------------------------------------
def save(
    rt: LlamaRuntime, disk: KvDiskCache, scope: str, tokens: Sequence[int], segments: Sequence[tuple[str, int]]
) -> SaveResult:
    """Save the live cache under its key, unless it is empty or already saved."""
    if not tokens or disk.budget <= 0:
        return SaveResult("nothing")
    t0 = time.perf_counter()
    key = state_key(scope, tokens)
    if disk.has(scope, key):
        return SaveResult("kept", ms=(time.perf_counter() - t0) * 1000)
    size = int(llama_cpp.llama_state_seq_get_size(rt.ctx, 0))
    why = disk.room_for(size + HEAD_SIZE + 64 + 12 * len(tokens) + sum(len(t) * 4 + 16 for t, _ in segments))
    if why:
        return SaveResult("skipped", note=why)
    blob = read_seq_state(rt)
    if blob is None:
        return SaveResult("skipped", note="llama.cpp gave no state for this model")
    header = StateHeader(scope, tuple(tokens), tuple(segments), len(blob))
    try:
        path = disk.write(header, blob)
    except OSError as e:
        return SaveResult("skipped", note=f"the state could not be written: {e.strerror or e}")
    return SaveResult("written", path.stat().st_size, (time.perf_counter() - t0) * 1000)


def restore(rt: LlamaRuntime, disk: KvDiskCache, scope: str, text: str, live: int) -> Restored:
    """Restore the saved state that covers more of `text` than the `live` cache's tokens.

    Faulty files met on the way are deleted and named in the note; the best usable one wins.
    """
    if disk.budget <= 0:
        return Restored()
    t0 = time.perf_counter()
    notes: list[str] = []
    foreign = disk.discard_foreign(scope[:8])
    if foreign:
        notes.append(f"{foreign} saved cache{'s were' if foreign > 1 else ' was'} deleted: made by another "
                     "llama.cpp build, which cannot read them")
    ranked: list[tuple[int, Path, StateHeader]] = []
    for path, found in disk.candidates(scope):
        if isinstance(found, CorruptState):
            disk.discard(path)
            notes.append(f"a saved cache was discarded ({found})")
            continue
        if len(found.tokens) > rt.n_ctx or any(rt.n_vocab <= t < IMAGE_TOKEN_BASE for t in found.tokens):
            disk.discard(path)
            notes.append("a saved cache was discarded (it does not fit this model's context or vocabulary)")
            continue
        n = reusable(found.segments, text)
        if n > live:
            ranked.append((n, path, found))
    # Most tokens reused first; of equals, the smallest state (less to read, nothing to trim).
    for _n, path, header in sorted(ranked, key=lambda r: (-r[0], len(r[2].tokens))):
        try:
            blob = disk.read_blob(path, header)
        except CorruptState as fault:
            disk.discard(path)
            notes.append(f"a saved cache was discarded ({fault})")
            continue
        if write_seq_state(rt, blob) and rt.kv_cells_used() == len(header.tokens):
            return Restored(header, (time.perf_counter() - t0) * 1000, "; ".join(notes))
        rt.kv_truncate(0)
        disk.discard(path)
        notes.append("llama.cpp refused a saved cache (another build or a damaged state): it was "
                     "deleted and the cache cleared")
        return Restored(None, 0.0, "; ".join(notes), cleared=True)
    return Restored(None, 0.0, "; ".join(notes))
