"""Load a model for parallel slots and serve it with uvicorn on a socket bound here.

The socket is bound before uvicorn starts, so port 0 works and the address printed
is the real one.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_draft_model import SlotDraftModel
from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.engine.errors import DraftModelError
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.settings import LoadSettings
from prefill.engine.speculation import Speculation
from prefill.engine.vision.projector import Projector
from prefill.server.browser_guard import allowed_hosts, is_loopback
from prefill.server.connections import HEADER_DEADLINE_S, MAX_CONNECTIONS, guarded_protocol
from prefill.server.generate import WRITE_DEADLINE_S
from prefill.server.routes import ServeState, create_app

DEFAULT_HOST = "127.0.0.1"
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class ServeOptions:
    model: Path
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
    """A loaded model, its scheduler and a bound socket, served by uvicorn.

    `serve_forever` blocks (the CLI); `start_thread` serves from a thread of its own (the window),
    and `stop` ends either. Build it with `RunningServer.open`.
    """

    def __init__(self, options: ServeOptions, scheduler: BatchScheduler, sock: socket.socket):
        import uvicorn

        self.options = options
        self.scheduler = scheduler
        self.sock = sock
        self.url = url_of(sock)
        model = scheduler.model
        state = ServeState(
            scheduler=scheduler, chat=ModelChat(model.header.chat_template, model.runtime),
            model_id=options.model_id or options.model.name.removesuffix(".gguf"),
            api_key=options.api_key, cors_origins=options.cors_origins, max_body=options.max_body,
            hosts=allowed_hosts(options.host, options.allowed_hosts), write_deadline_s=options.write_deadline_s,
            allow_remote_images=options.allow_remote_images,
        )
        self.model_id = state.model_id
        config = uvicorn.Config(create_app(state), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=3, backlog=options.max_connections,
                                http=guarded_protocol(options.header_deadline_s, options.max_connections))
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, options: ServeOptions,
             on_snapshot: Callable[[BatchSnapshot], None] | None = None) -> RunningServer:
        """Check the address, load the model for `options.parallel` slots, bind.

        Raises:
            ExposureError: a non-loopback host without a key.
            ModelLoadError: the model could not be loaded.
            ValueError: an unknown `speculative` mode (a refused draft model is not an error: the server
                runs without speculation, and `scheduler.speculation_note` says why).
            OSError: the address could not be bound.
        """
        check_exposure(options.host, options.api_key)
        # Two busy threads share the GIL here: the decoder, which drops it for every llama.cpp call,
        # and the event loop. Each time the decoder comes back it may wait a whole switch interval
        # (5 ms by default, longer than a small model's step) for the loop to let go.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        scheduler = open_scheduler(options, on_snapshot)
        try:
            if options.mmproj is not None:
                scheduler.projector = Projector(options.mmproj, scheduler.runtime)
            return cls(options, scheduler, bind(options.host, options.port))
        except BaseException:
            scheduler.close()
            raise

    def serve_forever(self) -> None:
        """Serve until interrupted (Ctrl+C) or stopped; frees the model at the end."""
        try:
            self._server.run(sockets=[self.sock])
        finally:
            self.scheduler.close()
            self.sock.close()

    def start_thread(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="prefill-serve", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask uvicorn to finish (streams in flight get a few seconds) and wait for it."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()


def open_scheduler(options: ServeOptions, on_snapshot: Callable[[BatchSnapshot], None] | None = None,
                   ) -> BatchScheduler:
    """Load the model for the slots, and the draft model `options.speculation` names, if any: one that
    cannot draft for the model leaves the slots without speculation, with the reason in the
    scheduler's `speculation_note` ("draft" without a file is off)."""
    wanted = options.speculation
    draft_path = Path(wanted.draft_path) if wanted.draft_wanted else None
    mode = "off" if wanted.mode == "draft" and draft_path is None else wanted.mode
    model = load_batch_model(options.model, options.settings, options.parallel)
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
    scheduler = BatchScheduler(model, on_snapshot, options.max_queued, mode, draft, wanted.draft_max)
    if refused:
        scheduler.speculation_note = refused
    return scheduler


def serve(options: ServeOptions, ready: Callable[[str, BatchScheduler], None] | None = None) -> None:
    """Load, bind, and serve until interrupted; `ready(url, scheduler)` once listening."""
    server = RunningServer.open(options)
    if ready is not None:
        ready(server.url, server.scheduler)
    server.serve_forever()
