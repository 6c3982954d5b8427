"""What serves a conversation, as its callers hold it: `ChatBackend`, and what a backend can do.

The local engine (`ChatEngine`), one slot of the server's batch (`SlotChat`) and a remote endpoint
(`RemoteEngine`) each take a `ChatRequest` and stream the same events (engine/chat_backend.py), so
the window, the terminal and the server treat them alike; what one cannot measure it leaves unknown
rather than zero. Which one answers is chosen by `prefill.session.backends`.

What a backend can do beyond that, a caller asks it, never its class: each capability is a property
that hands back the part that does it, or None where the backend cannot (`local`: a model file loaded
here; `speculates`: drafts checked in one step; `sees_images`: a projector; `disk_cache`: its KV cache
saved and restored; `endpoint`: a remote server). The backends match these protocols by their shape
(they import nothing from here), so a new backend answers them and needs no edit in its callers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from prefill.engine.chat_backend import Event
from prefill.engine.events import MetricsSnapshot
from prefill.engine.request import ChatRequest, TemplateOptions

if TYPE_CHECKING:  # the window imports this before llama.cpp is loaded
    from prefill.engine.gguf.header import GGUFHeader
    from prefill.engine.llama.offload import DeviceReport
    from prefill.engine.llama.runtime import LlamaRuntime
    from prefill.engine.local.kv_disk import KvDiskCache, SaveResult
    from prefill.engine.local.kv_resume import Restored
    from prefill.engine.message import Message
    from prefill.engine.prompt.formats import ChatFormat
    from prefill.engine.prompt.reasoning import ReasoningSyntax
    from prefill.engine.vision.projector import Projector


class ChatBackend(Protocol):
    """A conversation's server. One thread streams from it at a time."""

    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Answer `request`: PrefillDone, Token…, MetricsSnapshot…, Finished. `cancel` stops it."""
        ...

    def count_tokens(self, request: ChatRequest) -> int | None:
        """The prompt tokens of the request, or None where the prompt is written elsewhere (a remote)."""
        ...

    def kv_snapshot(self) -> MetricsSnapshot:
        """The KV cache's fill now (`kv_total` 0 when it cannot be seen)."""
        ...

    def close(self) -> None: ...

    # --- what it can do (None: it cannot) ---------------------------------------------------
    @property
    def local(self) -> RunsLocally | None: ...
    @property
    def speculates(self) -> Speculates | None: ...
    @property
    def sees_images(self) -> SeesImages | None: ...
    @property
    def disk_cache(self) -> KeepsCacheOnDisk | None: ...
    @property
    def endpoint(self) -> Endpoint | None: ...


class RunsLocally(Protocol):
    """A model file loaded by llama.cpp in this process (its own engine, or the server's slots)."""

    @property
    def path(self) -> Path: ...
    @property
    def header(self) -> GGUFHeader: ...
    @property
    def runtime(self) -> LlamaRuntime: ...
    @property
    def device(self) -> DeviceReport: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def bytes_per_cell(self) -> int: ...
    @property
    def format(self) -> ChatFormat: ...
    @property
    def reasoning(self) -> ReasoningSyntax: ...


class Speculates(Protocol):
    """Decodes speculatively when asked: "off", "ngram" or "draft" (with the draft model it loads)."""

    speculative: str
    draft_max: int
    speculation_note: str  # why the last answer was not decoded speculatively when asked to be ("": it was)

    def use_draft_model(self, path: str | Path | None) -> None: ...


class SeesImages(Protocol):
    """Takes images through a projector (mmproj) it loads."""

    @property
    def projector(self) -> Projector | None: ...

    def use_projector(self, path: str | Path | None) -> None: ...


class KeepsCacheOnDisk(Protocol):
    """Saves its KV cache between requests, and restores the one a conversation reuses most."""

    def save_state(self, disk: KvDiskCache) -> SaveResult: ...

    def restore_state(self, disk: KvDiskCache, messages: Sequence[Message],
                      options: TemplateOptions | None = None) -> Restored: ...


class Endpoint(Protocol):
    """A remote server that writes the prompt itself."""

    @property
    def base(self) -> str: ...
    @property
    def model(self) -> str: ...

    def resolve_model(self) -> str: ...

    def list_models(self) -> list[str]: ...
