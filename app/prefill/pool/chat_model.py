"""A chat model of the pool: its `BatchScheduler` (one context, a sequence per slot), its chat
module and its projector, loaded with its own settings, and the requests it has in flight.

Requests reach the scheduler through `ChatModel.submit`, which counts each one until its last
event (Finished or Failed), so the pool knows, without asking the scheduler's snapshot (published
a tenth of a second late), whether a model is generating or has requests queued.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_draft_model import SlotDraftModel
from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.engine.errors import DraftModelError
from prefill.engine.events import Finished
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.settings import LoadSettings
from prefill.engine.speculation import Speculation
from prefill.engine.vision.projector import Projector
from prefill.pool.catalogue import Kind, ModelEntry
from prefill.pool.memory import ModelMemory, estimate, logged_buffers, measured
from prefill.pool.prompt_spill import PromptSpill, default_spill_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatLoad:
    """How the pool loads a chat model whose entry brings no settings of its own."""

    settings: LoadSettings  # n_ctx: the context of each slot
    parallel: int = 4
    max_queued: int = 0  # requests waiting beyond the slots before QueueFull (0: 8 per slot)
    speculation: Speculation = field(default_factory=Speculation)
    on_snapshot: Callable[[BatchSnapshot], None] | None = None
    # bytes of prompts kept in host memory after they leave their slot (0: none; None: as many as the
    # slots' KV cache takes): counted in the model's memory, so in the pool's budget
    prompt_cache: int | None = None
    # bytes of those prompts kept on disk once they leave memory, per model (0: none), under `prompt_disk_dir`
    # (None: the platform's cache folder, pool/prompt_spill.py)
    prompt_disk: int = 0
    prompt_disk_dir: Path | None = None

    def settings_for(self, entry: ModelEntry) -> LoadSettings:
        return entry.settings or self.settings

    def estimate(self, entry: ModelEntry) -> ModelMemory:
        """What the entry will take once loaded, from its headers (no load), its prompt cache's bound too."""
        guess = estimate(entry.path, self.settings_for(entry), self.parallel, entry.projector)
        return replace(guess, prompt_cache=guess.kv if self.prompt_cache is None else self.prompt_cache)


class ChatModel:
    """A loaded chat model. `submit` counts requests until their end; `close` frees everything."""

    kind: Kind = "chat"

    def __init__(self, scheduler: BatchScheduler, memory: ModelMemory):
        self.scheduler = scheduler
        self.chat = ModelChat(scheduler.model.header.chat_template, scheduler.runtime)
        self.memory = memory
        self.on_idle: Callable[[], None] | None = None  # set by the pool: the last request ended
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Requests submitted here and not yet ended: generating, prefilling or queued (exact)."""
        return self._in_flight

    @property
    def seen_in_flight(self) -> int:
        """Requests the scheduler serves, those submitted to it directly (the window's chat as a slot)
        included, as its snapshot shows them: at most 0.1 s late, so only an unload by hand asks it."""
        return max(self._in_flight, self.scheduler.snapshot().in_flight)

    def submit(self, request: BatchRequest) -> RequestHandle:
        """`scheduler.submit`, the request counted until its Finished or Failed.

        Raises what `BatchScheduler.submit` raises (the request is then not counted).
        """
        inner = request.sink

        def sink(event: BatchEvent) -> None:  # on the scheduler thread
            try:
                inner(event)
            finally:  # a sink that fails still ends its request here: the model must not stay busy
                if type(event) is Finished or type(event) is Failed:
                    self._ended()

        with self._lock:
            self._in_flight += 1
        try:
            return self.scheduler.submit(replace(request, sink=sink))
        except BaseException:
            self._ended()
            raise

    def _ended(self) -> None:
        with self._lock:
            self._in_flight -= 1
            idle = self._in_flight == 0
        hook = self.on_idle
        if idle and hook is not None:
            hook()

    def close(self) -> None:
        """Stop the scheduler (anything still queued gets Failed) and free the model, draft and projector."""
        self.scheduler.close()


def open_scheduler(path: Path, load: ChatLoad) -> BatchScheduler:
    """Load the model for the slots, and the draft model `load.speculation` names, if any: one that
    cannot draft for the model leaves the slots without speculation, with the reason in the
    scheduler's `speculation_note` ("draft" without a file is off).

    Raises:
        ModelLoadError: the model could not be loaded.
        ValueError: an unknown speculative mode.
    """
    wanted = load.speculation
    draft_path = Path(wanted.draft_path) if wanted.draft_wanted else None
    mode = "off" if wanted.mode == "draft" and draft_path is None else wanted.mode
    model = load_batch_model(path, load.settings, load.parallel)
    spill = None
    if load.prompt_disk > 0 and load.prompt_cache != 0:
        rt = model.runtime
        try:
            spill = PromptSpill.for_model(load.prompt_disk_dir or default_spill_dir(), load.prompt_disk, path,
                                          rt.n_ctx_seq, load.settings.kv_type, rt.flash_attn_on)
        except OSError as e:  # the folder cannot be read or made: prompts are kept in memory only
            log.warning("prompts will not be kept on disk: %s", e)
        except BaseException:
            rt.close()
            raise
    draft, refused = None, ""
    if draft_path is not None:
        try:
            draft = SlotDraftModel.load(draft_path, model.runtime)
        except DraftModelError as e:
            refused = str(e)
        except BaseException:
            model.runtime.close()
            raise
    mode = "off" if refused else mode
    scheduler = BatchScheduler(model, load.on_snapshot, load.max_queued, mode, draft, wanted.draft_max,
                               load.prompt_cache, spill)
    if refused:
        scheduler.speculation_note = refused
    return scheduler


def load_chat(entry: ModelEntry, load: ChatLoad) -> ChatModel:
    """Check the file at the guard, load it for the slots with its projector, measure what it took.

    Raises:
        GGUFError: the guard refused the file (llama.cpp would have aborted on it).
        ModelLoadError: llama.cpp refused it, or its projector.
    """
    read_model_header(entry.path)
    settings = load.settings_for(entry)
    guess = load.estimate(entry)
    scheduler = open_scheduler(entry.path, replace(load, settings=settings))
    try:
        if entry.projector is not None:
            scheduler.projector = Projector(entry.projector, scheduler.runtime)
        rt = scheduler.runtime
        rt.longest_token_bytes  # noqa: B018 -- read once here, part of the load: a server's first request bounds its prompt by it
        memory = measured(rt.model_bytes(), rt.n_ctx, scheduler.model.bytes_per_cell, guess,
                          logged_buffers(rt.context_log))
        return ChatModel(scheduler, replace(memory, prompt_cache=scheduler.prompt_cache.limit))
    except BaseException:
        scheduler.close()
        raise
