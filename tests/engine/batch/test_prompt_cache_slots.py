"""The prompt cache in the batched scheduler, on real llama.cpp (the tiny model; SmolLM2 for the answers):
a prompt that left its slot is found again on any slot, within its byte bound, by its owner only."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.batch.request import BatchRequest
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.events import PrefillDone
from prefill.pool.prompt_spill import DiskEntry, PromptSpill
from tests.engine.batch.test_scheduler import GREEDY, WAIT_S, Collector, make_scheduler

pytestmark = pytest.mark.model
RULES = "Answer in short plain sentences, one fact at a time, and never give a fact twice. " * 2
TOPICS = ("the sea", "mountains", "deserts")
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def tokens(sched: BatchScheduler, text: str, first: bool = True) -> tuple[int, ...]:
    return tuple(sched.runtime.tokenize(text, add_special=first))


def conversation(sched: BatchScheduler, i: int, words: int = 60) -> tuple[int, ...]:
    """A prompt of its own (it shares only its first few tokens with another), as long as the others."""
    return tokens(sched, f"conversation {i}: " + " ".join(WORDS[(i + k) % 10] for k in range(words)))


def ask(sched: BatchScheduler, prompt: tuple[int, ...], owner: str = "", **sampling: object) -> Collector:
    c = Collector()
    sched.submit(BatchRequest(prompt, replace(GREEDY, **sampling), c, owner=owner))
    c.wait()
    return c


def cached(c: Collector) -> int:
    done: PrefillDone = c.prefill
    return done.cached_tokens


@pytest.fixture
def two(tiny_model: Path) -> Iterator[BatchScheduler]:
    s = make_scheduler(tiny_model, 2, n_ctx=1024)
    s.keep_ahead = False  # these count what admissions keep; what the idle thread stores ahead is tested below
    yield s
    s.close()


def test_a_prompt_prefilled_on_slot_0_is_reused_on_slot_1(two: BatchScheduler) -> None:
    a, b = conversation(two, 0), conversation(two, 1)
    c = conversation(two, 2, words=10)  # short: the slot it ends on holds fewer cells than a's next turn
    ask(two, a)  # slot 0
    ask(two, b)  # slot 1, the empty one
    ask(two, c)  # slot 0 again, the least recently used: a leaves it, into the cache
    assert two.snapshot().prompt_cache.entries == 1
    more = a + tokens(two, " and then some more words", first=False)
    again = ask(two, more)  # goes to slot 1 (b's, now the least recently used), a copied into it
    assert cached(again) == len(a)
    snap = two.snapshot()
    assert snap.slots[1].kv_cells >= len(more) and snap.slots[0].kv_cells < len(more)  # it ran on slot 1
    assert snap.prompt_cache.hits == 1 and snap.prompt_cache.tokens_saved == len(a)
    assert snap.prompt_cache.entries == 1  # b, which left slot 1; a is in its slot, not in the cache


def test_three_conversations_taking_turns_on_two_slots_each_keep_their_prefix(tiny_model: Path) -> None:
    def turns(sched: BatchScheduler) -> list[tuple[int, int, int]]:
        """(cached, prompt, new tokens) of every turn after the first of three conversations."""
        chats = [conversation(sched, i, words=120) for i in range(3)]
        out = []
        for turn in range(4):
            for i in range(3):
                new = tokens(sched, f" turn {turn} of {i}: " + " ".join(WORDS[:turn + i + 2]), first=False)
                chats[i] += new if turn else ()
                c = ask(sched, chats[i])
                if turn:
                    out.append((cached(c), len(chats[i]), len(new)))
        return out

    with_cache = make_scheduler(tiny_model, 2, n_ctx=1024)
    try:
        seen = turns(with_cache)
        assert all(n_cached >= prompt - new for n_cached, prompt, new in seen), seen
        assert with_cache.snapshot().prompt_cache.hits == len(seen)
    finally:
        with_cache.close()
    without = make_scheduler(tiny_model, 2, n_ctx=1024, prompt_cache_bytes=0)
    try:  # what it does without the cache: each conversation finds its slot taken and reads its prompt again
        assert all(n_cached < (prompt - new) // 2 for n_cached, prompt, new in turns(without))
    finally:
        without.close()


@pytest.fixture(scope="module")
def one_state(tiny_model: Path) -> int:
    """The bytes one conversation's state takes in the cache (they all are as long)."""
    probe = make_scheduler(tiny_model, 1, n_ctx=1024)
    try:
        ask(probe, conversation(probe, 0))
        ask(probe, conversation(probe, 1))  # 0 leaves its slot
        one = probe.snapshot().prompt_cache.bytes
        assert one > 0
        return one
    finally:
        probe.close()


