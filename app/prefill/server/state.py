"""What the routes serve from: the model pool, and each resident chat model as the routes use it.

`ServeState` is built once by the caller and passed in. A request names its model; `lease` finds it
in the pool (loading it if it is not resident, off the event loop) and `served` gives the routes its
scheduler, chat module, prompt bounds and loop waker, made once per resident.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass, field
from typing import cast

import anyio.to_thread

from prefill.engine.errors import EngineError, ModelLoadError
from prefill.pool.chat_model import ChatModel
from prefill.pool.errors import ModelBusy, ModelUnusable, PoolClosed, PoolFull, UnknownModel, WrongKind
from prefill.pool.pool import Lease, ModelPool, Resident
from prefill.server.browser_guard import LOOPBACK_NAMES
from prefill.server.cost_bounds import PROMPT_BUILDS, PromptBounds, body_limit
from prefill.server.errors import ApiError, bad_request, model_not_found, server_error, unavailable
from prefill.server.generate import WRITE_DEADLINE_S
from prefill.server.images import IMAGE_BODY_BYTES, ImageDecoder
from prefill.server.loop_waker import LoopWaker
from prefill.server.responses.storage import ResponseStorage

RETRY_FULL_S = 5  # what a client refused for a full pool is told to wait


class ServedModel:
    """A resident chat model as the routes use it: its scheduler, chat module, bounds and waker."""

    def __init__(self, resident: Resident, builds: asyncio.Semaphore):
        self.id = resident.id
        self.model = cast(ChatModel, resident.as_kind("chat"))
        self.scheduler = self.model.scheduler
        self.chat = self.model.chat
        self.bounds = PromptBounds(self.scheduler.n_ctx_seq, self.scheduler.runtime.longest_token_bytes, builds)
        self._waker: LoopWaker | None = None

    def waker(self) -> LoopWaker:
        """The one waker of the loop serving this model's streams (made on the first request, on that loop)."""
        loop = asyncio.get_running_loop()
        if self._waker is None or self._waker.loop is not loop:
            self._waker = LoopWaker(loop)
            self.scheduler.on_events = self._waker.step_done
        return self._waker


@dataclass
class ServeState:
    """The pool, the doors' settings, and the Responses API's kept responses."""

    pool: ModelPool
    n_ctx: int  # a slot's context (the largest of the models'): what a body may need
    can_see: bool = False  # a model reads images: bodies may carry them
    api_key: str = ""
    cors_origins: tuple[str, ...] = ()
    hosts: frozenset[str] | None = LOOPBACK_NAMES  # the names Host may carry (None: any)
    max_body: int = 0  # bytes; 0: what the slot's context can hold (cost_bounds.body_limit), and images
    allow_remote_images: bool = False  # fetch image_url parts' http(s) URLs (off: data: URLs only)
    write_deadline_s: float = WRITE_DEADLINE_S  # a stream's client that takes nothing this long is dropped
    created: int = field(default_factory=lambda: int(time.time()))
    responses: ResponseStorage = field(default_factory=ResponseStorage)  # the Responses API's kept responses
    images: ImageDecoder = field(default_factory=ImageDecoder, init=False, repr=False)  # decodes, off the builds
    _builds: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(PROMPT_BUILDS), init=False,
                                       repr=False)
    _served: weakref.WeakKeyDictionary[Resident, ServedModel] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False)

    def __post_init__(self) -> None:
        self.max_body = self.max_body or body_limit(self.n_ctx) + (IMAGE_BODY_BYTES if self.can_see else 0)

    def served(self, resident: Resident) -> ServedModel:
        """The routes' view of a resident chat model (made once per load)."""
        found = self._served.get(resident)
        if found is None:
            try:
                found = self._served[resident] = ServedModel(resident, self._builds)
            except WrongKind as e:
                raise bad_request(f"{str(e)[:1].upper()}{str(e)[1:]}.", "model", "wrong_model_kind") from None
        return found

    async def lease(self, name: str, keep_alive_s: float | None = None) -> Lease:
        """The model `name` names, leased for one request: loaded first if it is not resident
        (off the loop; the others keep serving meanwhile).

        Raises:
            ApiError: 404 for a name the pool does not know (listing those it does), 400 for a model
                whose file is refused, 503 when no memory can be made for it, 500 for a failed load.
        """
        try:  # resident (the common case): no thread hop, which costs a request about a millisecond
            found = self.pool.acquire_resident(name, keep_alive_s)
            return found if found is not None else await anyio.to_thread.run_sync(self.pool.acquire, name, keep_alive_s)
        except EngineError as e:
            raise pool_error(e) from None


def pool_error(e: EngineError) -> ApiError:
    """The pool's refusal in OpenAI's shape, its words kept."""
    said = f"{str(e)[:1].upper()}{str(e)[1:]}."
    if isinstance(e, UnknownModel):
        return model_not_found(e.name, e.ids)
    if isinstance(e, ModelUnusable):
        return ApiError(400, said, param="model", code="model_unusable")
    if isinstance(e, PoolFull):
        return ApiError(503, said, type="server_error", code="model_pool_full",
                        headers={"Retry-After": str(RETRY_FULL_S)})
    if isinstance(e, ModelBusy):
        return ApiError(409, said, param="model", code="model_busy")
    if isinstance(e, WrongKind):
        return bad_request(said, "model", "wrong_model_kind")
    if isinstance(e, PoolClosed):
        return unavailable(said)
    if isinstance(e, ModelLoadError):
        return server_error(said)
    return server_error(said)
