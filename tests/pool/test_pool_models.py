"""The pool with real models (llama.cpp): several resident, eviction by budget and TTL, never while a
model generates, one load for many askers, a corrupt file refused in words while the others serve."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed
from prefill.engine.events import Finished, Token
from prefill.engine.settings import LoadSettings, ServeSampling
from prefill.pool.catalogue import ModelEntry, checked
from prefill.pool.chat_model import ChatLoad, ChatModel, load_chat
from prefill.pool.errors import ModelUnusable, PoolFull
from prefill.pool.pool import ModelPool, PoolLimits, Servable

pytestmark = pytest.mark.model
WAIT_S = 120
SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1)
GREEDY = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=16, ignore_eos=True)


class Collector:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.end: BatchEvent | None = None
        self.done = threading.Event()

    def __call__(self, ev: BatchEvent) -> None:
        if isinstance(ev, Token):
            self.texts.append(ev.text)
        if isinstance(ev, Finished | Failed):
            self.end = ev
            self.done.set()

    def wait(self) -> Finished:
        assert self.done.wait(WAIT_S), "the request never ended"
        assert isinstance(self.end, Finished), self.end
        return self.end


def ask(model: Servable, text: str, sampling: ServeSampling = GREEDY) -> Collector:
    assert isinstance(model, ChatModel)
    c = Collector()
    model.submit(BatchRequest(tuple(model.chat.tokenize(text)), sampling, c))
    return c


def entries_of(folder: Path) -> list[ModelEntry]:
    return checked(ModelEntry(p.stem, p, p.stat().st_size) for p in sorted(folder.glob("*.gguf")))


class Counting:
    """The chat loader, counting its loads per model."""

    def __init__(self, load: ChatLoad):
        self.load = load
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, entry: ModelEntry) -> Servable:
        with self.lock:
            self.counts[entry.id] = self.counts.get(entry.id, 0) + 1
        return load_chat(entry, self.load)


def make_pool(folder: Path, limits: PoolLimits = PoolLimits(), parallel: int = 2,
              clock: Callable[[], float] = time.monotonic) -> tuple[ModelPool, Counting]:
    load = ChatLoad(SETTINGS, parallel)
    counting = Counting(load)
    return ModelPool(entries_of(folder), {"chat": counting}, load.estimate, limits, clock=clock), counting


@pytest.fixture
def pool(models_folder: Path) -> Iterator[tuple[ModelPool, Counting]]:
    p = make_pool(models_folder)
    yield p
    p[0].close()


def test_three_models_of_other_shapes_are_resident_and_answer_at_once(pool: tuple[ModelPool, Counting]) -> None:
    p, counting = pool
    ids = ["smollm2", "tiny-a", "tiny-b"]
    leases = [p.acquire(i) for i in ids]
    asked = [ask(le.resident.model, "The capital of France is") for le in leases]
    for le in leases:
        le.release()
    answers = [c.wait() for c in asked]
    assert all(a.metrics.completion_tokens == GREEDY.max_tokens for a in answers)
    states = {s.id: s for s in p.statuses()}
    assert [states[i].state for i in ids] == ["loaded"] * 3
    assert all(states[i].memory is not None and states[i].memory.measured for i in ids)  # type: ignore[union-attr]
    vocabularies = {le.resident.model.chat.runtime.n_vocab for le in leases}  # type: ignore[attr-defined]
    assert len(vocabularies) == 3
    assert counting.counts == {i: 1 for i in ids}


def test_the_measured_memory_is_llama_cpp_s_and_near_the_estimate(pool: tuple[ModelPool, Counting]) -> None:
    p, _ = pool
    r = p.load("smollm2")
    model = r.model
    assert isinstance(model, ChatModel)
    rt = model.scheduler.runtime
    assert r.memory.weights == rt.model_bytes()
    assert r.memory.kv == rt.n_ctx * model.scheduler.model.bytes_per_cell
    guess = next(s for s in p.statuses() if s.id == "smollm2")
    assert guess.memory is r.memory
    estimate = ChatLoad(SETTINGS, 2).estimate(r.entry)
    assert abs(estimate.total - r.memory.total) < 0.1 * r.memory.total


def test_a_budget_two_fit_unloads_the_least_recently_used_idle_one(same_size_folder: Path) -> None:
    probe = ChatLoad(SETTINGS, 2).estimate(entries_of(same_size_folder)[0])
    p, counting = make_pool(same_size_folder, PoolLimits())
    try:
        # Once loaded a model takes what llama.cpp measured (its compute buffers too, less than the
        # estimate): a budget of one and a half loaded models and one about to load holds two, not three.
        loaded = p.load("one").memory.total
        p.limits = PoolLimits(budget=int(loaded * 1.5 + probe.total))
        for name in ("one", "two"):
            ask(p.load(name).model, "hello there").wait()
        ask(p.load("one").model, "one again").wait()  # "two" is now the least recently used
        p.load("three")
        states = {s.id: s.state for s in p.statuses()}
        assert states == {"one": "loaded", "two": "not loaded", "three": "loaded"}
        assert p.used() <= p.limits.budget
        assert counting.counts == {"one": 1, "two": 1, "three": 1}  # "one" was never loaded twice
    finally:
        p.close()


def test_a_short_ttl_unloads_an_idle_model(models_folder: Path) -> None:
    p, _ = make_pool(models_folder, PoolLimits(ttl_s=0.3))
    try:
        ask(p.load("tiny-a").model, "hello").wait()
        end = time.monotonic() + WAIT_S
        while p.resident("tiny-a") is not None:  # the reaper's thread unloads it
            assert time.monotonic() < end, "the TTL never unloaded the idle model"
            time.sleep(0.02)
        assert next(s for s in p.statuses() if s.id == "tiny-a").state == "not loaded"
    finally:
        p.close()


def test_a_generating_model_is_never_unloaded_and_finishes_as_alone(same_size_folder: Path) -> None:
    long = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=600, ignore_eos=True)
    probe = ChatLoad(SETTINGS, 2).estimate(entries_of(same_size_folder)[0])
    p, _ = make_pool(same_size_folder, PoolLimits())
    try:
        one = p.load("one")
        p.limits = PoolLimits(budget=int(one.memory.total * 1.5 + probe.total))  # two loaded fit, not three
        alone = ask(one.model, "a long story", long)
        alone.wait()
        p.unload("one")
        lease = p.acquire("one")
        streaming = ask(lease.resident.model, "a long story", long)
        lease.release()  # the request in flight keeps it now
        p.load("two")
        p.load("three")  # room is made by unloading "two", the idle one, not "one"
        assert not streaming.done.is_set(), "the long answer ended before the test could ask the others"
        states = {s.id: s.state for s in p.statuses()}
        assert states == {"one": "loaded", "two": "not loaded", "three": "loaded"}
        lease_three = p.acquire("three")  # "three" busy too: a fourth load has nothing to unload
        with pytest.raises(PoolFull) as refused:
            p.load("two")
        assert "'two' cannot be loaded now" in str(refused.value) and "one (" in str(refused.value)
        lease_three.release()
        streaming.wait()
        assert streaming.wait().text == alone.wait().text  # token for token as alone
        assert streaming.texts == alone.texts
    finally:
        p.close()


def test_concurrent_requests_for_a_model_not_loaded_cause_exactly_one_load(pool: tuple[ModelPool, Counting]) -> None:
    p, counting = pool
    start = threading.Barrier(6)
    got: list[float] = []

    def asker() -> None:
        start.wait()
        with p.acquire("tiny-c") as lease:
            got.append(lease.load_ms)
            ask(lease.resident.model, "hi").wait()

    threads = [threading.Thread(target=asker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert len(got) == 6 and counting.counts == {"tiny-c": 1}
    assert next(s for s in p.statuses() if s.id == "tiny-c").loads == 1


def test_a_corrupt_file_is_unusable_and_refused_in_words_while_the_others_serve(
        models_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "tiny-a.gguf").symlink_to(models_folder / "tiny-a.gguf")
    raw = (models_folder / "tiny-b.gguf").read_bytes()
    (folder / "broken.gguf").write_bytes(raw[: len(raw) // 3])  # cut off: its tensors end early
    (folder / "garbage.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    p, counting = make_pool(folder)
    try:
        states = {s.id: (s.state, s.error) for s in p.statuses()}
        assert states["garbage"][0] == "unusable" and states["garbage"][1]
        lease = p.acquire("tiny-a")
        streaming = ask(lease.resident.model, "keep going", GREEDY)
        lease.release()
        for bad in ("garbage", "broken"):
            with pytest.raises(ModelUnusable) as e:
                p.acquire(bad)
            assert f"the model {bad!r} cannot be loaded:" in str(e.value) and len(str(e.value)) > 40
        assert streaming.wait().metrics.completion_tokens == GREEDY.max_tokens
        assert {s.id: s.state for s in p.statuses()} == {"broken": "unusable", "garbage": "unusable",
                                                         "tiny-a": "loaded"}
        assert "garbage" not in counting.counts  # the guard refused it before llama.cpp saw it
    finally:
        p.close()


def test_a_request_whose_sink_fails_still_ends_its_count(pool: tuple[ModelPool, Counting]) -> None:
    p, _ = pool
    model = p.load("tiny-a").model
    assert isinstance(model, ChatModel)
    ended = threading.Event()

    def failing(ev: BatchEvent) -> None:
        if isinstance(ev, Finished | Failed):
            ended.set()
        raise RuntimeError("a client's sink broke")

    model.submit(BatchRequest(tuple(model.chat.tokenize("hi")), GREEDY, failing))
    assert ended.wait(WAIT_S)
    end = time.monotonic() + WAIT_S
    while model.in_flight:
        assert time.monotonic() < end, "the failed request still counts as in flight"
        time.sleep(0.01)
    assert p.unload("tiny-a")  # idle: unloadable


def test_a_request_submitted_to_the_scheduler_directly_keeps_its_model_too(pool: tuple[ModelPool, Counting]) -> None:
    from prefill.pool.errors import ModelBusy

    p, _ = pool
    model = p.load("tiny-a").model
    assert isinstance(model, ChatModel)
    long = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=800, ignore_eos=True)
    c = Collector()
    model.scheduler.submit(BatchRequest(tuple(model.chat.tokenize("a story")), long, c))  # as the window's chat does
    end = time.monotonic() + WAIT_S
    while not model.scheduler.snapshot().in_flight and not c.done.is_set():
        assert time.monotonic() < end
        time.sleep(0.01)
    assert not c.done.is_set(), "the answer ended before the unload was asked"
    with pytest.raises(ModelBusy):
        p.unload("tiny-a")
    c.wait()
