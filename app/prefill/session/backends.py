"""Which backend answers a conversation: one factory for the window, the terminal and the server.

A target names what should answer (a model file, a remote endpoint, a slot of the running
server); `open_backend` builds the `ChatBackend` for it. `describe` says what a person sees of it.
A model file's target carries its speculative decoding (`Speculation`, engine/speculation.py),
set on the engine once it is loaded, and again by `apply_speculation` when it changes (no reload).
It also names the vision projector (mmproj) loaded with it: a file, none, or the one beside the
model (what the window loads).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from prefill.engine.errors import EngineError, InvalidSetting
from prefill.engine.settings import LoadSettings
from prefill.engine.speculation import Speculation
from prefill.session.capabilities import ChatBackend, RunsLocally, SeesImages, Speculates
from prefill.session.loaded import LoadedModel, local_model, remote_model

if TYPE_CHECKING:  # llama.cpp and the HTTP client are imported when a backend is opened, not with the targets
    from prefill.engine.batch.scheduler import BatchScheduler
    from prefill.engine.gguf.header import GGUFHeader
    from prefill.engine.local.chat_engine import ChatEngine

log = logging.getLogger(__name__)


BESIDE = None  # `LocalModel.mmproj`: the projector beside the model, when there is one


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file on this machine, loaded by llama.cpp.

    `mmproj` is the projector that lets it see images: a path, "" for none (text only), or `BESIDE`
    for the mmproj file beside the model (the engine's `find_projector`), loaded when there is one;
    one found beside it that llama.cpp refuses leaves the model text-only, with the reason said.
    """

    path: str
    settings: LoadSettings
    speculation: Speculation = field(default_factory=Speculation)
    mmproj: str | None = ""


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
        return open_local(target, progress)
    if isinstance(target, ServerSlot):
        from prefill.engine.batch.slot_chat import SlotChat

        return SlotChat(target.scheduler)
    from prefill.remote.engine import RemoteEngine

    engine = RemoteEngine(target.url, target.model, target.api_key)
    try:
        engine.resolve_model()
    except BaseException:
        engine.close()
        raise
    return engine


def open_local(target: LocalModel, progress: Callable[[float], bool] | None = None) -> ChatEngine:
    """A model file loaded with its projector and speculation (`open_backend` for a `LocalModel`).

    Raises:
        ModelLoadError: the file is missing, not a GGUF llama.cpp takes, or the load was stopped.
    """
    from prefill.engine.local.chat_engine import ChatEngine

    local = ChatEngine.load(target.path, target.settings, progress=progress, mmproj=target.mmproj or None)
    if target.mmproj is BESIDE:
        _projector_beside(local)
    try:
        apply_speculation(local, target.speculation)
    except EngineError as e:  # the model answers all the same, one token per step
        local.speculation_note = refusal_text(e)
        log.warning("%s", local.speculation_note)
    return local


def _projector_beside(engine: ChatEngine) -> None:
    """Load the projector beside the model, if any; one llama.cpp refuses leaves the model text-only
    (`vision_note` says why)."""
    from prefill.engine.gguf.projector_files import find_projector
    from prefill.engine.vision.errors import ProjectorError

    found = find_projector(engine.path)
    if found is None:
        return
    try:
        engine.use_projector(found)
    except ProjectorError as e:
        log.warning("%s was not loaded: %s", found.name, e)


def vision_note(engine: RunsLocally, sees: SeesImages, wanted: str | None = BESIDE) -> str:
    """What the load report says of images: the projector loaded, or, for a model that has or needs
    one but loaded none, that images need it and which file to get.

    Args:
        wanted: the target's `mmproj` ("" when the person chose text only: nothing is said).
    """
    from prefill.engine.gguf.projector_files import find_projector

    if sees.projector is not None:
        return f"Images: {sees.projector.path.name}"
    if wanted == "":
        return ""
    beside = find_projector(engine.path)
    if beside is not None:
        return (f"Text only: the projector {beside.name} beside the model was refused (see the log); "
                "images need one made for this model.")
    if not sees_images(engine.header):
        return ""
    return ("Text only: images need the model's projector, an mmproj-*.gguf from the model's repository, "
            f"saved beside {engine.path.name}.")


# Text models of llama.cpp's vision-language families (their images come through an mmproj).
_VISION_ARCHS = frozenset({"qwen2vl", "qwen25vl", "qwen3vl", "qwen3vlmoe", "mllama", "llama4", "gemma3n", "mistral3"})
_VISION_WORDS = ("vision", "-vl", " vl", "llava", "vlm", "pixtral", "multimodal")
_GEMMA3_TEXT_ONLY_WIDTH = 1152  # Gemma 3 1B reads text only; the larger sizes see images


def sees_images(header: GGUFHeader) -> bool:
    """Whether a text model's header marks it as half of a vision model: its architecture, or the words
    its name, base model and tags use."""
    arch = header.architecture
    if arch in _VISION_ARCHS or (arch == "gemma3" and header.n_embd > _GEMMA3_TEXT_ONLY_WIDTH):
        return True
    meta = header.metadata
    words = " ".join(str(meta.get(k, "")) for k in ("general.name", "general.basename", "general.tags",
                                                    "general.base_model.0.name", "general.finetune")).lower()
    return any(w in words for w in _VISION_WORDS)


def describe(backend: ChatBackend, target: Target, load_ms: float) -> LoadedModel:
    """What the window shows of what answers: the model, its context, where it runs, what it sees."""
    endpoint = backend.endpoint
    if endpoint is not None:
        name = target.name if isinstance(target, RemoteEndpoint) else ""
        return remote_model(endpoint, endpoint.resolve_model(), name, load_ms)
    local = backend.local
    if local is None:
        raise EngineError("the backend is neither a model file nor an endpoint")
    sees = backend.sees_images
    projector = sees.projector if sees is not None else None
    loaded = local_model(local, Path(target.path) if isinstance(target, LocalModel) else local.path, load_ms,
                         projector.path if projector is not None else None)
    if sees is None:
        return loaded
    return replace(loaded, vision=vision_note(local, sees, target.mmproj if isinstance(target, LocalModel) else ""))


def apply_speculation(engine: Speculates, wanted: Speculation, before: Speculation | None = None) -> None:
    """Set `engine`'s speculative decoding; the draft model is loaded (or freed) only when the one
    wanted differs from `before`'s (None: the engine has none yet), so a change of mode or draft
    length alone costs nothing.

    Raises:
        EngineError: the draft model was refused (or "draft" names none); speculation is then off.
    """
    engine.draft_max = wanted.draft_max
    had = before.draft_wanted if before is not None else ""
    try:
        if wanted.mode == "draft" and not wanted.draft_path:
            raise InvalidSetting("model.draft_model_path", "speculative decoding with a draft model needs "
                                 "a draft model file (Settings > Model > Draft model)")
        if wanted.draft_wanted != had:
            engine.use_draft_model(wanted.draft_wanted or None)
    except EngineError:
        engine.use_draft_model(None)  # the draft a refused one would have replaced goes too: plainly off
        engine.speculative = "off"
        raise
    engine.speculative = wanted.mode


def refusal_text(e: EngineError) -> str:
    """A refused draft model in words, with what happens instead."""
    reason = e.reason if isinstance(e, InvalidSetting) else str(e)
    return f"Speculative decoding is off: {reason.rstrip('.')}. Answers are decoded one token per step."
