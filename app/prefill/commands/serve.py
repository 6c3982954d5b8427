"""`prefill serve`: an OpenAI-compatible HTTP server with parallel slots, over one model or a folder of them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prefill.commands.errors import CliError
from prefill.commands.options import (
    add_memory_options,
    add_model_options,
    bundled_embed_file,
    chosen_projector,
    draft_max,
    load_settings,
    memory_limits,
    model_path,
)
from prefill.commands.own_settings import OwnSettings, own_settings
from prefill.commands.terminal_text import terminal_line
from prefill.engine.speculation import DRAFT_MAX, Speculation
from prefill.engine.units import format_bytes

if TYPE_CHECKING:  # the pool and the server load on first use
    from prefill.engine.settings import LoadSettings
    from prefill.pool.catalogue import ModelEntry
    from prefill.pool.pool import PoolLimits
    from prefill.server.lifecycle import RunningServer, ServeOptions


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="serve models over an OpenAI-compatible HTTP API",
        description="Serve a model over an OpenAI-compatible HTTP API. --ctx is the context of each of "
                    "the --parallel slots (they share one llama.cpp context of ctx x parallel cells). With "
                    "--models-dir, every model of the folder is served by the request's model: one not loaded "
                    "is loaded when asked for, and the least recently used idle one is unloaded when the memory "
                    "budget or --max-models would be passed (never one generating, queued or pinned).")
    add_model_options(p)
    p.add_argument("--embed-model", action="append", default=[], metavar="PATH",
                   help="an embedding or reranking GGUF served beside --model, loaded at start and kept loaded, for "
                        "POST /v1/embeddings or /v1/rerank; bundled-embed is the bundled all-MiniLM-L6-v2 "
                        "(repeatable)")
    p.add_argument("--models-dir", nargs="?", const="", default=None, metavar="DIR",
                   help="serve every model `prefill ls --models-dir DIR` lists, by the names it gives them, "
                        "each loaded when a request asks for it (DIR left out: the model library)")
    add_memory_options(p, "loaded", ttl_note="; a request's keep_alive overrides it; pinned models stay")
    p.add_argument("--pin", action="append", default=[], metavar="NAME",
                   help="keep this model loaded: loaded at start, never unloaded for room or by the TTL "
                        "(repeatable)")
    p.add_argument("--default-model", default="", metavar="NAME",
                   help="the model that answers a request naming one not here (default: a 404 listing the models)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs --api-key)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument("--ollama-port", type=int, default=None, metavar="PORT",
                   help="also listen on PORT, on the same --host, for Ollama's clients (Ollama's is 11434): the "
                        "same server, its /api/ routes where they look (default: the main port only)")
    p.add_argument("--parallel", type=int, default=4, help="requests decoded together (default 4)")
    p.add_argument("--api-key", default=os.environ.get("PREFILL_API_KEY", ""),
                   help="require 'Authorization: Bearer KEY' (default: $PREFILL_API_KEY; a key given here "
                        "shows in the process list)")
    p.add_argument("--api-key-file", type=Path, default=None,
                   help="read the key from this file's first line (keep it 0600)")
    p.add_argument("--cors-origin", action="append", default=[],
                   help="allow browser requests from this origin (repeatable; CORS is off without it)")
    p.add_argument("--allowed-host", action="append", default=[],
                   help="another name clients may call the server by (repeatable; Host is checked against it)")
    p.add_argument("--max-queue", type=int, default=0,
                   help="requests that may wait for a slot before more get 429 (default: 8 per slot)")
    p.add_argument("--alias", action="append", default=[], metavar="NAME=ID",
                   help="another name requests may give a model (repeatable); a NAME alone is --model's id in the API "
                        "(default: the file name)")
    p.add_argument("--mmproj", metavar="PATH", default="",
                   help="the vision model's projector, for image_url parts (default: the mmproj*.gguf beside the "
                        "model; 'none': no images)")
    p.add_argument("--allow-remote-images", action="store_true",
                   help="fetch image_url parts' http(s) URLs (default: only base64 data: URLs are read)")
    p.add_argument("--speculative", metavar="off|ngram|PATH.gguf", default="off",
                   help="greedy requests (temperature 0, no penalties, no grammar) check several drafted tokens "
                        "a step: ngram takes drafts from their own prompt and answer, PATH.gguf from a small "
                        "draft model with the model's vocabulary (default off)")
    p.add_argument("--draft-max", type=draft_max, default=DRAFT_MAX, metavar="N",
                   help=f"with --speculative: the longest draft a slot checks in one step, 1 to 32 "
                        f"(default {DRAFT_MAX})")
    p.add_argument("--docs-dir", type=Path, default=None, metavar="DIR",
                   help="the folder whose documents.sqlite3 holds the document collections a request may name "
                        "(\"documents\": NAME) (default: the one `prefill docs` uses, beside the history)")
    p.add_argument("--cache-ram", type=cache_ram, default=None, metavar="MiB",
                   help="prompts kept in memory after another request takes their slot, at most this many MiB per "
                        "chat model, counted in its memory (and the --memory-budget): a conversation that comes "
                        "back, on any slot, reads only what is new. 0 keeps none (default: as much as the slots' "
                        "KV cache takes)")
    p.add_argument("--cache-disk", type=cache_ram, default=0, metavar="MiB",
                   help="prompts that --cache-ram lets go are written to disk (the cache folder, signed as the "
                        "window's saved chats are), at most this many MiB per chat model, and read back, checked "
                        "first, for a request that shares their start; they outlive the server (default 0: off)")
    p.add_argument("--max-stored-responses", type=int, default=1000, metavar="N",
                   help="responses the Responses API keeps for previous_response_id and GET /v1/responses/ID, at "
                        "most (the oldest go first; none older than 30 days; in the history's database, never "
                        "shown as a chat); 0 keeps none (default 1000)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from prefill.engine.embed.bundled import BUNDLED_EMBED_NAME, BUNDLED_EMBED_TITLE
    from prefill.pool.errors import PoolError
    from prefill.server.documents.library import docs_index_in
    from prefill.server.lifecycle import ExposureError, ServeOptions, check_exposure, serve

    if args.api_key_file is not None:
        args.api_key = read_key_file(args.api_key_file)
    elif args.api_key and args.api_key != os.environ.get("PREFILL_API_KEY", ""):
        print("prefill: a key given as --api-key shows in the process list to every user of this machine; "
              "set PREFILL_API_KEY instead", file=sys.stderr)
    if not 1 <= args.parallel <= 64:
        raise CliError("--parallel must be between 1 and 64")
    if args.max_stored_responses < 0:
        raise CliError("--max-stored-responses must be 0 or more")
    if not 0 <= args.port <= 65535:
        raise CliError("--port must be between 0 and 65535")
    if args.ollama_port is not None and not 0 <= args.ollama_port <= 65535:
        raise CliError("--ollama-port must be between 0 and 65535")
    if args.ollama_port is not None and args.ollama_port == args.port != 0:
        raise CliError("--ollama-port must differ from --port (Ollama's routes are on --port too)")
    try:
        check_exposure(args.host, args.api_key)  # before the model loads: fail fast
    except ExposureError as e:
        raise CliError(str(e)) from None
    try:
        speculation = Speculation.from_flag(args.speculative, args.draft_max)
    except ValueError as e:
        raise CliError(f"--speculative: {e}") from None
    draft = Path(speculation.draft_wanted) if speculation.draft_wanted else None
    if draft is not None and not draft.is_file():
        raise CliError(f"--speculative {args.speculative}: no such draft model file")
    settings = load_settings(args)
    model_id, aliases = split_aliases(args.alias)
    one = args.models_dir is None or args.model is not None  # --model alone: today's one-model server
    model = model_path(args) if one else None
    if model is not None and args.model == BUNDLED_EMBED_NAME and not model_id:
        model_id = BUNDLED_EMBED_TITLE
    models = folder_models(args.models_dir, args.mmproj, own_settings(settings)) if args.models_dir is not None else ()
    main_id = model_id or (model.name.removesuffix(".gguf") if model is not None else "")
    embed_models = companion_models(args.embed_model, {main_id})
    aliases += stem_aliases(models, aliases)
    ids = {main_id} | {m.id for m in (*models, *embed_models)}
    if BUNDLED_EMBED_NAME not in ids | {a for a, _ in aliases} and BUNDLED_EMBED_TITLE in ids:
        aliases += ((BUNDLED_EMBED_NAME, BUNDLED_EMBED_TITLE),)  # the name it was asked for answers too
    options = ServeOptions(
        model=model, settings=settings, host=args.host, port=args.port,
        parallel=args.parallel, api_key=args.api_key, cors_origins=tuple(args.cors_origin),
        allowed_hosts=tuple(args.allowed_host), max_queued=max(0, args.max_queue),
        mmproj=projector_path(args) if model is not None else None, allow_remote_images=args.allow_remote_images,
        model_id=model_id, speculation=speculation, models=tuple(models),
        limits=pool_limits(args, settings, one_model=args.models_dir is None), aliases=aliases, pinned=tuple(args.pin),
        default_model=args.default_model, ollama_port=args.ollama_port,
        max_stored_responses=args.max_stored_responses, embed_models=tuple(embed_models),
        docs_index=docs_index_in(args.docs_dir.expanduser()) if args.docs_dir is not None else None,
        prompt_cache=args.cache_ram, prompt_disk=args.cache_disk,
    )
    for m in models:
        if m.unusable:
            print(f"prefill: {terminal_line(m.id)} cannot be served: {terminal_line(m.unusable)}", file=sys.stderr,
                  flush=True)

    def ready(server: RunningServer) -> None:
        scheduler = None
        if server.model_id and not models and server.kind == "chat":
            scheduler = server.scheduler
            assert options.model is not None
            print(f"prefill: serving {terminal_line(options.model.name)} at {server.url}/v1 "
                  f"({args.parallel} slots of {scheduler.n_ctx_seq} tokens)", flush=True)
        elif server.model_id and not models:
            print(f"prefill: serving {terminal_line(server.model_id)} at {server.url}/v1 ({server.kind} model: "
                  f"{'POST /v1/rerank' if server.kind == 'rerank' else 'POST /v1/embeddings'})", flush=True)
        else:
            print(f"prefill: serving {len(server.pool.ids())} models at {server.url}/v1 "
                  f"({args.parallel} slots of {settings.n_ctx} tokens each; {limits_words(options)})", flush=True)
        if server.ollama_url:
            print(f"prefill: Ollama's API at {server.ollama_url} too (OLLAMA_HOST={server.ollama_url})", flush=True)
        for m in embed_models:
            print(f"prefill: {terminal_line(m.id)} ({m.kind} model) answers "
                  f"{'POST /v1/rerank' if m.kind == 'rerank' else 'POST /v1/embeddings'}", file=sys.stderr, flush=True)
        note = getattr(scheduler, "speculation_note", "")
        if note:
            print(f"prefill: --speculative {terminal_line(args.speculative)} is off: {terminal_line(note)}",
                  file=sys.stderr, flush=True)
        elif draft is not None:
            print(f"prefill: draft model: {terminal_line(draft.name)}: greedy requests check its drafts",
                  file=sys.stderr, flush=True)

    _print_access_log()
    try:
        serve(options, ready)
    except PoolError as e:  # an alias or pin that names no model, pinned models past the limits
        raise CliError(str(e)) from None
    return 0


def cache_ram(text: str) -> int:
    """--cache-ram's or --cache-disk's MiB as bytes (0: off)."""
    try:
        mib = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of MiB") from None
    if not 0 <= mib <= 1 << 30:
        raise argparse.ArgumentTypeError("give 0 (no prompt cache) or a number of MiB")
    return mib << 20


def companion_models(given: list[str], taken: set[str]) -> list[ModelEntry]:
    """--embed-model's files as entries: each an embedding or reranking model (its header says which; a
    chat model is refused in words), named by its file without .gguf (bundled-embed: all-MiniLM-L6-v2)."""
    from prefill.engine.embed.bundled import BUNDLED_EMBED_NAME, BUNDLED_EMBED_TITLE
    from prefill.pool.catalogue import checked, entry_for_file

    out: list[ModelEntry] = []
    for name in given:
        if name == BUNDLED_EMBED_NAME:
            entry = entry_for_file(bundled_embed_file(), BUNDLED_EMBED_TITLE)
        else:
            path = Path(name).expanduser()
            if not path.is_file():
                raise CliError(f"--embed-model {terminal_line(name)}: no such model file")
            entry = entry_for_file(path)
        entry = checked([entry])[0]
        if entry.unusable:
            raise CliError(f"--embed-model {terminal_line(name)}: {terminal_line(entry.unusable)}")
        if entry.kind == "chat":
            raise CliError(f"--embed-model {terminal_line(name)} is a chat model (its header names no pooling); "
                           "give it as --model, and an embedding or reranking GGUF here")
        if entry.id in taken or any(entry.id == m.id for m in out):
            raise CliError(f"--embed-model {terminal_line(name)}: another model is already called "
                           f"{terminal_line(entry.id)}")
        out.append(entry)
    return out


def split_aliases(given: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """--alias values: a NAME alone is --model's id; NAME=ID another name for the model ID."""
    model_id, pairs = "", []
    for a in given:
        name, eq, target = a.partition("=")
        if not eq:
            model_id = a
        elif not name or not target:
            raise CliError(f"--alias {terminal_line(a)}: say NAME=ID")
        else:
            pairs.append((name, target))
    return model_id, tuple(pairs)