def test_the_cache_keeps_to_its_bound_the_oldest_out_first(tiny_model: Path, one_state: int) -> None:
    limit = int(one_state * 2.5)
    sched = make_scheduler(tiny_model, 1, n_ctx=1024, prompt_cache_bytes=limit)
    try:
        convs = [conversation(sched, i) for i in range(5)]
        for c in convs:
            ask(sched, c)
            snap = sched.snapshot().prompt_cache
            assert snap.bytes <= limit and snap.limit == limit
        snap = sched.snapshot().prompt_cache
        assert snap.entries == 2 and snap.evicted == 2 and snap.stored == 4
        kept = sched.prompt_cache.entries()  # least recently used first
        assert [e.tokens[:len(c)] for e, c in zip(kept, convs[2:4], strict=True)] == convs[2:4]  # 0 and 1 went
        more = tokens(sched, " more", first=False)
        assert cached(ask(sched, convs[3] + more)) == len(convs[3])
        assert cached(ask(sched, convs[0] + more)) < len(convs[0]) // 2  # evicted: read again
        assert sched.snapshot().prompt_cache.bytes <= limit
    finally:
        sched.close()


def test_another_owners_request_gets_no_cached_tokens(tiny_model: Path) -> None:
    sched = make_scheduler(tiny_model, 1, n_ctx=1024)
    try:
        p, q = conversation(sched, 0), conversation(sched, 1)
        ask(sched, p, owner="alice")
        ask(sched, q, owner="alice")  # p leaves the slot, kept as alice's
        stranger = ask(sched, p, owner="bob")
        assert cached(stranger) == 0 and sched.snapshot().prompt_cache.hits == 0
        assert cached(ask(sched, p, owner="alice")) == len(p) - 1  # hers, from the cache
        assert sched.snapshot().prompt_cache.hits == 1
    finally:
        sched.close()


def test_answers_with_the_cache_are_token_for_token_those_without(smollm2: Path) -> None:
    """SmolLM2, greedy and seeded: conversations interleaved on two slots, their prompts copied back from
    the cache, answer token for token as on three slots without a cache, where each kept its own.

    (Not compared: two slots without the cache, which read each prompt again in one pass. A prompt read
    in one pass and one read turn by turn may part at a near tie, cache or no cache: llama.cpp's sums
    are not the same in batches of other sizes. The copy changes no bit of what the slot held.)"""
    def answers(n_slots: int, cache: int | None) -> tuple[list[str], int]:
        sched = make_scheduler(smollm2, n_slots, n_ctx=1024, prompt_cache_bytes=cache)
        try:
            chats = [tokens(sched, f"<|im_start|>system\nYou know {w} well. {RULES}<|im_end|>\n<|im_start|>user\n"
                                   f"Tell me about {w} and why it matters.") for w in TOPICS]
            out = []
            for turn in range(3):
                for i in range(3):
                    if turn:
                        chats[i] += tokens(sched, f" Say more about point {turn}.", first=False)
                    out.append(ask(sched, chats[i], max_tokens=16, seed=42).wait().text)
            return out, sched.snapshot().prompt_cache.hits
        finally:
            sched.close()

    cached_answers, hits = answers(2, None)
    assert hits == 6  # every turn after the first came from the cache
    assert cached_answers == answers(3, 0)[0]


def test_prompts_past_the_bound_go_to_disk_come_back_and_outlive_the_scheduler(
        tiny_model: Path, one_state: int, tmp_path: Path) -> None:
    def spill() -> PromptSpill:
        return PromptSpill(tmp_path / "prompts", 64 << 20, "tiny", secret_file=tmp_path / "key")

    sched = make_scheduler(tiny_model, 1, n_ctx=1024, prompt_cache_bytes=int(one_state * 1.5), prompt_spill=spill())
    more = tokens(sched, " more", first=False)
    convs = [conversation(sched, i) for i in range(5)]
    try:
        for c in convs[:3]:
            ask(sched, c)
        assert sched.prompt_cache.flush(WAIT_S)  # written by the cache's own thread
        snap = sched.prompt_cache.snapshot()
        assert (snap.entries, snap.disk_entries) == (1, 1)  # 1 in memory, 0 let go to disk
        assert cached(ask(sched, convs[0] + more)) == len(convs[0])  # read back from disk
        assert sched.snapshot().prompt_cache.disk_hits == 1
    finally:
        sched.close()
    again = make_scheduler(tiny_model, 1, n_ctx=1024, prompt_cache_bytes=int(one_state * 1.5), prompt_spill=spill())
    try:  # a new scheduler on the same folder (a server restarted) finds what the last one wrote
        assert cached(ask(again, convs[1] + more)) == len(convs[1])
        for c in convs[3:]:
            ask(again, c)  # convs[1] + more goes to memory, then to disk
        assert again.prompt_cache.flush(WAIT_S)
        (path,) = (tmp_path / "prompts").glob("*.kvstate")
        raw = bytearray(path.read_bytes())
        raw[-1] ^= 0xFF
        path.write_bytes(raw)
        assert cached(ask(again, convs[1] + more)) < len(convs[1]) // 2  # tampered: read again, never loaded
        snap = again.snapshot().prompt_cache
        assert snap.discarded == 1 and "checksum does not match" in snap.note and not path.exists()
    finally:
        again.close()


