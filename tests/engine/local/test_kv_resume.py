"""A conversation's KV cache saved to disk and restored, on the real SmolLM2 and llama.cpp."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache, StateHeader
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings

SETTINGS = LoadSettings(n_ctx=2048, n_gpu_layers="none")  # as the session's `engine`
GREEDY = SamplingSettings(temperature=0.0, max_tokens=16)


def turn(engine: ChatEngine, msgs: list[Message]) -> tuple[PrefillDone, Finished]:
    events = list(engine.stream(ChatRequest.of(msgs, GREEDY)))
    prefill = next(e for e in events if isinstance(e, PrefillDone))
    assert isinstance(events[-1], Finished)
    return prefill, events[-1]


@pytest.fixture
def disk(tmp_path: Path) -> KvDiskCache:
    return KvDiskCache(tmp_path / "kv", min_free=0)


@pytest.fixture(scope="module")
def restarted(smollm2: Path) -> Iterator[ChatEngine]:
    """A second load of the same file with the same settings: the app after a restart."""
    e = ChatEngine.load(smollm2, SETTINGS)
    yield e
    e.close()


@pytest.fixture
def conversation(fresh_engine: ChatEngine, disk: KvDiskCache) -> list[Message]:
    """Two turns, saved to `disk` as the user leaves; the engine then serves another chat."""
    msgs = [Message("system", "You answer in one sentence."), Message("user", "What is a comet?")]
    _, f1 = turn(fresh_engine, msgs)
    msgs += [Message("assistant", f1.text), Message("user", "Where do comets come from?")]
    _, f2 = turn(fresh_engine, msgs)
    msgs.append(Message("assistant", f2.text))
    saved = fresh_engine.save_state(disk)
    assert saved.outcome == "written" and disk.usage().files == 1
    turn(fresh_engine, [Message("user", "Say hello in French.")])  # another conversation takes the cache
    return msgs


def new_turn_tokens(engine: ChatEngine, text: str) -> int:
    return len(engine.runtime.tokenize(f"<|im_end|>\n<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"))


def test_saving_the_same_state_twice_writes_once(fresh_engine: ChatEngine, disk: KvDiskCache) -> None:
    turn(fresh_engine, [Message("user", "Hi!")])
    assert fresh_engine.save_state(disk).outcome == "written"
    assert fresh_engine.save_state(disk).outcome == "kept"
    assert disk.usage().files == 1


def test_resume_after_switching_evaluates_only_the_new_turn(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    back = fresh_engine.restore_state(disk, conversation)
    assert back.header is not None and back.note == ""
    held = len(back.header.tokens)
    assert fresh_engine.cached_tokens == list(back.header.tokens)
    assert fresh_engine.runtime.kv_cells_used() == held
    follow = "Name one famous comet."
    p, _ = turn(fresh_engine, [*conversation, Message("user", follow)])
    assert p.cached_tokens == held == p.restored_tokens
    assert p.evaluated_tokens <= new_turn_tokens(fresh_engine, follow) + 2
    assert p.restore_ms > 0


def test_resume_after_restart_gives_the_same_answer_as_the_live_cache(
    fresh_engine: ChatEngine, restarted: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    follow = [*conversation, Message("user", "Name one famous comet.")]
    restarted.reset_cache()
    back = restarted.restore_state(disk, conversation)
    assert back.header is not None
    p_resumed, f_resumed = turn(restarted, follow)
    assert p_resumed.cached_tokens == len(back.header.tokens) == p_resumed.restored_tokens
    assert p_resumed.evaluated_tokens <= new_turn_tokens(restarted, "Name one famous comet.") + 2
    # The same turn with the cache live (restored here too, then evaluated the same way): same answer.
    assert fresh_engine.restore_state(disk, conversation).header is not None
    _, f_live = turn(fresh_engine, follow)
    assert f_resumed.text == f_live.text


def test_a_live_cache_that_already_serves_the_chat_is_kept(fresh_engine: ChatEngine, disk: KvDiskCache) -> None:
    msgs = [Message("user", "What is a comet?")]
    _, f = turn(fresh_engine, msgs)
    fresh_engine.save_state(disk)
    back = fresh_engine.restore_state(disk, [*msgs, Message("assistant", f.text)])
    assert back.header is None and back.ms == 0.0


def test_edited_history_is_not_restored(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    edited = [conversation[0], Message("user", "What is an asteroid?")]
    assert fresh_engine.restore_state(disk, edited).header is None
    p, _ = turn(fresh_engine, edited)
    assert p.restored_tokens == 0 and p.evaluated_tokens > 5


def test_a_state_from_other_settings_is_not_restored(
    smollm2: Path, disk: KvDiskCache, conversation: list[Message]
) -> None:
    other = ChatEngine.load(smollm2, LoadSettings(n_ctx=1024, n_gpu_layers="none"))
    try:
        assert other.cache_scope != "" and other.restore_state(disk, conversation).header is None
        assert other.cached_tokens == []
    finally:
        other.close()
    assert disk.usage().files == 1  # another scope's state is left alone, not deleted


def test_a_corrupt_state_is_discarded_with_a_note(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    (path,) = disk.folder.glob("*.kvstate")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    before = fresh_engine.cached_tokens
    back = KvDiskCache(disk.folder, min_free=0)  # after a restart: nothing remembered
    found = fresh_engine.restore_state(back, conversation)
    assert found.header is None and "checksum" in found.note
    assert not path.exists()
    assert fresh_engine.cached_tokens == before  # the live cache is untouched


def test_a_state_from_another_install_is_discarded_with_a_note(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    (path,) = disk.folder.glob("*.kvstate")
    before = fresh_engine.cached_tokens
    # The same folder, another install's secret: the file is whole and well named, but not signed here.
    elsewhere = KvDiskCache(disk.folder, min_free=0, secret_file=disk.folder.parent / "elsewhere.key")
    found = fresh_engine.restore_state(elsewhere, conversation)
    assert found.header is None and "not written here" in found.note
    assert not path.exists()
    assert fresh_engine.cached_tokens == before  # the live cache is untouched


def test_a_state_llama_cpp_refuses_clears_the_cache(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    (path,) = disk.folder.glob("*.kvstate")
    good = next(h for _, h in disk.candidates(fresh_engine.cache_scope))
    assert isinstance(good, StateHeader)
    path.unlink()
    # Our checks pass (a whole, checksummed file of this scope), llama.cpp's do not: a wrong stream count.
    blob = struct.pack("<IiI", 0xAF143CD8, 0, 7) + bytes(64)
    disk.write(StateHeader(good.scope, good.tokens, good.segments, len(blob)), blob)
    found = fresh_engine.restore_state(KvDiskCache(disk.folder, min_free=0), conversation)
    assert found.cleared and found.header is None and "refused" in found.note
    assert disk.usage().files == 0
    assert fresh_engine.cached_tokens == [] and fresh_engine.runtime.kv_cells_used() == 0
    p, f = turn(fresh_engine, [*conversation, Message("user", "Thanks!")])
    assert p.cached_tokens == 0 and p.restored_tokens == 0 and f.text


def test_states_of_another_llama_cpp_build_are_deleted_with_a_note(
    fresh_engine: ChatEngine, disk: KvDiskCache, conversation: list[Message]
) -> None:
    ours = fresh_engine.cache_scope
    other_build = ("1" if ours[0] == "0" else "0") * 8 + ours[8:]
    good = next(h for _, h in disk.candidates(ours))
    assert isinstance(good, StateHeader)
    disk.write(StateHeader(other_build, good.tokens, good.segments, 3), b"old")
    assert disk.usage().files == 2
    found = fresh_engine.restore_state(disk, conversation)
    assert found.header is not None  # ours is still used
    assert "1 saved cache was deleted" in found.note and "another llama.cpp build" in found.note
    assert disk.usage().files == 1