def stem_aliases(models: Sequence[ModelEntry], given: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Each file's name without .gguf as another name for it: the id `--model FILE` serves it by, so a
    client written against the one-model server finds it in the folder too (unless a name is taken)."""
    taken = {m.id for m in models} | {name for name, _ in given}
    out = []
    for m in models:
        stem = m.id.removesuffix(".gguf")
        if stem != m.id and stem not in taken:
            taken.add(stem)
            out.append((stem, m.id))
    return tuple(out)


def folder_models(folder: str, mmproj: str, own: OwnSettings | None = None) -> list[ModelEntry]:
    """The models `prefill ls --models-dir FOLDER` lists, named as it names them; unreadable ones unusable
    (the pool's `checked` then reads each header at the guard, and tells embedding models apart). `own`:
    a file's own load settings (the window's per-model ones), None for the server's."""
    from prefill.hub.library import ModelLibrary
    from prefill.hub.paths import default_models_dir
    from prefill.pool.catalogue import ModelEntry

    path = Path(folder).expanduser() if folder else default_models_dir()
    if folder and not path.is_dir():
        raise CliError(f"--models-dir {terminal_line(folder)}: no such folder")
    return [ModelEntry(m.name, m.path, m.size, None if mmproj == "none" else m.projector,
                       settings=own(m.path) if own is not None else None, unusable=m.error or "")
            for m in ModelLibrary(path).models()]


def pool_limits(args: argparse.Namespace, settings: LoadSettings, one_model: bool = False) -> PoolLimits:
    """--memory-budget, --max-models and --ttl as the pool takes them. `one_model` (--model alone): no
    budget unless one is given, so the one model loads as it always has (llama.cpp is its judge)."""
    from prefill.engine.llama.runtime import supports_gpu_offload
    from prefill.pool.memory import default_budget
    from prefill.pool.pool import PoolLimits

    given = memory_limits(args)
    budget = given.budget
    if budget is None:
        budget = 0 if one_model else default_budget(settings.n_gpu_layers != "none" and supports_gpu_offload())
    return PoolLimits(budget, given.max_models, given.ttl_s)


def limits_words(options: ServeOptions) -> str:
    lim = options.limits
    words = [f"memory budget {format_bytes(lim.budget)}" if lim.budget else "no memory budget"]
    if lim.max_models:
        words.append(f"at most {lim.max_models} loaded")
    words.append("idle models stay" if lim.ttl_s is None else f"idle models unloaded after {lim.ttl_s:g} s")
    return ", ".join(words)


def _print_access_log() -> None:
    """One line per request on stderr (server/access_log.py: no bodies, no keys, the path escaped)."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("prefill: %(message)s"))
    access = logging.getLogger("prefill.access")
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False


def projector_path(args: argparse.Namespace) -> Path | None:
    """--mmproj's file, else the mmproj*.gguf beside the model (said on stderr, so the person knows which)."""
    path, how = chosen_projector(args.mmproj, model_path(args))
    if path is not None:
        print(f"prefill: projector: {terminal_line(path.name)}{how}: image_url parts are read", file=sys.stderr,
              flush=True)
    return path


def read_key_file(path: Path) -> str:
    """The key on the file's first line; a file others can read is used, with a warning."""
    try:
        key = path.read_text("utf-8").splitlines()[0].strip() if path.stat().st_size <= 4096 else ""
    except (OSError, UnicodeDecodeError, IndexError) as e:
        raise CliError(f"--api-key-file {path}: cannot read a key from it ({e.__class__.__name__})") from None
    if not key:
        raise CliError(f"--api-key-file {path}: its first line holds no key (or the file is over 4 KiB)")
    if path.stat().st_mode & 0o077:
        print(f"prefill: {path} can be read by other users of this machine; chmod 600 it", file=sys.stderr)
    return key
