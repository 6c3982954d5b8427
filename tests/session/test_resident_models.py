"""Local models stay resident as a session switches between them (session/residents.py): back to one
costs no load and no restore from disk; the least recently used idle one goes for the budget, never
the chat's own nor a pinned one; an unload by hand saves its cache. Real models: the bundled SmolLM2
and tiny ones from the project's writer (prefill.bench.tiny_model), of other shapes and vocabularies."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.pool.errors import ModelBusy
from prefill.session.backends import LocalModel
from prefill.session.chat_session import ChatSession, SessionEvents
from prefill.session.residents import ResidentModels, needed

SETTINGS = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
GREEDY = SamplingSettings(temperature=0.0, max_tokens=8)
ASK = [Message("user", "Name a colour.")]


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three tiny models of one shape (so a budget two fit is exact), and other weights."""
    from prefill.bench.tiny_model import write_tiny_llama

    folder = tmp_path_factory.mktemp("three")
    return [write_tiny_llama(folder / f"{name}.gguf", n_vocab=4000, seed=i, context_length=4096)
            for i, name in enumerate(("one", "two", "three"))]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ChatEngine.load, by file name."""
    seen: list[str] = []
    real = ChatEngine.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ChatEngine], path: str | Path, *args: object, **kw: object) -> ChatEngine:
        seen.append(Path(path).name)
        return real(cls, path, *args, **kw)

    monkeypatch.setattr(ChatEngine, "load", classmethod(counting))
    return seen


def saved(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def target(path: Path) -> LocalModel:
    return LocalModel(str(path), SETTINGS)


def answer(session: ChatSession, messages: list[Message]) -> tuple[PrefillDone, Finished]:
    events = list(session.stream(ChatRequest.of(messages, GREEDY)))
    end = events[-1]
    assert isinstance(end, Finished)
    return next(e for e in events if isinstance(e, PrefillDone)), end


def test_back_to_a_resident_model_costs_no_load_and_no_restore(smollm2: Path, tiny_model: Path, tmp_path: Path,
                                                               loads: list[str]) -> None:
    shown: list[ResidentModels] = []
    session = ChatSession(KvDiskCache(tmp_path / "kv", min_free=0), SessionEvents(residents=shown.append), budget=0)
    try:
        first = session.load(target(smollm2))
        a = session.backend
        _, said = answer(session, ASK)
        chat = [*ASK, Message("assistant", said.text), Message("user", "Another?")]
        b_info = session.load(target(tiny_model))
        assert b_info is not None and not b_info.resident and session.backend is not a
        answer(session, [Message("user", "hello")])
        back = session.load(target(smollm2))
        assert back is not None and back.resident and session.backend is a  # the same engine, never closed
        assert loads == [smollm2.name, tiny_model.name]
        prefill, _ = answer(session, chat)
        assert prefill.restored_tokens == 0 and prefill.cached_tokens > 0  # its live cache, not the disk's
        now = shown[-1]
        assert [Path(m.path).name for m in now.models] == [smollm2.name, tiny_model.name]
        assert [m.current for m in now.models] == [True, False]
        assert all(m.memory.measured and m.memory.total > 0 for m in now.models)
        assert first is not None and now.used == sum(m.memory.total for m in now.models)
    finally:
        session.close()
    assert session.backend is None and session.resident_models().models == ()


def test_the_least_recently_used_idle_model_goes_for_the_budget_never_a_pinned_one(
        three: list[Path], loads: list[str]) -> None:
    one, two, three_ = three
    session = ChatSession(budget=0)
    try:
        session.load(target(one))
        session.load(target(two))
        session.residents.budget = session.residents.used() + needed(target(three_)) - 1  # two fit, not three
        session.load(target(three_))  # one is the least recently used idle model
        assert [Path(p).name for p in session.residents.paths()] == ["two.gguf", "three.gguf"]
        assert session.pin_model(str(two))
        session.load(target(one))  # two is older but pinned: three, idle now, goes
        assert [Path(p).name for p in session.residents.paths()] == ["two.gguf", "one.gguf"]
        assert loads == ["one.gguf", "two.gguf", "three.gguf", "one.gguf"]
        assert session.backend is not None and session.residents.current == str(one)
    finally:
        session.close()


def test_unload_by_hand_saves_its_cache_and_never_takes_the_chats_model(
        three: list[Path], tmp_path: Path) -> None:
    one, two, _ = three
    disk = KvDiskCache(tmp_path / "kv", min_free=0)
    session = ChatSession(disk, budget=0)
    try:
        session.load(target(one))
        answer(session, ASK)
        session.load(target(two))
        with pytest.raises(ModelBusy, match="the chat's model"):
            session.unload_model(str(two))
        assert not saved(tmp_path / "kv")  # switching away saved nothing: it stays in memory
        assert session.unload_model(str(one)) is True
        assert saved(tmp_path / "kv")  # its cache went to disk as it left memory
        assert session.unload_model(str(one)) is False
        assert [Path(p).name for p in session.residents.paths()] == ["two.gguf"]
    finally:
        session.close()


def test_other_load_settings_load_the_model_again(tiny_model: Path, loads: list[str]) -> None:
    session = ChatSession(budget=0)
    try:
        session.load(target(tiny_model))
        info = session.load(LocalModel(str(tiny_model), LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1)))
        assert info is not None and not info.resident and info.n_ctx >= 1024
        assert loads == [tiny_model.name, tiny_model.name] and len(session.residents.paths()) == 1
    finally:
        session.close()


def test_lower_limits_unload_idle_models_at_once_never_the_chats(three: list[Path]) -> None:
    one, two, three_ = three
    shown: list[ResidentModels] = []
    session = ChatSession(None, SessionEvents(residents=shown.append), budget=0)
    try:
        for path in (one, two, three_):
            session.load(target(path))
        session.load(target(two))  # two is the chat's again; one is the least recently used idle model
        assert session.set_limits(0, 2, None) == [str(one)]  # the count: one goes
        assert [Path(m.path).name for m in shown[-1].models] == ["two.gguf", "three.gguf"]
        assert session.set_limits(1, 0, None) == [str(three_)]  # a budget nothing fits: every idle one goes
        assert session.residents.paths() == [str(two)] and session.backend is not None  # the chat's stays
        assert shown[-1].budget == 1 and [m.current for m in shown[-1].models] == [True]
    finally:
        session.close()


def test_an_idle_model_goes_once_its_time_to_live_runs_out_never_the_chats_nor_a_pinned_one(
        three: list[Path]) -> None:
    one, two, three_ = three
    now = [100.0]
    session = ChatSession(budget=0, ttl_s=60, clock=lambda: now[0])
    try:
        session.load(target(one))
        assert session.residents.next_expiry() is None  # the chat's own model has no time to live
        now[0] = 110
        session.load(target(two))  # one is idle from 110 on
        now[0] = 120
        session.load(target(three_))  # two idle from 120
        assert session.pin_model(str(two))
        assert session.residents.next_expiry() == 50  # one's, at 170; two is pinned
        now[0] = 169
        assert session.reap_idle() == []
        now[0] = 170
        assert session.reap_idle() == [str(one)]
        now[0] = 10_000
        assert session.reap_idle() == [] and session.residents.next_expiry() is None  # pinned, and the chat's
        assert sorted(Path(p).name for p in session.residents.paths()) == ["three.gguf", "two.gguf"]
        assert session.set_limits(0, 0, None) == [] and session.pin_model(str(two), False)  # unpinned at 10,000
        now[0] = 10_010
        assert session.set_limits(0, 0, 5) == [str(two)]  # a shorter time to live, in force at once
    finally:
        session.close()


def test_the_compute_buffers_are_llama_cpps_own_figures(tiny_model: Path) -> None:
    from prefill.pool.memory import logged_buffers

    session = ChatSession(budget=0)
    try:
        session.load(target(tiny_model))
        engine = session.backend
        assert isinstance(engine, ChatEngine)
        (m,) = session.resident_models().models
        reported = logged_buffers(engine.runtime.context_log)
        assert reported is not None and reported > 0
        assert m.memory.compute_measured and m.memory.compute == reported and m.memory.how() == "measured"
    finally:
        session.close()
