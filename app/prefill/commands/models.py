"""`prefill search|files|get|ls|rm|import`: search the hub, list a repository, download, list and remove local models.

Every name printed (a repository's, a file's, a header's architecture) passes `terminal_line`: the
hub and the files are outside text. The token comes from HF_TOKEN (or a saved `hf auth login`); there is deliberately
no `--token` flag, which would leave it in the shell history and the process list.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path

from prefill.commands import history_io
from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_line as shown
from prefill.engine.gguf.header import GGUFError, GGUFHeader
from prefill.engine.settings import KV_TYPES
from prefill.engine.units import format_bytes, format_params
from prefill.hub.client import SORT_KEYS, HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import HubError
from prefill.hub.library import ModelLibrary
from prefill.hub.paths import default_models_dir
from prefill.hub.progress import DownloadProgress
from prefill.hub.quants import ModelFiles, projectors_of


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmds = sub  # top level: prefill search|files|get|ls|rm|import

    s = _command(cmds, "search", "search the hub for GGUF models", _search)
    s.add_argument("query", help="words in the repository name")
    s.add_argument("--sort", choices=SORT_KEYS, default="downloads", help="order of the results (default: downloads)")
    s.add_argument("--limit", type=int, default=20, help="most repositories listed (default 20)")

    f = _command(cmds, "files", "list a repository's GGUF models by quantisation", _files)
    f.add_argument("repo", help="owner/name")
    f.add_argument("--fit", action="store_true", help="estimate the fit here (reads each header, a few MiB)")
    f.add_argument("--ctx", type=int, default=4096, help="context length for --fit")
    f.add_argument("--kv-type", choices=KV_TYPES, default="f16", help="KV cache type for --fit")

    g = _command(cmds, "get", "download a model (resumes an earlier attempt)", _get)
    g.add_argument("repo", help="owner/name")
    which = g.add_mutually_exclusive_group()
    which.add_argument("--quant", help="quantisation, e.g. Q4_K_M")
    which.add_argument("--file", help="file name in the repository")
    g.add_argument("--mmproj-file", metavar="NAME", default="",
                   help="a vision model's projector to fetch beside it (default: the mmproj of the model's "
                        "precision, f16 first; 'none': the model only)")

    ls = _command(cmds, "ls", "list local models", _ls)
    ls.add_argument("--partial", action="store_true",
                    help="list unfinished downloads untouched for a week instead, with their sizes")

    r = _command(cmds, "rm", "delete a model from the library", _rm)
    r.add_argument("name", nargs="?", help="as `prefill ls` (or `ls --partial`) shows it, or its file name")
    r.add_argument("--partial", action="store_true",
                   help="remove an unfinished download `ls --partial` lists (all of them without a name)")
    r.add_argument("--yes", action="store_true", help="do not ask")

    i = _command(cmds, "import", "add a .gguf to the library, or chats (a JSON export) to the history", _import)
    i.add_argument("path", type=Path, help="a .gguf model file, or chats exported as JSON (Prefill or llama.cpp)")
    i.add_argument("--symlink", action="store_true", help="link to the file instead of copying it")
    history_io.add_history_option(i)


def _command(cmds: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str,
             handler: object) -> argparse.ArgumentParser:
    c = cmds.add_parser(name, help=help)
    c.add_argument("--models-dir", type=Path, default=None, help="models folder (default: the user data folder)")
    c.set_defaults(handler=_guarded(handler))
    return c


def _guarded(handler: object) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(handler(args) or 0)  # type: ignore[operator]
        except (HubError, GGUFError) as e:
            raise CliError(str(e)) from None

    return run


def _models_dir(args: argparse.Namespace) -> Path:
    return (args.models_dir or default_models_dir()).expanduser()


def _search(args: argparse.Namespace) -> int:
    hits = HubClient().search(args.query, sort=args.sort, limit=args.limit)
    for h in hits:
        when = h.last_modified.date().isoformat() if h.last_modified else "-"
        gated = "  (gated)" if h.gated else ""
        print(f"{shown(h.repo_id):<60} {h.downloads:>10,} dl {h.likes:>6,} likes  {when}{gated}")
    if not hits:
        print(f"no GGUF repositories match {shown(repr(args.query))}", file=sys.stderr)
    return 0


def _files(args: argparse.Namespace) -> int:
    from prefill.hub.quants import group_by_quant
    from prefill.hub.remote_header import fetch_header

    client = HubClient()
    listing = client.list_models(args.repo)
    memory = None
    if args.fit:
        from prefill.engine.llama.hardware import machine_memory

        memory = machine_memory()
    # Every quantisation of a repo usually shares one projector: its header is fetched once.
    header_of = functools.cache(lambda filename: fetch_header(client, args.repo, filename))
    models = [m for m in listing.models if not m.is_projector]
    for quant, group in group_by_quant(models).items():
        print(shown(quant))
        for m in group:
            parts = f" ({len(m.parts)} parts{'' if m.complete else ', INCOMPLETE'})" if len(m.parts) > 1 else ""
            fit = f"  {_fit_or_why(header_of, args, m, memory)}" if memory is not None else ""
            print(f"  {shown(m.name):<56} {format_bytes(m.size):>10}{parts}{shown(fit)}")
            if m.projector is not None:
                size = format_bytes(m.projector.size)
                print(f"    + projector {shown(m.projector.filename):<44} {size:>10}  (images)")
    projectors = projectors_of(listing.models)
    if projectors:
        print("projectors (vision: fetched with their model by `prefill get`)")
        for f in projectors:
            print(f"  {shown(f.filename):<56} {format_bytes(f.size):>10}")
    return 0


def _fit_or_why(header_of: Callable[[str], GGUFHeader], args: argparse.Namespace, m: ModelFiles,
                memory: object) -> str:
    """The fit of one listed model, or why it is unknown: one unreadable file does not end the listing."""
    try:
        return _fit(header_of, args, m, memory)
    except (GGUFError, HubError) as e:
        return f"fit unknown: {e}"


def _fit(header_of: Callable[[str], GGUFHeader], args: argparse.Namespace, m: ModelFiles, memory: object) -> str:
    from prefill.engine.llama.memory_fit import estimate_fit, with_projector

    headers = [header_of(p.filename) for p in m.parts]
    if m.projector is not None:
        projector = header_of(m.projector.filename)
        return with_projector(headers, projector, args.ctx, memory, args.kv_type).summary()  # type: ignore[arg-type]
    return estimate_fit(headers, args.ctx, memory, args.kv_type).summary()  # type: ignore[arg-type]


def _get(args: argparse.Namespace) -> int:
    client = HubClient()
    listing = client.list_models(args.repo)
    model = _with_projector(_choose(listing.models, args), listing.models, args)
    bar = _Bar(model.name) if sys.stderr.isatty() else None
    paths = download_model(client, _models_dir(args), args.repo, model, on_progress=bar)
    if bar:
        bar.end()
    print(shown(str(paths[0])))
    if model.projector is not None:
        print(f"prefill: projector {shown(paths[-1].name)} beside it (images)", file=sys.stderr)
    return 0


def _with_projector(model: ModelFiles, models: list[ModelFiles], args: argparse.Namespace) -> ModelFiles:
    """The model with the projector `--mmproj-file` names ('none': none), else the one the listing paired."""
    if not args.mmproj_file:
        return model
    if args.mmproj_file.lower() == "none":
        return model.with_projector(None)
    named = [f for f in projectors_of(models)
             if args.mmproj_file in (f.filename, f.filename.rsplit("/", 1)[-1])]
    if not named:
        names = ", ".join(f.filename for f in projectors_of(models)) or "none"
        raise CliError(f"no projector called {args.mmproj_file!r} in {args.repo} (its projectors: {names})")
    return model.with_projector(named[0])


def _choose(models: list[ModelFiles], args: argparse.Namespace) -> ModelFiles:
    if args.file:
        found = [m for m in models if args.file in (m.name, *(p.filename for p in m.parts))]
    elif args.quant:
        found = [m for m in models if m.quant == args.quant.upper() and not m.is_projector]
    else:
        found = [m for m in models if not m.is_projector]
    if len(found) == 1:
        if not found[0].complete:
            raise CliError(f"{found[0].name}: some of its parts are missing from the repository")
        return found[0]
    if not found:
        raise CliError(f"no model matches in {args.repo}; see `prefill files {args.repo}`")
    names = ", ".join(f"{m.name} ({m.quant})" for m in found)
    raise CliError(f"choose one with --quant or --file: {names}")


def _ls(args: argparse.Namespace) -> int:
    if args.partial:
        return _ls_partial(ModelLibrary(_models_dir(args)))
    for m in ModelLibrary(_models_dir(args)).models():
        if m.error:
            print(shown(f"{m.name:<60} {format_bytes(m.size):>10}  [{m.source}] unreadable: {m.error}"))
            continue
        tmpl = "chat template" if m.has_chat_template else "no chat template"
        params = format_params(m.n_params)
        print(shown(
            f"{m.name:<60} {format_bytes(m.size):>10}  {m.architecture} {params} {m.quantization} "
            f"ctx {m.context_length}  {tmpl}  [{m.source}]"
        ))
    return 0


def _ls_partial(library: ModelLibrary) -> int:
    found = library.abandoned()
    for a in found:
        print(f"{shown(a.name):<60} {format_bytes(a.size):>10} of {format_bytes(a.total):>10}  "
              f"last written {a.last_written.date().isoformat()}")
    if found:
        total = sum(a.size for a in found)
        print(f"{len(found)} unfinished, {format_bytes(total)} in all; remove with `prefill rm --partial [NAME]`",
              file=sys.stderr)
    else:
        print(f"no unfinished download untouched for a week in {shown(str(library.models_dir))}", file=sys.stderr)
    return 0


def _rm_partial(args: argparse.Namespace) -> int:
    library = ModelLibrary(_models_dir(args))
    found = library.abandoned()
    chosen = [a for a in found if args.name in (None, a.name, a.path.name)]
    if not chosen:
        what = f"called {args.name!r}" if args.name else "untouched for a week"
        raise CliError(f"no unfinished download {what} (see `prefill ls --partial`)")
    if not args.yes and sys.stdin.isatty():
        size = format_bytes(sum(a.size for a in chosen))
        what = shown(chosen[0].name) if len(chosen) == 1 else f"{len(chosen)} unfinished downloads"
        if input(f"delete {what} ({size})? [y/N] ").strip().lower() not in ("y", "yes"):
            return 1
    for a in chosen:
        library.remove_abandoned(a.path.name)
        print(f"deleted {shown(a.name)} ({format_bytes(a.size)})")
    return 0


def _rm(args: argparse.Namespace) -> int:
    if args.partial:
        return _rm_partial(args)
    if not args.name:
        raise CliError("name the model to delete (see `prefill ls`)")
    library = ModelLibrary(_models_dir(args))
    model = library.find(args.name)
    if not args.yes and sys.stdin.isatty():
        answer = input(f"delete {shown(model.name)} ({format_bytes(model.size)})? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return 1
    library.delete(model.name)
    print(f"deleted {shown(model.name)}")
    return 0


def _import(args: argparse.Namespace) -> int:
    if not history_io.is_model_file(args.path):
        return history_io.run_import(args)
    model = ModelLibrary(_models_dir(args)).import_file(args.path, "symlink" if args.symlink else "copy")
    print(shown(model.name))
    return 0


class _Bar:
    """One `\\r` line on stderr: percent, bytes, speed, time left."""

    def __init__(self, name: str):
        self.name = shown(name)
        self._last = 0.0

    def __call__(self, p: DownloadProgress) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and p.stage == "downloading":
            return
        self._last = now
        pct = f"{100 * p.fraction:5.1f}%" if p.fraction is not None else "   ?  "
        eta = f"{int(p.eta) // 60}:{int(p.eta) % 60:02d} left" if p.eta is not None else ""
        size = f"{format_bytes(p.done)}/{format_bytes(p.total)}"
        line = f"{self.name[:40]} {pct} {size} {format_bytes(int(p.speed))}/s {eta} {p.stage}"
        sys.stderr.write("\r" + line.ljust(100)[:100])
        sys.stderr.flush()

    def end(self) -> None:
        sys.stderr.write("\n")
