"""The disk cache's files: written whole, checked at the door, kept to a budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefill.engine.local import kv_disk
from prefill.engine.local.kv_disk import HEAD_SIZE, CorruptState, KvDiskCache, StateHeader, default_secret_file

SCOPE = "a" * 40


@pytest.fixture
def kv(tmp_path: Path) -> Path:
    """A cache folder of the test's own; its secret is made beside it, as `kv.key`."""
    folder = tmp_path / "kv"
    folder.mkdir()
    return folder


def header(tokens: list[int], blob: bytes, scope: str = SCOPE) -> StateHeader:
    return StateHeader(scope, tuple(tokens), (("hello", len(tokens)),), len(blob))


def saved(disk: KvDiskCache, tokens: list[int], blob: bytes = b"x" * 1000, scope: str = SCOPE) -> Path:
    return disk.write(header(tokens, blob, scope), blob)


def test_round_trip(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    h = header([1, 2, 3], b"state")
    path = disk.write(h, b"state")
    fresh = KvDiskCache(kv)
    ((found_path, found),) = list(fresh.candidates(SCOPE))
    assert found_path == path and found == h
    assert fresh.read_blob(path, h) == b"state"
    assert fresh.has(SCOPE, h.key) and not fresh.has(SCOPE, header([1, 2], b"").key)
    assert not list(kv.glob(".tmp-*"))


def test_other_scopes_are_not_candidates(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
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
    elif how == "version 1":
        data[0:8] = b"PFKVST\x00\x01"
    elif how == "padded":
        data += b"\x00"
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "header", "magic", "version 1", "padded", "empty"])
def test_damaged_headers_are_refused(kv: Path, how: str) -> None:
    path = saved(KvDiskCache(kv, min_free=0), [5, 6, 7])
    _damage(path, how)
    ((_, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert isinstance(found, CorruptState)


def test_a_damaged_blob_fails_its_checksum(kv: Path) -> None:
    path = saved(KvDiskCache(kv, min_free=0), [5, 6, 7])
    _damage(path, "blob")
    disk = KvDiskCache(kv)
    ((_, h),) = list(disk.candidates(SCOPE))
    assert isinstance(h, StateHeader)
    with pytest.raises(CorruptState, match="checksum"):
        disk.read_blob(path, h)


def test_a_file_renamed_to_another_key_is_refused(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    path = saved(disk, [1, 2, 3])
    other = disk.path_for(SCOPE, header([9, 9], b"").key)
    os.replace(path, other)
    ((_, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert isinstance(found, CorruptState) and "name" in str(found)


def test_header_with_more_segment_tokens_than_tokens_is_refused(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    bad = StateHeader(SCOPE, (1, 2), (("a", 1), ("b", 5)), 3)
    disk.write(bad, b"abc")
    ((_, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert isinstance(found, CorruptState)


def test_eviction_keeps_the_budget_and_drops_the_least_recently_used(kv: Path) -> None:
    disk = KvDiskCache(kv, budget=10_000, min_free=0)
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


def test_a_state_larger_than_the_budget_is_not_written(kv: Path) -> None:
    disk = KvDiskCache(kv, budget=1000, min_free=0)
    saved(disk, [1], b"x" * 100)
    assert "larger than the cache budget" in disk.room_for(5000)
    assert disk.usage().files == 1  # nothing evicted for a state that cannot fit anyway


def test_the_disk_is_never_filled(kv: Path) -> None:
    disk = KvDiskCache(kv, budget=2**60, min_free=2**60)
    assert "free on the disk" in disk.room_for(100)


def test_clear_removes_states_and_leftover_temporaries(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    saved(disk, [1])
    saved(disk, [2])
    (kv / ".tmp-123-x.kvstate").write_bytes(b"half")
    (kv / "unrelated.txt").write_text("kept")
    assert disk.clear() > 0
    assert disk.usage().files == 0 and sorted(p.name for p in kv.iterdir()) == ["unrelated.txt"]


def test_discard_foreign_keeps_only_one_prefix(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    mine = saved(disk, [1])
    saved(disk, [1], scope="b" * 40)
    saved(disk, [2], scope="c" * 40)
    assert disk.discard_foreign("a" * 8) == 2
    assert [p.name for p in kv.iterdir()] == [mine.name]


def test_saved_states_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        disk = KvDiskCache(tmp_path / "kv", min_free=0)
        assert disk.room_for(1000) == ""
        path = saved(disk, [1, 2, 3])
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(disk.folder).st_mode & 0o777 == 0o700


# --- the install's secret ---------------------------------------------------------------
def _parts(path: Path) -> tuple[bytes, bytes, bytes]:
    """A state file's head, header and blob."""
    data = path.read_bytes()
    hlen = int.from_bytes(data[8:12], "little")
    return data[:HEAD_SIZE], data[HEAD_SIZE : HEAD_SIZE + hlen], data[HEAD_SIZE + hlen :]


def test_a_state_written_with_another_secret_is_refused(kv: Path, tmp_path: Path) -> None:
    elsewhere = KvDiskCache(kv, min_free=0, secret_file=tmp_path / "elsewhere.key")
    path = saved(elsewhere, [1, 2, 3])  # a whole, well-named file, but not signed by this install
    ((found_path, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert found_path == path and isinstance(found, CorruptState) and "not written here" in str(found)
    assert KvDiskCache(kv, secret_file=tmp_path / "elsewhere.key").header(path, SCOPE).tokens == (1, 2, 3)


@pytest.mark.parametrize("state_mac", ["the header's", "the blob's"])
def test_a_header_moved_onto_another_blob_is_refused(kv: Path, state_mac: str) -> None:
    disk = KvDiskCache(kv, min_free=0)
    one = saved(disk, [1, 2, 3], b"1" * 1000)
    other = saved(disk, [4, 5, 6], b"2" * 1000)  # both signed with this install's secret
    head, header_bytes, _ = _parts(one)
    other_head, _, other_blob = _parts(other)
    if state_mac == "the blob's":  # the MAC that signed the other blob, with its own header
        head = head[:-32] + other_head[-32:]
    one.write_bytes(head + header_bytes + other_blob)  # the name still hashes from the header
    fresh = KvDiskCache(kv)
    found = fresh.header(one, SCOPE)
    assert found.tokens == (1, 2, 3)  # the header alone is this install's
    with pytest.raises(CorruptState, match="checksum"):
        fresh.read_blob(one, found)


def test_the_secret_is_private_and_stable(kv: Path, tmp_path: Path) -> None:
    secret = tmp_path / "data" / "kv-state.key"
    old = os.umask(0o022)
    try:
        disk = KvDiskCache(kv, min_free=0, secret_file=secret)
        assert not secret.exists()  # made on first need, not when the cache is built
        h = header([1, 2, 3], b"state")
        path = disk.write(h, b"state")
    finally:
        os.umask(old)
    assert os.stat(secret).st_mode & 0o777 == 0o600 and os.stat(secret.parent).st_mode & 0o777 == 0o700
    made = secret.read_bytes()
    assert len(made) == 32
    again = KvDiskCache(kv, secret_file=secret)  # the next run
    assert again.read_blob(path, again.header(path, SCOPE)) == b"state"
    assert secret.read_bytes() == made
    assert not [p for p in secret.parent.iterdir() if p != secret]  # no temporary left


def test_where_the_secret_is_kept(tmp_path: Path) -> None:
    assert KvDiskCache(tmp_path / "kv").secret_file == tmp_path / "kv.key"  # beside a folder of one's own
    assert KvDiskCache().secret_file == default_secret_file()  # the app's: its data folder
    assert default_secret_file().parent != kv_disk.default_cache_dir().parent


@pytest.mark.parametrize("damage", [b"", b"short", b"x" * 33])
def test_a_damaged_secret_is_replaced_and_old_states_refused(kv: Path, damage: bytes) -> None:
    disk = KvDiskCache(kv, min_free=0)
    path = saved(disk, [1, 2, 3])
    disk.secret_file.write_bytes(damage)
    fresh = KvDiskCache(kv, min_free=0)
    ((_, found),) = list(fresh.candidates(SCOPE))
    assert isinstance(found, CorruptState)
    made = disk.secret_file.read_bytes()
    assert len(made) == 32 and os.stat(disk.secret_file).st_mode & 0o777 == 0o600
    fresh.discard(path)
    path = saved(fresh, [1, 2, 3])  # states written now are kept across runs
    ((_, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert isinstance(found, StateHeader) and disk.secret_file.read_bytes() == made


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="needs a user that mode 000 stops")
def test_an_unreadable_secret_is_replaced(kv: Path) -> None:
    disk = KvDiskCache(kv, min_free=0)
    path = saved(disk, [1, 2, 3])
    os.chmod(disk.secret_file, 0)
    ((_, found),) = list(KvDiskCache(kv).candidates(SCOPE))
    assert isinstance(found, CorruptState) and len(disk.secret_file.read_bytes()) == 32
    assert path.exists()  # refused here; `kv_resume.restore` discards it


def test_of_two_processes_making_the_secret_the_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "data" / "kv-state.key"
    link = os.link

    def another_process_first(src: Path, dst: Path) -> None:
        secret.write_bytes(b"w" * 32)  # the winner linked its secret a moment earlier
        link(src, dst)

    monkeypatch.setattr(kv_disk.os, "link", another_process_first)
    assert kv_disk.install_secret(secret) == b"w" * 32  # the loser reads the winner's
    assert [p.name for p in secret.parent.iterdir()] == [secret.name]
