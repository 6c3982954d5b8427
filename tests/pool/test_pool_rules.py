"""The pool's rules with scripted models (no llama.cpp): which model goes, when, and what is refused.
The same rules with real models are in test_pool_models.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from prefill.engine.gguf.header import GGUFError
from prefill.pool.catalogue import Kind, ModelEntry
from prefill.pool.errors import ModelBusy, ModelUnusable, PoolFull, UnknownModel, WrongKind
from prefill.pool.memory import ModelMemory, parse_duration, parse_size
from prefill.pool.pool import ModelPool, PoolLimits

GIB = 1 << 30


class Scripted:
    """A loaded model of `size` bytes whose requests the test starts and ends by hand."""

    def __init__(self, entry: ModelEntry, size: int, kind: Kind = "chat"):
        self.entry = entry
        self.kind: Kind = kind
        self.memory = ModelMemory(size, 0, 0, measured=True)
        self.on_idle: Callable[[], None] | None = None
        self.closed = False
        self._n = 0

    @property
    def in_flight(self) -> int:
        return self._n

    @property
    def seen_in_flight(self) -> int:
        return self._n

    def start(self) -> None:
        self._n += 1

    def end(self) -> None:
        self._n -= 1
        if self._n == 0 and self.on_idle is not None:
            self.on_idle()

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self, s: float = 1.0) -> None:
        self.now += s


def make_pool(ids: str = "abc", size: int = GIB, clock: Callable[[], float] | None = None, **kw: object
              ) -> tuple[ModelPool, dict[str, list[Scripted]]]:
    loaded: dict[str, list[Scripted]] = {i: [] for i in ids}

    def load(entry: ModelEntry) -> Scripted:
        if "bad" in entry.id:
            raise GGUFError("the file ends inside its header")
        m = Scripted(entry, size)
        loaded[entry.id].append(m)
        return m

    entries = [ModelEntry(i, Path(f"/models/{i}.gguf"), size) for i in ids]
    pool = ModelPool(entries, {"chat": load}, lambda e: ModelMemory(size, 0, 0), clock=clock or Clock(), **kw)
    return pool, loaded


def test_a_budget_for_two_unloads_the_least_recently_used_idle_model() -> None:
    clock = Clock()
    pool, loaded = make_pool(clock=clock, limits=PoolLimits(budget=2 * GIB))
    pool.load("a")
    clock.tick()
    pool.load("b")
    clock.tick()
    pool.acquire("a").release()  # a is now the more recent
    clock.tick()
    pool.load("c")
    assert [s.state for s in pool.statuses()] == ["loaded", "not loaded", "loaded"]
    assert loaded["b"][0].closed and not loaded["a"][0].closed


def test_the_model_count_bounds_the_residents_too() -> None:
    pool, _ = make_pool(limits=PoolLimits(max_models=1))
    pool.load("a")
    pool.load("b")
    assert [s.id for s in pool.statuses() if s.state == "loaded"] == ["b"]


def test_a_model_with_requests_in_flight_or_leased_or_pinned_is_never_unloaded() -> None:
    pool, loaded = make_pool(limits=PoolLimits(max_models=2), pinned=["a"])
    pool.load("a")
    lease = pool.acquire("b")  # leased: between acquire and its request's submission
    with pytest.raises(PoolFull) as e:
        pool.load("c")
    assert "'a'" in str(e.value) or "a (" in str(e.value)
    assert "pinned" in str(e.value) and "starting a request" in str(e.value)
    loaded["b"][0].start()  # its request submitted: in flight now
    lease.release()
    with pytest.raises(PoolFull, match="serving 1 request"):
        pool.load("c")
    loaded["b"][0].end()
    pool.load("c")
    assert [s.state for s in pool.statuses()] == ["loaded", "not loaded", "loaded"]


def test_a_resident_model_is_leased_without_waiting_and_one_not_loaded_is_left_to_acquire() -> None:
    clock = Clock()
    pool, loaded = make_pool(clock=clock, limits=PoolLimits(max_models=1))
    assert pool.acquire_resident("a") is None and loaded["a"] == []  # never loads
    pool.load("a")
    clock.tick()
    lease = pool.acquire_resident("a", keep_alive_s=0)
    assert lease is not None and lease.load_ms == 0 and lease.resident.leases == 1
    assert lease.resident.last_used == clock.now and lease.resident.keep_alive_s == 0
    with pytest.raises(PoolFull):  # leased: the count's one place is not made free by unloading it
        pool.load("b")
    lease.release()
    assert lease.resident.leases == 0
    with pytest.raises(UnknownModel):
        pool.acquire_resident("zzz")


def test_a_model_larger_than_the_whole_budget_is_refused_in_words() -> None:
    pool, _ = make_pool(limits=PoolLimits(budget=GIB // 2))
    with pytest.raises(PoolFull, match="more than the whole memory budget"):
        pool.load("a")


def test_the_ttl_unloads_an_idle_model_and_keep_alive_overrides_it() -> None:
    clock = Clock()
    pool, loaded = make_pool(clock=clock, limits=PoolLimits(ttl_s=60))
    pool.load("a")
    pool.acquire("b", keep_alive_s=-1).release()  # forever
    pool.acquire("c", keep_alive_s=600).release()
    clock.tick(61)
    assert pool.reap() == ["a"]
    clock.tick(600)
    assert pool.reap() == ["c"]
    assert [s.state for s in pool.statuses()] == ["not loaded", "loaded", "not loaded"]
    pool.close()


def test_the_reaper_thread_unloads_on_its_own() -> None:
    pool, loaded = make_pool(limits=PoolLimits(ttl_s=0.05), clock=time.monotonic)  # the reaper waits on it
    pool.load("a")
    end = time.monotonic() + 5
    while not loaded["a"][0].closed:  # the reaper's own thread unloads it
        assert time.monotonic() < end, "the reaper never unloaded the idle model"
        time.sleep(0.01)
    pool.close()


def test_concurrent_acquirers_of_a_loading_model_share_one_load() -> None:
    gate = threading.Event()
    loads = []

    def slow(entry: ModelEntry) -> Scripted:
        loads.append(entry.id)
        gate.wait(5)
        return Scripted(entry, GIB)

    pool = ModelPool([ModelEntry("a", Path("a.gguf"))], {"chat": slow}, lambda e: ModelMemory(GIB, 0, 0))
    leases = []
    threads = [threading.Thread(target=lambda: leases.append(pool.acquire("a"))) for _ in range(8)]
    for t in threads:
        t.start()
    while not loads:
        threading.Event().wait(0.005)
    gate.set()
    for t in threads:
        t.join(5)
    assert loads == ["a"] and len(leases) == 8
    assert all(le.load_ms > 0 for le in leases)
    assert pool.acquire("a").load_ms == 0  # resident now: no wait


def test_a_failed_load_is_said_to_every_waiter_and_marks_the_file_unusable() -> None:
    entries = [ModelEntry("a", Path("a.gguf")), ModelEntry("bad", Path("bad.gguf")),
               ModelEntry("gone", Path("gone.gguf"), unusable="not a GGUF file")]

    def load(entry: ModelEntry) -> Scripted:
        if entry.id == "bad":
            raise GGUFError("its vocabulary is empty")
        return Scripted(entry, GIB)

    pool = ModelPool(entries, {"chat": load}, lambda e: ModelMemory(GIB, 0, 0))
    with pytest.raises(ModelUnusable, match="'bad' cannot be loaded: its vocabulary is empty"):
        pool.acquire("bad")
    with pytest.raises(ModelUnusable, match="not a GGUF file"):
        pool.acquire("gone")
    pool.load("a")
    assert [(s.state, s.error) for s in pool.statuses()] == [
        ("loaded", ""), ("unusable", "its vocabulary is empty"), ("unusable", "not a GGUF file")]


def test_names_aliases_and_the_default_model() -> None:
    pool, _ = make_pool(aliases={"gpt-4o": "a"})
    assert pool.resolve("gpt-4o").id == "a"
    with pytest.raises(UnknownModel) as e:
        pool.resolve("llama3")
    assert e.value.ids == ("a", "b", "c") and "'a', 'b', 'c'" in str(e.value)
    with_default, _ = make_pool(default_model="b")
    assert with_default.resolve("llama3").id == "b"


def test_unload_by_hand_refuses_a_busy_model() -> None:
    pool, loaded = make_pool()
    pool.load("a")
    loaded["a"][0].start()
    with pytest.raises(ModelBusy, match="serving 1 request"):
        pool.unload("a")
    loaded["a"][0].end()
    assert pool.unload("a") and not pool.unload("a")


def test_a_kind_is_checked_when_asked() -> None:
    pool, _ = make_pool("a")
    r = pool.load("a")
    assert r.as_kind("chat") is r.model
    with pytest.raises(WrongKind, match="is a chat model"):
        r.as_kind("embedding")


def test_sizes_and_durations_as_flags_write_them() -> None:
    assert parse_size("8G") == 8 * GIB and parse_size("512M") == 512 << 20 and parse_size("1.5GiB") == 3 * GIB // 2
    assert parse_duration("10m") == 600 and parse_duration("30") == 30 and parse_duration(-1) == -1
    # Go's form, as Ollama's clients send keep_alive
    assert parse_duration("5m0s") == 300 and parse_duration("1h30m") == 5400 and parse_duration("-1m0s") == -60
    with pytest.raises(ValueError):
        parse_size("lots")
    for bad in ("soon", "1h30", "m5"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_a_kind_without_a_loader_is_listed_unusable_in_words() -> None:
    entries = [ModelEntry("chat", Path("c.gguf")), ModelEntry("minilm", Path("m.gguf"), kind="embedding")]
    pool = ModelPool(entries, {"chat": lambda e: Scripted(e, GIB)}, lambda e: ModelMemory(GIB, 0, 0))
    assert [(s.state, s.error) for s in pool.statuses()] == [
        ("not loaded", ""), ("unusable", "it is an embedding model, which this server does not load")]
    with pytest.raises(ModelUnusable, match="embedding model"):
        pool.acquire("minilm")


def test_an_embedding_model_s_header_makes_its_entry_an_embedding_one(tmp_path: Path) -> None:
    from gguf import GGUFWriter, PoolingType

    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.pool.catalogue import checked

    def pooled(w: GGUFWriter) -> None:
        w.add_pooling_type(PoolingType.MEAN)

    def ranked(w: GGUFWriter) -> None:
        w.add_pooling_type(PoolingType.RANK)

    chat = write_tiny_llama(tmp_path / "chat.gguf", n_vocab=400)
    embed = write_tiny_llama(tmp_path / "embed.gguf", n_vocab=400, edit=pooled)
    rerank = write_tiny_llama(tmp_path / "rerank.gguf", n_vocab=400, edit=ranked)
    kinds = [e.kind for e in checked([ModelEntry("chat", chat), ModelEntry("embed", embed),
                                      ModelEntry("rerank", rerank)])]
    assert kinds == ["chat", "embedding", "rerank"]


def test_a_request_of_another_kind_is_refused_before_anything_loads() -> None:
    loads: list[str] = []

    def load(entry: ModelEntry) -> Scripted:
        loads.append(entry.id)
        return Scripted(entry, GIB, entry.kind)

    entries = [ModelEntry("chat", Path("c.gguf")), ModelEntry("minilm", Path("m.gguf"), kind="embedding"),
               ModelEntry("ranker", Path("r.gguf"), kind="rerank")]
    pool = ModelPool(entries, {"chat": load, "embedding": load, "rerank": load}, lambda e: ModelMemory(GIB, 0, 0))
    with pytest.raises(WrongKind, match="'minilm' is an embedding model; it does not serve chat requests") as e:
        pool.acquire("minilm", kind="chat")
    assert (e.value.model_id, e.value.kind, e.value.wanted) == ("minilm", "embedding", "chat")
    with pytest.raises(WrongKind, match="'chat' is a chat model; it does not serve rerank requests"):
        pool.acquire("chat", kind="rerank")
    with pytest.raises(WrongKind, match="'ranker' is a reranking model"):
        pool.acquire("ranker", kind="embedding")
    assert loads == []
    for name, kind in (("minilm", "embedding"), ("ranker", "rerank"), ("chat", "chat")):
        with pool.acquire(name, kind=kind) as lease:  # type: ignore[arg-type]
            assert lease.resident.kind == kind
    pool.acquire("minilm").release()  # no kind asked: any (a load by hand)
    assert loads == ["minilm", "ranker", "chat"]


def test_estimates_read_at_start_leave_statuses_nothing_to_read() -> None:
    read: list[str] = []

    def estimate(e: ModelEntry) -> ModelMemory:
        read.append(e.id)
        return ModelMemory(GIB, 0, 0)

    entries = [ModelEntry(i, Path(f"/models/{i}.gguf"), GIB) for i in "ab"]
    entries.append(ModelEntry("bad", Path("/models/bad.gguf"), 1, unusable="cut off"))
    pool = ModelPool(entries, {"chat": lambda e: Scripted(e, GIB)}, estimate, clock=Clock())
    pool.estimate_all()
    assert read == ["a", "b"]  # each usable header once; the unusable one never
    pool.statuses()
    assert read == ["a", "b"]
