"""Load models for parallel slots and serve them with uvicorn on a socket bound here.

The server holds a model pool (app/prefill/pool): `ServeOptions.model` alone is today's server (that
one model, pinned, loaded before the socket is bound); `ServeOptions.models` is a catalogue (a models
folder) whose models load when a request names them, within the pool's limits. The socket is bound
before uvicorn starts, so port 0 works and the address printed is the real one. `ollama_port` binds a
second socket on the same host for the same app (Ollama's clients look at 11434); the same doors and
key stand before it, and the same rule: another address than loopback only with a key.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.engine.settings import LoadSettings
from prefill.engine.speculation import Speculation
from prefill.pool import chat_model
from prefill.pool.catalogue import Kind, ModelEntry, checked, entry_for_file
from prefill.pool.chat_model import ChatLoad, ChatModel, load_chat
from prefill.pool.embed_model import EmbedLoad, load_embedding
from prefill.pool.memory import ModelMemory
from prefill.pool.pool import Loader, ModelPool, PoolLimits
from prefill.server.browser_guard import allowed_hosts, is_loopback
from prefill.server.connections import HEADER_DEADLINE_S, MAX_CONNECTIONS, guarded_protocol
from prefill.server.documents.library import ServerDocuments, default_docs_index
from prefill.server.generate import WRITE_DEADLINE_S
from prefill.server.responses.storage import MAX_RESPONSES, ResponseStorage
from prefill.server.routes import create_app
from prefill.server.state import ServeState

DEFAULT_HOST = "127.0.0.1"
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class ServeOptions:
    model: Path | None  # one model, pinned and loaded at start (None: only `models`, loaded on demand)
    settings: LoadSettings  # n_ctx: the context of each slot
    host: str = DEFAULT_HOST
    port: int = 8080
    parallel: int = 4
    api_key: str = ""
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # more names Host may carry (a non-loopback bind)
    max_queued: int = 0  # requests waiting beyond the slots before a 429 (0: 8 per slot)
    model_id: str = ""  # default: the file's name without .gguf
    max_body: int = 0  # bytes; 0: what a slot's context can hold
    header_deadline_s: float = HEADER_DEADLINE_S  # for a connection's request headers
    max_connections: int = MAX_CONNECTIONS  # lowered to what the file-descriptor limit allows
    write_deadline_s: float = WRITE_DEADLINE_S  # a stream's client that takes nothing this long is dropped
    mmproj: Path | None = None  # the projector that lets the model read images (engine/vision)
    allow_remote_images: bool = False  # fetch image_url parts' http(s) URLs (off: base64 data: URLs only)
    # "ngram": greedy requests verify drafts from their own text (slot_drafts.py); "draft": from the
    # draft model (slot_draft_model.py), refused in `BatchScheduler.speculation_note` if unfit
    speculation: Speculation = field(default_factory=Speculation)
    models: tuple[ModelEntry, ...] = ()  # a catalogue (a models folder): loaded when a request names one
    limits: PoolLimits = field(default_factory=PoolLimits)  # memory budget, model count, idle TTL
    aliases: tuple[tuple[str, str], ...] = ()  # (name, id): other names a request may use
    pinned: tuple[str, ...] = ()  # ids or aliases never unloaded but by hand (loaded at start)
    default_model: str = ""  # answers a request for a model the pool lacks ("" : a 404 listing them)
    ollama_port: int | None = None  # a second socket on `host` for Ollama's clients (the same app; 0: a free port)
    responses_db: Path | None = None  # where the Responses API keeps responses (None: the history's database)
    max_stored_responses: int = MAX_RESPONSES  # kept at most, none older than 30 days (0: none kept)
    # embedding or reranking models served beside `model`, pinned and loaded at start (--embed-model)
    embed_models: tuple[ModelEntry, ...] = ()
    docs_index: Path | None = None  # the document collections requests may name (None: `prefill docs`'s index)
    # bytes of prompts each chat model keeps in host memory after they leave their slot, counted in its
    # memory (0: none; None: as many as its slots' KV cache)
    prompt_cache: int | None = None
    prompt_disk: int = 0  # bytes of those prompts kept on disk, per model, once they leave memory (0: none)
    prompt_disk_dir: Path | None = None  # where (None: the platform's cache folder)

    def chat_load(self, on_snapshot: Callable[[BatchSnapshot], None] | None = None) -> ChatLoad:
        """How a chat model of this server is loaded."""
        return ChatLoad(self.settings, self.parallel, self.max_queued, self.speculation, on_snapshot,
                        self.prompt_cache, self.prompt_disk, self.prompt_disk_dir)

    def entries(self) -> list[ModelEntry]:
        """`model` (its id `model_id` or the file's stem, its projector `mmproj`), `embed_models`, then
        `models` (a name given twice is the first one's)."""
        out = [] if self.model is None else [entry_for_file(self.model, self.model_id, self.mmproj)]
        for m in (*self.embed_models, *self.models):
            if all(m.id != o.id for o in out):
                out.append(m)
        return out

    def started(self) -> list[str]:
        """The ids loaded at start and pinned: `model`'s and the `embed_models`'."""
        ids = [] if self.model is None else [self.entries()[0].id]
        return ids + [m.id for m in self.embed_models]


class ExposureError(ValueError):
    """Asked to listen beyond this machine without an API key."""


def check_exposure(host: str, api_key: str) -> None:
    """Another address than loopback only with an API key."""
    if not is_loopback(host) and not api_key:
        raise ExposureError(f"listening on {host} exposes the model to the network: give an --api-key "
                            "(or PREFILL_API_KEY), or keep the default 127.0.0.1")


def bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(addr)
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class RunningServer:
    """A model pool and a bound socket, served by uvicorn.

    `serve_forever` blocks (the CLI); `start_thread` serves from a thread of its own (the window),
    and `stop` ends either. Build it with `RunningServer.open`.
    """

    def __init__(self, options: ServeOptions, pool: ModelPool, sock: socket.socket,
                 ollama_sock: socket.socket | None = None):
        import uvicorn

        self.options = options
        self.pool = pool
        self.sock = sock
        self.url = url_of(sock)
        self.ollama_sock = ollama_sock  # the same app on a second port, where Ollama's clients look
        self.ollama_url = url_of(ollama_sock) if ollama_sock is not None else ""
        entries = options.entries()
        self.model_id = entries[0].id if options.model is not None else ""  # the one model of `--model`
        n_ctx = max((e.settings or options.settings).n_ctx for e in entries) if entries else options.settings.n_ctx
        state = ServeState(
            pool=pool, n_ctx=n_ctx, can_see=any(e.projector is not None for e in entries),
            api_key=options.api_key, cors_origins=options.cors_origins, max_body=options.max_body,
            hosts=allowed_hosts(options.host, options.allowed_hosts), write_deadline_s=options.write_deadline_s,
            allow_remote_images=options.allow_remote_images,
            responses=ResponseStorage(options.responses_db, options.max_stored_responses),
            documents=ServerDocuments(options.docs_index or default_docs_index()),
        )
        self.state = state
        config = uvicorn.Config(create_app(state), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=3, backlog=options.max_connections,
                                http=guarded_protocol(options.header_deadline_s, options.max_connections))
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def kind(self) -> Kind:
        """What `options.model` serves: "chat", "embedding" or "rerank" (as its header says)."""
        if not self.model_id:
            raise ValueError("this server was started with a models folder, not one model")
        return self.pool.resolve(self.model_id).kind

    @property
    def scheduler(self) -> BatchScheduler:
        """The scheduler of `options.model` (the window's chat is one of its slots); loaded again if
        it was unloaded by hand."""
        if not self.model_id:
            raise ValueError("this server was started with a models folder, not one model")
        r = self.pool.resident(self.model_id) or self.pool.load(self.model_id)
        return cast(ChatModel, r.as_kind("chat")).scheduler

    @classmethod
    def open(cls, options: ServeOptions,
             on_snapshot: Callable[[BatchSnapshot], None] | None = None) -> RunningServer:
        """Check the address, make the pool, load `options.model` and the pinned models, bind.

        Raises:
            ExposureError: a non-loopback host without a key.
            ModelLoadError: a model to load at start could not be loaded.
            PoolError: an alias or pin names no model, or the pinned models pass the limits.
            ValueError: an unknown `speculative` mode (a refused draft model is not an error: the server
                runs without speculation, and `scheduler.speculation_note` says why).
            OSError: the address could not be bound.
        """
        check_exposure(options.host, options.api_key)
        # Two busy threads share the GIL here: the decoder, which drops it for every llama.cpp call,
        # and the event loop. Each time the decoder comes back it may wait a whole switch interval
        # (5 ms by default, longer than a small model's step) for the loop to let go.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        pool = open_pool(options, on_snapshot)
        socks: list[socket.socket] = []
        try:
            socks.append(bind(options.host, options.port))
            if options.ollama_port is not None:
                socks.append(bind(options.host, options.ollama_port))
            return cls(options, pool, *socks)
        except BaseException:
            for sock in socks:
                sock.close()
            pool.close()
            raise

    def serve_forever(self) -> None:
        """Serve until interrupted (Ctrl+C) or stopped; frees every model at the end."""
        socks = [self.sock] if self.ollama_sock is None else [self.sock, self.ollama_sock]
        try:
            self._server.run(sockets=socks)
        finally:
            self.pool.close()
            self.state.responses.close()
            if self.state.documents is not None:
                self.state.documents.close()
            for sock in socks:
                sock.close()

    def start_thread(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="prefill-serve", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask uvicorn to finish (streams in flight get a few seconds) and wait for it."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()


def open_pool(options: ServeOptions, on_snapshot: Callable[[BatchSnapshot], None] | None = None) -> ModelPool:
    """The pool of `options`' models, `options.model` and the pinned ones loaded (a model given alone
    is pinned: today's one-model server).

    Raises:
        ModelLoadError, PoolError, ValueError: as `RunningServer.open`.
    """
    load = options.chat_load(on_snapshot)
    embed = EmbedLoad(options.settings)
    entries = checked(options.entries())
    pinned = [*options.started(), *options.pinned]

    def estimate(entry: ModelEntry) -> ModelMemory:
        return load.estimate(entry) if entry.kind == "chat" else embed.estimate(entry)

    loaders: dict[Kind, Loader] = {"chat": lambda e: load_chat(e, load),
                                   "embedding": lambda e: load_embedding(e, embed),
                                   "rerank": lambda e: load_embedding(e, embed)}
    pool = ModelPool(entries, loaders, estimate, options.limits, dict(options.aliases), pinned, options.default_model)
    try:
        pool.estimate_all()  # the headers read here, at start, not later on the event loop (statuses)
        for name in dict.fromkeys(pinned):
            pool.load(name)
    except BaseException:
        pool.close()
        raise
    return pool


def open_scheduler(options: ServeOptions, on_snapshot: Callable[[BatchSnapshot], None] | None = None,
                   ) -> BatchScheduler:
    """`options.model` loaded for the slots alone, outside any pool (pool/chat_model.py `open_scheduler`)."""
    if options.model is None:
        raise ValueError("no model to load")
    return chat_model.open_scheduler(options.model, options.chat_load(on_snapshot))


def serve(options: ServeOptions, ready: Callable[[RunningServer], None] | None = None) -> None:
    """Load, bind, and serve until interrupted; `ready(server)` once listening."""
    server = RunningServer.open(options)
    if ready is not None:
        ready(server)
    server.serve_forever()
