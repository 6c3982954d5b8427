"""The disk cache's files: written whole, checked at the door, kept to a budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefill.engine.local.kv_disk import CorruptState, KvDiskCache, StateHeader

SCOPE = "a" * 40


def header(tokens: list[int], blob: bytes, scope: str = SCOPE) -> StateHeader:
    return StateHeader(scope, tuple(tokens), (("hello", len(tokens)),), len(blob))


def saved(disk: KvDiskCache, tokens: list[int], blob: bytes = b"x" * 1000, scope: str = SCOPE) -> Path:
    return disk.write(header(tokens, blob, scope), blob)


def test_round_trip(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    h = header([1, 2, 3], b"state")
    path = disk.write(h, b"state")
    fresh = KvDiskCache(tmp_path)
    ((found_path, found),) = list(fresh.candidates(SCOPE))
    assert found_path == path and found == h
    assert fresh.read_blob(path, h) == b"state"
    assert fresh.has(SCOPE, h.key) and not fresh.has(SCOPE, header([1, 2], b"").key)
    assert not list(tmp_path.glob(".tmp-*"))


def test_other_scopes_are_not_candidates(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    saved(disk, [1, 2], scope="b" * 40)
    assert list(disk.candidates(SCOPE)) == []


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[:-10]
    elif how == "blob":
        data[-5] ^= 0xFF
    elif how == "header":
        data[40] ^= 0x01
    elif how == "magic":
        data[0:8] = b"GGUF\x00\x00\x00\x03"
    elif how == "padded":
        data += b"\x00"
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "header", "magic", "padded", "empty"])
def test_damaged_headers_are_refused(tmp_path: Path, how: str) -> None:
    path = saved(KvDiskCache(tmp_path, min_free=0), [5, 6, 7])
    _damage(path, how)
    ((_, found),) = list(KvDiskCache(tmp_path).candidates(SCOPE))
    assert isinstance(found, CorruptState)


def test_a_damaged_blob_fails_its_checksum(tmp_path: Path) -> None:
    path = saved(KvDiskCache(tmp_path, min_free=0), [5, 6, 7])
    _damage(path, "blob")
    disk = KvDiskCache(tmp_path)
    ((_, h),) = list(disk.candidates(SCOPE))
    assert isinstance(h, StateHeader)
    with pytest.raises(CorruptState, match="checksum"):
        disk.read_blob(path, h)


def test_a_file_renamed_to_another_key_is_refused(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    path = saved(disk, [1, 2, 3])
    other = disk.path_for(SCOPE, header([9, 9], b"").key)
    os.replace(path, other)
    ((_, found),) = list(KvDiskCache(tmp_path).candidates(SCOPE))
    assert isinstance(found, CorruptState) and "name" in str(found)


def test_header_with_more_segment_tokens_than_tokens_is_refused(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    bad = StateHeader(SCOPE, (1, 2), (("a", 1), ("b", 5)), 3)
    disk.write(bad, b"abc")
    ((_, found),) = list(KvDiskCache(tmp_path).candidates(SCOPE))
    assert isinstance(found, CorruptState)


def test_eviction_keeps_the_budget_and_drops_the_least_recently_used(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, budget=10_000, min_free=0)
    paths = []
    for i in range(3):
        assert disk.room_for(3000) == ""
        paths.append(saved(disk, [i], b"x" * 3000))
        os.utime(paths[-1], ns=(i * 10**9, i * 10**9))  # distinct last-use times
    assert disk.usage().files == 3
    assert disk.has(SCOPE, header([0], b"").key)  # used again: now the most recent
    assert disk.usage().bytes + 3000 > disk.budget
    assert disk.room_for(3000) == ""
    assert disk.usage().bytes + 3000 <= disk.budget
    assert [p.exists() for p in paths] == [True, False, True]


def test_a_state_larger_than_the_budget_is_not_written(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, budget=1000, min_free=0)
    saved(disk, [1], b"x" * 100)
    assert "larger than the cache budget" in disk.room_for(5000)
    assert disk.usage().files == 1  # nothing evicted for a state that cannot fit anyway


def test_the_disk_is_never_filled(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, budget=2**60, min_free=2**60)
    assert "free on the disk" in disk.room_for(100)


def test_clear_removes_states_and_leftover_temporaries(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    saved(disk, [1])
    saved(disk, [2])
    (tmp_path / ".tmp-123-x.kvstate").write_bytes(b"half")
    (tmp_path / "unrelated.txt").write_text("kept")
    assert disk.clear() > 0
    assert disk.usage().files == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.txt"]


def test_discard_foreign_keeps_only_one_prefix(tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path, min_free=0)
    mine = saved(disk, [1])
    saved(disk, [1], scope="b" * 40)
    saved(disk, [2], scope="c" * 40)
    assert disk.discard_foreign("a" * 8) == 2
    assert [p.name for p in tmp_path.iterdir()] == [mine.name]


def test_saved_states_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        disk = KvDiskCache(tmp_path / "kv", min_free=0)
        assert disk.room_for(1000) == ""
        path = saved(disk, [1, 2, 3])
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(disk.folder).st_mode & 0o777 == 0o700