class HeldSpill(PromptSpill):
    """The disk tier with writes that wait until the test lets them go: a slow disk."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder / "prompts", 64 << 20, "tiny", secret_file=folder / "key")
        self.entered = threading.Event()
        self.go = threading.Event()

    def put(self, owner: str, tokens: Sequence[int], prompt_len: int, state: bytearray) -> bool:
        self.entered.set()
        assert self.go.wait(WAIT_S)
        return super().put(owner, tokens, prompt_len, state)


def test_a_write_to_disk_in_flight_holds_up_no_step_and_its_file_is_read_back_after(
        tiny_model: Path, one_state: int, tmp_path: Path) -> None:
    spill = HeldSpill(tmp_path)
    sched = make_scheduler(tiny_model, 1, n_ctx=1024, prompt_cache_bytes=int(one_state * 1.5), prompt_spill=spill)
    more = tokens(sched, " more", first=False)
    convs = [conversation(sched, i) for i in range(4)]
    try:
        for c in convs[:3]:
            ask(sched, c)  # the third lets the first go to disk
        assert spill.entered.wait(WAIT_S)  # its write has begun, and waits for the disk
        served = ask(sched, convs[3])  # prefilled and decoded meanwhile (the second goes to wait behind it)
        assert served.wait().reason == "length" and not spill.go.is_set()
        snap = sched.prompt_cache.snapshot()
        assert (snap.disk_writing, snap.disk_entries) == (2, 0)
        found, n = sched.prompt_cache.best("", convs[0])  # while it is written, it is found in memory
        assert found is not None and n == len(convs[0]) and not isinstance(found, DiskEntry)
        spill.go.set()
        assert sched.prompt_cache.flush(WAIT_S)
        snap = sched.prompt_cache.snapshot()
        assert (snap.disk_writing, snap.disk_entries) == (0, 2)
        assert cached(ask(sched, convs[0] + more)) == len(convs[0])  # read back from its file, checked
        assert sched.snapshot().prompt_cache.disk_hits == 1
    finally:
        spill.go.set()
        sched.close()


def test_a_new_conversation_in_an_empty_slot_takes_the_shared_start_from_the_other_slot(
        two: BatchScheduler, tiny_model: Path) -> None:
    """Beside a conversation kept in its slot, a new one with the same start goes to the empty slot (the
    first keeps its own) and reads that start from the first slot's state, not again: its answer is the
    one a fresh scheduler gives it."""
    start = tokens(two, RULES)
    a = start + tokens(two, " About " + TOPICS[0] + ": " + " ".join(WORDS * 4), first=False)
    b = start + tokens(two, " About " + TOPICS[1] + ": " + " ".join(reversed(WORDS * 4)), first=False)
    ask(two, a, max_tokens=4)  # slot 0; it keeps a (b shares less than half of it)
    seeded = ask(two, b, max_tokens=16)
    snap = two.snapshot()
    assert snap.slots[0].kv_cells >= len(a) and snap.slots[1].kv_cells >= len(b)  # a kept, b on slot 1
    assert cached(seeded) == common(a, b) >= len(start) - 1
    assert snap.prompt_cache.entries == 0  # nothing displaced, nothing kept
    fresh = make_scheduler(tiny_model, 2, n_ctx=1024)
    try:
        alone = ask(fresh, b, max_tokens=16)
    finally:
        fresh.close()
    assert cached(alone) == 0 and seeded.wait().text == alone.wait().text


def common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_an_idle_scheduler_keeps_the_next_slot_to_go_ahead_so_its_admission_copies_nothing(
        tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While idle, the scheduler stores what the least recently used slot holds (the slot a new
    conversation takes next), not the slot used last: the copy is off the next request's first token's
    path, and the conversation is found again as if its admission had kept it."""
    sched = make_scheduler(tiny_model, 2, n_ctx=1024)
    try:
        a, b, c = conversation(sched, 0), conversation(sched, 1), conversation(sched, 2)
        ask(sched, a)  # slot 0
        ask(sched, b)  # slot 1, the empty one; a is kept ahead, b (the slot used last) is not
        deadline = time.monotonic() + WAIT_S
        while sched.snapshot().prompt_cache.entries < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        kept = sched.prompt_cache.entries()
        assert [e.tokens[:len(a)] for e in kept] == [a]
        assert sched.snapshot().slots[0].kv_cells >= len(a)  # still in its slot too
        copies: list[int] = []
        real = type(sched.runtime).seq_state
        monkeypatch.setattr(type(sched.runtime), "seq_state", lambda rt, seq: copies.append(seq) or real(rt, seq))
        ask(sched, c)  # into slot 0, the least recently used: a leaves it, already kept
        assert copies in ([], [1])  # its admission copied nothing (b, now the least recently used, may be kept)
        more = a + tokens(sched, " and then some more words", first=False)
        assert cached(ask(sched, more)) == len(a)  # a found again, from the cache
    finally:
        sched.close()
