"""The Qt-free session: what answers (a model file, a remote endpoint, a slot of the server), the
chat's KV cache saved and restored as the user changes chats, and serving with one copy of the
model. On the real SmolLM2, llama.cpp and a real local server; no Qt."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.engine.batch.slot_chat import SlotChat
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.remote.engine import RemoteEngine
from prefill.server.lifecycle import ServeOptions
from prefill.session.backends import LocalModel, RemoteEndpoint
from prefill.session.chat_session import ChatSession, NoModel, ServeRefused, SessionEvents

SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none")
GREEDY = SamplingSettings(temperature=0.0, max_tokens=12)
ASK = [Message("user", "Name a colour.")]


def answer(session: ChatSession, messages: list[Message]) -> tuple[PrefillDone, Finished]:
    events = list(session.stream(ChatRequest.of(messages, GREEDY)))
    end = events[-1]
    assert isinstance(end, Finished)
    return next(e for e in events if isinstance(e, PrefillDone)), end


def test_nothing_loaded_is_a_typed_error() -> None:
    session = ChatSession()
    with pytest.raises(NoModel):
        list(session.stream(ChatRequest.of(ASK)))
    with pytest.raises(NoModel):
        session.count_tokens(ChatRequest.of(ASK))


def test_a_model_file_answers_and_says_what_it_is(smollm2: Path) -> None:
    session = ChatSession()
    info = session.load(LocalModel(str(smollm2), SETTINGS))
    try:
        assert info is not None and info.path == smollm2 and info.n_ctx >= 1024 and info.n_layer > 0
        assert info.chat_format == "template" and info.backend_summary and not info.remote
        assert isinstance(session.backend, ChatEngine)
        prefill, end = answer(session, ASK)
        assert end.text and prefill.prompt_tokens == session.count_tokens(ChatRequest.of(ASK))
    finally:
        session.unload()
    assert session.backend is None


def test_a_load_that_is_no_longer_wanted_is_closed(smollm2: Path) -> None:
    session = ChatSession()
    assert session.load(LocalModel(str(smollm2), SETTINGS), keep=lambda: False) is None
    assert session.backend is None


def test_leaving_a_chat_saves_its_cache_and_coming_back_restores_it(smollm2: Path, tmp_path: Path) -> None:
    notes: list[str] = []
    usage: list[object] = []
    session = ChatSession(KvDiskCache(tmp_path / "kv", min_free=0),
                          SessionEvents(cache_note=notes.append, disk_usage=usage.append))
    session.load(LocalModel(str(smollm2), SETTINGS))
    try:
        _, first = answer(session, ASK)
        chat = [*ASK, Message("assistant", first.text)]
        session.show([])  # a new chat: the first one's cache goes to disk
        assert usage and list((tmp_path / "kv").iterdir())
        answer(session, [Message("user", "Something else entirely, please.")])
        session.show(chat)  # back: restored from disk, so the next turn reads only what is new
        prefill, _ = answer(session, [*chat, Message("user", "Another one?")])
        assert prefill.restored_tokens > 0 and prefill.cached_tokens >= prefill.restored_tokens
    finally:
        session.unload()


def test_serving_hands_the_model_to_the_server_and_back(smollm2: Path) -> None:
    stopped: list[bool] = []
    session = ChatSession(events=SessionEvents(serve_stopped=lambda: stopped.append(True)))
    session.load(LocalModel(str(smollm2), SETTINGS))
    try:
        url = session.serve(ServeOptions(smollm2, SETTINGS, port=0, parallel=2))
        assert isinstance(session.backend, SlotChat) and session.server is not None
        assert session.backend.scheduler is session.server.scheduler  # one copy of the model
        assert session.serve(ServeOptions(smollm2, SETTINGS, port=0)) == url  # already serving
        assert httpx.get(url + "/health").json() == {"status": "ok"}
        _, end = answer(session, ASK)  # the chat as one of the server's requests
        assert end.text
        session.stop_serving()
        assert stopped == [True] and session.server is None and isinstance(session.backend, ChatEngine)
        assert answer(session, ASK)[1].text == end.text  # the same greedy answer on its own copy
    finally:
        session.unload()


def test_serving_needs_a_local_model_and_a_key_beyond_loopback(smollm2: Path, prefill_server) -> None:
    session = ChatSession()
    with pytest.raises(ServeRefused, match="Load a local model first"):
        session.serve(ServeOptions(smollm2, SETTINGS))
    session.load(RemoteEndpoint(prefill_server.url, api_key="sk-test"))
    try:
        assert isinstance(session.backend, RemoteEngine)
        with pytest.raises(ServeRefused, match="Load a local model first"):
            session.serve(ServeOptions(smollm2, SETTINGS))
        assert session.count_tokens(ChatRequest.of(ASK)) is None  # a remote writes its own prompt
    finally:
        session.unload()
    session.load(LocalModel(str(smollm2), SETTINGS))
    try:
        with pytest.raises(ServeRefused, match="api-key"):
            session.serve(ServeOptions(smollm2, SETTINGS, host="0.0.0.0", port=0))
        assert isinstance(session.backend, ChatEngine)  # the chat goes on as before
    finally:
        session.unload()
