"""Which backend answers a conversation: one factory for the window, the terminal and the server.

A target names what should answer (a model file, a remote endpoint, a slot of the running
server); `open_backend` builds the `ChatBackend` for it. `describe` says what a person sees of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_chat import SlotChat
from prefill.engine.chat_backend import ChatBackend
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.settings import LoadSettings
from prefill.remote.engine import RemoteEngine
from prefill.session.loaded import LoadedModel, local_model, remote_model


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file on this machine, loaded by llama.cpp."""

    path: str
    settings: LoadSettings


@dataclass(frozen=True)
class RemoteEndpoint:
    """An OpenAI-compatible server; `model` "" takes the one it lists first."""

    url: str
    model: str = ""
    api_key: str = ""
    name: str = ""  # the saved endpoint's name, if any

    def __repr__(self) -> str:  # no key in logs
        return f"RemoteEndpoint({self.url!r}, {self.model!r})"


@dataclass(frozen=True)
class ServerSlot:
    """A slot of the batch that the running server decodes (the window's chat while it serves)."""

    scheduler: BatchScheduler


Target = LocalModel | RemoteEndpoint | ServerSlot


def open_backend(target: Target, progress: Callable[[float], bool] | None = None) -> ChatBackend:
    """The backend for `target`; `progress` (a local load's 0..1, False to stop) is for model files.

    Raises:
        ModelLoadError: the file is missing, not a GGUF llama.cpp takes, or the load was stopped.
        RemoteError: the endpoint cannot be reached, refuses the key, or lists no model.
    """
    if isinstance(target, LocalModel):
        return ChatEngine.load(target.path, target.settings, progress=progress)
    if isinstance(target, ServerSlot):
        return SlotChat(target.scheduler)
    engine = RemoteEngine(target.url, target.model, target.api_key)
    try:
        engine.resolve_model()
    except BaseException:
        engine.close()
        raise
    return engine


def describe(backend: ChatBackend, target: Target, load_ms: float) -> LoadedModel:
    """What the window shows of what answers: the model, its context, where it runs."""
    if isinstance(backend, RemoteEngine):
        name = target.name if isinstance(target, RemoteEndpoint) else ""
        return remote_model(backend, backend.resolve_model(), name, load_ms)
    assert isinstance(backend, ChatEngine | SlotChat)
    return local_model(backend, Path(target.path) if isinstance(target, LocalModel) else backend.path, load_ms)
