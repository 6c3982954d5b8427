"""The prompt cache's own rules, without a model: its byte bound, least recently used out first, one
entry per conversation, owners kept apart, and the disk tier's files checked before they are used."""

from __future__ import annotations

from pathlib import Path

from prefill.engine.batch.prompt_cache import MIN_TOKENS, PromptCache
from prefill.pool.prompt_spill import DiskEntry, PromptSpill

LONG = MIN_TOKENS + 8


def conv(start: int, n: int = LONG) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def state(size: int, fill: int = 0) -> bytearray:
    return bytearray([fill % 256]) * size


def test_the_bytes_never_pass_the_bound_and_the_least_recently_used_go_first() -> None:
    cache = PromptCache(250)
    convs = [conv(1000 * i) for i in range(5)]
    for c in convs:
        assert cache.store("a", c, len(c), state(100))
        assert cache.bytes <= 250
    assert [e.tokens for e in cache.entries()] == convs[3:]  # 0, 1, 2 out, oldest first
    assert cache.snapshot().evicted == 3 and cache.snapshot().stored == 5
    found, n = cache.best("a", convs[3] + (7,))
    assert found is not None and n == LONG
    cache.used(found, LONG // 2)  # shares only half of its last prompt: it stays, now the most recent
    cache.store("a", conv(9000), LONG, state(100))
    assert [e.tokens for e in cache.entries()] == [convs[3], conv(9000)]  # 4 went, not the one just used


def test_a_state_larger_than_the_bound_is_not_kept_and_an_empty_bound_keeps_nothing() -> None:
    cache = PromptCache(100)
    assert not cache.store("a", conv(0), LONG, state(101))
    assert cache.snapshot().entries == 0
    off = PromptCache(0)
    assert not off.on and not off.worth_keeping(conv(0))
    assert not off.store("a", conv(0), LONG, state(1))


def test_another_owner_never_finds_an_entry() -> None:
    cache = PromptCache(1000)
    cache.store("alice", conv(0), LONG, state(10))
    assert cache.best("bob", conv(0)) == (None, 0)
    found, n = cache.best("alice", conv(0))
    assert found is not None and n == LONG


def test_a_conversation_that_grew_replaces_its_shorter_entry() -> None:
    cache = PromptCache(1000)
    first = conv(0)
    cache.store("a", first, LONG, state(10))
    longer = first + conv(5000, 10)
    cache.store("a", longer, len(longer), state(20))
    assert [e.tokens for e in cache.entries()] == [longer] and cache.bytes == 20
    cache.store("a", first, LONG, state(10))  # all of it is in the longer one already
    assert [e.tokens for e in cache.entries()] == [longer]
    cache.store("b", first, LONG, state(10))  # another owner's is its own
    assert cache.snapshot().entries == 2


def test_an_entry_taken_whole_leaves_the_cache_and_counts_a_hit() -> None:
    cache = PromptCache(1000)
    cache.store("a", conv(0), LONG, state(10))
    found, n = cache.best("a", conv(0) + (1, 2, 3))
    assert found is not None
    cache.used(found, n)
    snap = cache.snapshot()
    assert snap.entries == 0 and snap.bytes == 0 and snap.hits == 1 and snap.tokens_saved == LONG


def test_of_two_entries_the_longest_shared_prefix_wins() -> None:
    cache = PromptCache(1000)
    system = conv(0, 20)
    a = system + conv(100, 30)
    b = system + conv(200, 30)
    cache.store("x", a, len(a), state(10))
    cache.store("x", b, len(b), state(10))
    found, n = cache.best("x", b + (5,))
    assert found is not None and found.tokens == b and n == len(b)
    found, n = cache.best("x", a[:MIN_TOKENS] + (7,))
    assert found is not None and n == MIN_TOKENS
    assert cache.best("x", system + (7,)) == (None, 0)  # fewer than MIN_TOKENS shared: never worth a copy


def test_prompts_let_go_are_written_to_disk_and_found_again(tmp_path: Path) -> None:
    spill = PromptSpill(tmp_path / "prompts", 1 << 20, "shape", secret_file=tmp_path / "key")
    cache = PromptCache(250, spill)
    convs = [conv(1000 * i) for i in range(3)]
    for c in convs:
        cache.store("a", c, len(c), state(100, fill=len(c)))
    assert cache.flush(30)  # written by the cache's own thread, in the order they were let go
    snap = cache.snapshot()
    assert (snap.entries, snap.disk_entries, snap.disk_writing) == (2, 1, 0) and snap.disk_bytes > 100
    found, n = cache.best("a", convs[0] + (5,))
    assert isinstance(found, DiskEntry) and n == LONG
    assert cache.state_of(found) == state(100, fill=LONG)
    assert cache.best("b", convs[0]) == (None, 0)  # another owner's files are not even listed
    cache.used(found, n)
    assert cache.snapshot().disk_entries == 0 and cache.snapshot().disk_hits == 1  # a slot holds it now
    cache.close()


def test_a_tampered_file_is_discarded_in_words(tmp_path: Path) -> None:
    spill = PromptSpill(tmp_path / "prompts", 1 << 20, "shape", secret_file=tmp_path / "key")
    assert spill.put("a", conv(0), LONG, state(100))
    (path,) = (tmp_path / "prompts").glob("*.kvstate")
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # one bit of llama.cpp's bytes: the header still reads, the whole fails its checksum
    path.write_bytes(raw)
    cache = PromptCache(250, spill)
    found, n = cache.best("a", conv(0))
    assert found is not None and n == LONG  # its header is sound
    assert cache.state_of(found) is None  # its state is not
    snap = cache.snapshot()
    assert not path.exists() and snap.discarded == 1 and snap.disk_entries == 0
    assert "discarded" in snap.note and "checksum" in snap.note
    assert spill.put("a", conv(0), LONG, state(100))
    (path,) = (tmp_path / "prompts").glob("*.kvstate")
    head = bytearray(path.read_bytes())
    head[100] ^= 0xFF  # the header itself: refused when the folder is listed, as a server starting finds it
    path.write_bytes(head)
    again = PromptSpill(tmp_path / "prompts", 1 << 20, "shape", secret_file=tmp_path / "key")
    assert PromptCache(250, again).best("a", conv(0)) == (None, 0)
    assert not path.exists() and again.discarded == 1 and "checksum" in again.notes[-1]
