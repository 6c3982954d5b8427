"""Prompts that left their slot, kept in host memory so that a later request finds them again.

When another request takes a slot, the state of the sequence it held (llama.cpp's per-sequence
state: its KV cells) is copied out into an entry, keyed by its tokens and its owner. A new request is
compared with every idle slot and every entry of its own owner; an entry that shares more with its
prompt than the slots do is copied into the slot the request takes before its prefill, so only what
follows the shared prefix is evaluated. llama.cpp's server does the same with `--cache-ram` (its PR
#16391); unlike it, the bound here is counted in the model's memory (`ModelMemory.prompt_cache`), so
the pool's budget holds the cache too.

The entries are bounded in bytes: the least recently used goes first (to disk, when a `Spill` is
given: `pool/prompt_spill.py`, found again from there the same way), and a state larger than the whole
bound is never kept. Another owner's entries are never compared, so a request gets no cached tokens
from another client's conversation.

A state let go to disk is written by a thread of the cache's own (`_Writer`), in the order the states
left, so that no step of the scheduler waits while a large state is signed and written. Until its file
is written it is still found in memory, as any entry is; at most WRITES_WAITING wait for the disk, and
past that the oldest waiting one is not written (it was the least recently used of all).

One thread uses it (the scheduler's), besides its writer; `snapshot` is a frozen value any thread may read.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)
MIN_TOKENS = 32  # a shorter prompt is read again faster than it is kept and looked up
WRITES_WAITING = 4  # states let go that may wait for the disk; past it the oldest waiting is not written


@dataclass(frozen=True)
class PromptCacheSnapshot:
    """What the cache holds and has done since the model loaded."""

    limit: int = 0  # bytes it may hold (0: off)
    entries: int = 0
    bytes: int = 0  # the states it holds, together
    tokens: int = 0  # the tokens those states hold, together
    hits: int = 0  # requests that found their prefix here
    tokens_saved: int = 0  # prompt tokens those requests did not evaluate again
    stored: int = 0  # prompts kept as they left their slot
    evicted: int = 0  # entries dropped, the least recently used first, to keep within `limit`
    disk_limit: int = 0  # bytes of prompts kept on disk once they leave memory (0: none)
    disk_entries: int = 0
    disk_bytes: int = 0
    disk_hits: int = 0  # of `hits`, those read back from disk
    disk_writing: int = 0  # states let go that wait for the disk, or are being written (found in memory until then)
    disk_skipped: int = 0  # states let go that were not written: more than WRITES_WAITING waited already
    discarded: int = 0  # files on disk refused by their checks (damaged, cut short, not written here)
    note: str = ""  # the last thing the disk tier had to say (a file discarded and why)


@dataclass(eq=False)
class CacheEntry:
    """One prompt's state: the tokens its sequence held, whose they were, and llama.cpp's bytes."""

    owner: str
    tokens: tuple[int, ...]
    prompt_len: int  # of the request that held the slot last (the rest of `tokens` is its answer)
    state: bytearray
    ids: np.ndarray = field(init=False, repr=False)  # `tokens`, compared in one pass
    head: tuple[int, ...] = field(init=False, repr=False)  # the first MIN_TOKENS, looked at before `ids`
    used: int = 0  # the cache's clock at the last store or use

    def __post_init__(self) -> None:
        self.ids = np.asarray(self.tokens, dtype=np.int64)
        self.head = self.tokens[:MIN_TOKENS]

    @property
    def size(self) -> int:
        return len(self.state)


def shared_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens two arrays share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def _may_nest(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether one of two prompts whose first tokens are `a` and `b` may start the other (of two heads as
    long, only equal ones: the usual case, one comparison)."""
    return a == b or (len(a) != len(b) and a[:len(b)] == b[:len(a)])


class Spilled(Protocol):
    """A prompt a `Spill` holds."""

    @property
    def owner(self) -> str: ...

    @property
    def tokens(self) -> tuple[int, ...]: ...

    @property
    def prompt_len(self) -> int: ...


class Spill(Protocol):
    """Where the cache puts the prompts it lets go, and finds them again (on disk: pool/prompt_spill.py).

    `put` and `usage` are called from the cache's writer thread while the scheduler's thread may call
    `best`, `load`, `drop` and `usage`: an implementation keeps the two apart."""

    discarded: int  # prompts refused by their checks
    notes: deque[str]  # what it had to say, the last last

    @property
    def budget(self) -> int: ...

    def usage(self) -> tuple[int, int]: ...  # (prompts, bytes)

    def put(self, owner: str, tokens: Sequence[int], prompt_len: int, state: bytearray) -> bool: ...

    def best(self, owner: str, prompt: Sequence[int]) -> tuple[Spilled | None, int]: ...

    def load(self, entry: Spilled) -> bytearray | None: ...  # None: it failed its checks (and is gone)

    def drop(self, entry: Spilled) -> None: ...


