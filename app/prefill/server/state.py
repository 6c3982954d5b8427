"""What the routes serve from: the model pool, and each resident chat model as the routes use it.

`ServeState` is built once by the caller and passed in. A request names its model; `lease` finds it
in the pool (loading it if it is not resident, off the event loop; a model of another kind than the
request needs is a 400 before anything loads) and `served` gives the routes its scheduler, chat
module, prompt bounds and loop waker, made once per resident. Embedding work takes `embed_turn`.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass, field
from typing import cast

import anyio.to_thread

from prefill.engine.errors import EngineError, ModelLoadError
from prefill.pool.catalogue import KIND_NAMES, Kind
from prefill.pool.chat_model import ChatModel
from prefill.pool.errors import ModelBusy, ModelUnusable, PoolClosed, PoolFull, UnknownModel, WrongKind
from prefill.pool.pool import Lease, ModelPool, Resident
from prefill.server.browser_guard import LOOPBACK_NAMES
from prefill.server.cost_bounds import EMBED_BODY_BYTES, PROMPT_BUILDS, PromptBounds, body_limit
from prefill.server.documents.library import ServerDocuments
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
    """The pool, the doors' settings, the Responses API's kept responses and the document collections."""

    pool: ModelPool
    n_ctx: int  # a slot's context (the largest of the models'): what a body may need
    can_see: bool = False  # a model reads images: bodies may carry them
    api_key: str = ""
    cors_origins: tuple[str, ...] = ()
    hosts: frozenset[str] | None = LOOPBACK_NAMES  # the names Host may carry (None: any)
    max_body: int = 0  # bytes; 0: what the slot's context can hold (cost_bounds.body_limit), and images
    max_embed_body: int = EMBED_BODY_BYTES  # bytes of an embeddings or rerank request's body
    allow_remote_images: bool = False  # fetch image_url parts' http(s) URLs (off: data: URLs only)
    write_deadline_s: float = WRITE_DEADLINE_S  # a stream's client that takes nothing this long is dropped
    created: int = field(default_factory=lambda: int(time.time()))
    responses: ResponseStorage = field(default_factory=ResponseStorage)  # the Responses API's kept responses
    documents: ServerDocuments | None = None  # the document collections requests may name (None: none)
    images: ImageDecoder = field(default_factory=ImageDecoder, init=False, repr=False)  # decodes, off the builds
    _builds: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(PROMPT_BUILDS), init=False,
                                       repr=False)
    _embed_turns: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1), init=False, repr=False)
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
                raise pool_error(e, self.pool) from None
        return found

    async def lease(self, name: str, keep_alive_s: float | None = None, kind: Kind | None = "chat") -> Lease:
        """The model `name` names, leased for one request: loaded first if it is not resident
        (off the loop; the others keep serving meanwhile). `kind`: what the request needs of it (a
        chat request a chat model; None: any), checked before it loads.

        Raises:
            ApiError: 404 for a name the pool does not know (listing those it does), 400 for a model
                whose file is refused or of another kind, 503 when no memory can be made for it, 500
                for a failed load.
        """
        try:  # resident (the common case): no thread hop, which costs a request about a millisecond
            found = self.pool.acquire_resident(name, keep_alive_s, kind)
            return found if found is not None else await anyio.to_thread.run_sync(self.pool.acquire, name,
                                                                                    keep_alive_s, kind)
        except EngineError as e:
            raise pool_error(e, self.pool) from None

    def embed_turn(self) -> asyncio.Semaphore:
        """The one turn for embedding work (tokenizing and evaluating inputs, on a worker thread): one
        call at a time, so embeddings never take the GIL from the chat schedulers' threads more than one
        thread does, and a request's inputs go in parts that others' interleave with."""
        return self._embed_turns


# What each kind of model answers, and what a request of each kind asks for, in a refusal's words.
ANSWERS: dict[Kind, str] = {"chat": "chat and completion requests (POST /v1/chat/completions, /v1/completions, "
                                    "/v1/messages)",
                            "embedding": "embeddings (POST /v1/embeddings)", "rerank": "reranking (POST /v1/rerank)"}
ASKS: dict[Kind, str] = {"chat": "a chat or completion request", "embedding": "embeddings", "rerank": "reranking"}


def wrong_kind(e: WrongKind, pool: ModelPool | None = None) -> ApiError:
    """A request asking a model for what its kind does not do: 400, saying what it is, what it answers,
    and which models here do what was asked."""
    said = f"The model {e.model_id!r} is {KIND_NAMES[e.kind]}: it answers {ANSWERS[e.kind]}, not {ASKS[e.wanted]}."
    if pool is not None:
        fit = [st.id for st in pool.statuses() if st.kind == e.wanted and st.state != "unusable"]
        said += (f" Ask one of these instead: {', '.join(repr(i) for i in fit)}." if fit
                 else f" No model here is {KIND_NAMES[e.wanted]}.")
    return bad_request(said, "model", "wrong_model_kind")


def pool_error(e: EngineError, pool: ModelPool | None = None) -> ApiError:
    """The pool's refusal in OpenAI's shape, its words kept (`pool`: to name the models of the kind a
    request of the wrong kind wanted)."""
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
        return wrong_kind(e, pool)
    if isinstance(e, PoolClosed):
        return unavailable(said)
    if isinstance(e, ModelLoadError):
        return server_error(said)
    return server_error(said)