Found = CacheEntry | Spilled


class _Writer:
    """Writes the states the cache lets go to its spill on a thread of its own, one at a time, in the order
    they were let go. Until a state is written it is `in_flight` (the cache still finds it in memory)."""

    def __init__(self, spill: Spill, written: Callable[[tuple[int, int]], None]):
        """`written` is told the spill's usage (prompts, bytes) after each write, on the writer's thread."""
        self.spill = spill
        self.written = written
        self.skipped = 0
        self._cv = threading.Condition()
        self._waiting: deque[CacheEntry] = deque()
        self._writing: CacheEntry | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="prefill-prompt-spill", daemon=True)
        self._thread.start()

    def put(self, entry: CacheEntry) -> None:
        """Write `entry` after those let go before it; the oldest waiting one is not written when
        WRITES_WAITING wait already (the disk is slower than prompts are let go)."""
        with self._cv:
            if self._closed:
                return
            if len(self._waiting) >= WRITES_WAITING:
                self._waiting.popleft()
                self.skipped += 1
                log.info("a prompt let go of was not written to disk: %d waited for it already", WRITES_WAITING)
            self._waiting.append(entry)
            self._cv.notify_all()

    def in_flight(self) -> list[CacheEntry]:
        """The states let go and not yet written, the one being written first."""
        with self._cv:
            return ([self._writing] if self._writing is not None else []) + list(self._waiting)

    def cancel(self, entry: CacheEntry) -> None:
        """Do not write `entry` after all (a slot holds its prompt now), unless it is being written."""
        with self._cv:
            if entry in self._waiting:
                self._waiting.remove(entry)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every state let go so far is written; False when `timeout` passed first."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._waiting and self._writing is None, timeout)

    def close(self) -> None:
        """Write what waits, then stop the thread."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._waiting and not self._closed:
                    self._cv.wait()
                if not self._waiting:
                    return  # closed, and everything written
                entry = self._waiting.popleft()
                self._writing = entry
            try:
                self.spill.put(entry.owner, entry.tokens, entry.prompt_len, entry.state)
                self.written(self.spill.usage())
            except Exception:  # a spill that failed loses this prompt's copy on disk, never the scheduler
                log.exception("a prompt could not be written to disk")
            with self._cv:
                self._writing = None
                self._cv.notify_all()


class PromptCache:
    """States of prompts that left their slot, at most `limit` bytes together (0: off); those it lets go
    are written to `spill` when there is one."""

    def __init__(self, limit: int, spill: Spill | None = None):
        self.limit = max(0, limit)
        self.spill = spill if self.limit else None
        self._entries: list[CacheEntry] = []
        self._bytes = 0
        self._clock = itertools.count(1)
        self._hits = self._saved = self._stored = self._evicted = self._disk_hits = 0
        self._disk_usage = self.spill.usage() if self.spill is not None else (0, 0)
        self._writer = _Writer(self.spill, self._on_written) if self.spill is not None else None

    @property
    def on(self) -> bool:
        return self.limit > 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def entries(self) -> list[CacheEntry]:
        """The entries, least recently used first."""
        return sorted(self._entries, key=lambda e: e.used)

    def best(self, owner: str, prompt: Sequence[int]) -> tuple[Found | None, int]:
        """The entry of `owner` that shares the longest prefix with `prompt`, and how long that is (ties:
        the smaller state, less to copy; one in memory before one on disk); (None, 0) when none shares
        a token. An entry in memory counts only where its first MIN_TOKENS tokens are the prompt's (fewer
        are read again faster than a state is copied): the others are passed over on a tuple's comparison,
        since the cache of a busy server holds hundreds of prompts, and a prefix counted in full for each
        cost a request ~0.5 ms before its prefill at 270 of them (the tiny model, one client)."""
        in_memory: CacheEntry | None = None
        most = 0
        head = tuple(prompt[:MIN_TOKENS])
        mine = [e for e in self._entries + self._in_flight() if e.head == head and e.owner == owner]
        if mine:
            ids = np.asarray(prompt, dtype=np.int64)
            for e in mine:
                n = shared_prefix(e.ids, ids)
                if n > most or (n == most and in_memory is not None and n > 0 and e.size < in_memory.size):
                    in_memory, most = e, n
        found: Found | None = in_memory
        if self.spill is not None:
            before = self.spill.discarded
            on_disk, n = self.spill.best(owner, prompt)
            if self.spill.discarded != before:  # a file failed its header's checks and went
                self._disk_usage = self.spill.usage()
            if on_disk is not None and n > most:
                found, most = on_disk, n
        return found, most

    def state_of(self, found: Found) -> bytearray | None:
        """The state to copy into a slot: in memory, or read from disk and checked (None when the file
        failed its checks: it is deleted, and `note` says why)."""
        if isinstance(found, CacheEntry):
            return found.state
        assert self.spill is not None
        state = self.spill.load(found)
        if state is None:
            self._disk_usage = self.spill.usage()
        return state

    def worth_keeping(self, tokens: Sequence[int]) -> bool:
        return self.on and len(tokens) >= MIN_TOKENS

    def store(self, owner: str, tokens: Sequence[int], prompt_len: int, state: bytearray) -> CacheEntry | None:
        """Keep a prompt's state, the least recently used ones out first to make room; returns the entry that
        holds it, None when it is larger than the whole bound. An entry of the same owner whose tokens start
        the new ones is replaced (the new one holds all it held); one that holds all the new one does is
        kept instead."""
        if not self.on or len(state) > self.limit:
            return None
        key = tuple(tokens)
        ids = np.asarray(key, dtype=np.int64)
        key_head = key[:MIN_TOKENS]
        for e in [e for e in self._entries if e.owner == owner and _may_nest(e.head, key_head)]:
            n = shared_prefix(e.ids, ids)
            if n == len(key) and len(e.tokens) >= len(key):  # an entry holds this prompt already
                e.used = next(self._clock)
                return e
            if n == len(e.tokens):
                self._drop(e)
        while self._bytes + len(state) > self.limit:
            oldest = min(self._entries, key=lambda e: e.used)
            self._drop(oldest)
            self._evicted += 1
            if self._writer is not None:
                self._writer.put(oldest)
        entry = CacheEntry(owner, key, prompt_len, state, used=next(self._clock))
        self._entries.append(entry)
        self._bytes += entry.size
        self._stored += 1
        return entry

    def holds(self, entry: CacheEntry) -> bool:
        """Whether `entry` is still in memory (not evicted, replaced, used whole or discarded)."""
        return any(e is entry for e in self._entries)

    def used(self, entry: Found, reused: int) -> None:
        """`entry` was copied into a slot and `reused` of its tokens serve a prompt there. An entry whose
        last prompt the request holds whole leaves the cache (the slot has it now, and keeps it again
        when it leaves); one it shares less with (a system prompt) stays for others."""
        self._hits += 1
        self._saved += reused
        whole = reused + 1 >= entry.prompt_len
        if not isinstance(entry, CacheEntry):
            self._disk_hits += 1
            if whole:
                self.discard(entry)
        elif whole:
            self._drop(entry)
        else:
            entry.used = next(self._clock)

    def discard(self, entry: Found) -> None:
        """Drop an entry (one llama.cpp refused, or a file a slot holds the prompt of now)."""
        if isinstance(entry, CacheEntry):
            self._drop(entry)
        elif self.spill is not None:
            self.spill.drop(entry)
            self._disk_usage = self.spill.usage()

    def _drop(self, entry: CacheEntry) -> None:
        if entry in self._entries:
            self._entries.remove(entry)
            self._bytes -= entry.size
        elif self._writer is not None:
            self._writer.cancel(entry)  # one let go and found again before it was written

    def _in_flight(self) -> list[CacheEntry]:
        return self._writer.in_flight() if self._writer is not None else []

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every state let go so far is on disk (True at once without a spill); False when
        `timeout` passed first."""
        return self._writer.flush(timeout) if self._writer is not None else True

    def close(self) -> None:
        """Write the states that wait for the disk, then stop the writer (the scheduler's close)."""
        if self._writer is not None:
            self._writer.close()

    def _on_written(self, usage: tuple[int, int]) -> None:  # the writer's thread: one assignment
        self._disk_usage = usage

    def snapshot(self) -> PromptCacheSnapshot:
        spill, writer = self.spill, self._writer
        return PromptCacheSnapshot(
            limit=self.limit, entries=len(self._entries), bytes=self._bytes,
            tokens=sum(len(e.tokens) for e in self._entries), hits=self._hits, tokens_saved=self._saved,
            stored=self._stored, evicted=self._evicted, disk_limit=spill.budget if spill is not None else 0,
            disk_entries=self._disk_usage[0], disk_bytes=self._disk_usage[1], disk_hits=self._disk_hits,
            discarded=spill.discarded if spill is not None else 0,
            disk_writing=len(writer.in_flight()) if writer is not None else 0,
            disk_skipped=writer.skipped if writer is not None else 0,
            note=spill.notes[-1] if spill is not None and spill.notes else "")
