"""`prefill docs`: collections of documents to chat with: add (index), ls, rm, search.

The index is `documents.sqlite3` beside the history. `add` indexes with a progress line on stderr; Ctrl-C
stops it after the file in hand, and the same command run again goes on where it stopped (unchanged files
are skipped by their content hash). A file that cannot be read is said, in words, and the others index.
File names, passages and errors come from outside: they are printed through `terminal_text`.
`prefill chat --docs` indexes through the same helpers (`open_library`, `load_embedder`, `index_paths`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prefill.commands.chat_repl import StopOnCtrlC
from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_json, terminal_line, terminal_text
from prefill.documents.errors import CollectionNotFound, IndexUnavailable
from prefill.documents.indexer import IndexProgress, IndexReport
from prefill.documents.library import DocumentLibrary
from prefill.engine.units import format_bytes
from prefill.session.documents import DocumentSource
from prefill.store.errors import SettingsError
from prefill.store.settings_file import SettingsFile

if TYPE_CHECKING:
    from prefill.documents.embedding import ModelEmbedder

DEFAULT_EMBED_MODEL = "bundled-embed"


def add_embed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embed-model", metavar="PATH", default=None,
                   help="the embedding model's GGUF that indexes and searches the documents (default: the "
                        f"window's setting, Settings > Documents; without one {DEFAULT_EMBED_MODEL}, the bundled "
                        "all-MiniLM-L6-v2)")


def embed_model_spec(given: str | None, settings_file: SettingsFile | None = None) -> str:
    """--embed-model, or where it is not given the window's `documents.embedding_model`, or the bundled
    model. An unreadable settings file is said on stderr and the bundled model used."""
    if given is not None:
        return given
    try:
        chosen = (settings_file or SettingsFile()).load().documents.embedding_model
    except SettingsError as e:
        print(f"prefill: the window's embedding model setting is not used: {terminal_line(str(e))}", file=sys.stderr)
        chosen = ""
    return chosen or DEFAULT_EMBED_MODEL


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("docs", help="document collections to chat with: add, ls, rm, search",
                       description="Collections of documents (PDF, DOCX, HTML, Markdown, text, code, CSV) indexed "
                                   "once for every chat that names them, in documents.sqlite3 beside the history.")
    docs = p.add_subparsers(dest="docs_command", metavar="{add,ls,rm,search}", required=True,
                            parser_class=type(p))
    add = docs.add_parser("add", help="index files and folders into a collection (made when missing)",
                          description="Index files and folders into the collection NAME. Ctrl-C stops after the "
                                      "file in hand; the same command again goes on where it stopped. The "
                                      "collection keeps its paths: without PATH, they are looked at again (changed "
                                      "and new files indexed, files gone removed).")
    add.add_argument("name", metavar="NAME", help="the collection")
    add.add_argument("paths", metavar="PATH", nargs="*",
                     help="a file or a folder (its files of known kinds); none: the collection's own paths again")
    add.add_argument("--force", action="store_true", help="read every file again, changed or not")
    add_embed_option(add)
    add.set_defaults(handler=run_add)
    ls = docs.add_parser("ls", help="list the collections", description="List the collections: files, "
                                                                         "passages, size and embedding model.")
    ls.add_argument("--json", action="store_true", help="print one JSON object per collection")
    ls.set_defaults(handler=run_ls)
    rm = docs.add_parser("rm", help="remove a collection", description="Remove a collection from the index "
                                                                       "(the files stay where they are).")
    rm.add_argument("name", metavar="NAME", help="the collection")
    rm.set_defaults(handler=run_rm)
    search = docs.add_parser("search", help="the passages of a collection that best answer a query",
                             description="The passages of the collection NAME that best answer QUERY, found by "
                                         "meaning and by words, fused.")
    search.add_argument("name", metavar="NAME", help="the collection")
    search.add_argument("query", metavar="QUERY", help="the question")
    search.add_argument("-k", "--top", type=int, default=5, metavar="N", help="how many passages (default 5)")
    search.add_argument("--json", action="store_true", help="print one JSON object: the results and the times")
    add_embed_option(search)
    search.set_defaults(handler=run_search)


def index_path() -> Path:
    from prefill.documents.index import default_index_path
    from prefill.store.history import default_history_path

    return default_index_path(default_history_path())


def open_library() -> DocumentLibrary:
    try:
        return DocumentLibrary(index_path())
    except IndexUnavailable as e:
        raise CliError(str(e)) from e


def load_embedder(spec: str | None) -> ModelEmbedder:
    """The embedding model --embed-model names, loaded (`close_embedder` closes it)."""
    from prefill.commands.options import bundled_embed_file
    from prefill.documents.embedding import ModelEmbedder
    from prefill.engine.embed.model import EmbeddingModel

    spec = embed_model_spec(spec)
    path = bundled_embed_file() if spec == DEFAULT_EMBED_MODEL else Path(spec).expanduser()
    return ModelEmbedder(EmbeddingModel.load(path))


def close_embedder(embedder: ModelEmbedder) -> None:
    close = getattr(getattr(embedder, "model", None), "close", None)
    if callable(close):
        close()


class ProgressLine:
    """The indexing progress on stderr: one line rewritten in place on a terminal, a line per file elsewhere."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self._done = -1
        self._shown = False

    def __call__(self, p: IndexProgress) -> None:
        if not self.tty and p.files_done == self._done:
            return
        self._done = p.files_done
        left = f" · {p.eta_s:.0f} s left" if p.eta_s is not None and p.files_done < p.files_total else ""
        line = (f"indexing {p.files_done}/{p.files_total} files · {p.pages} pages · {p.chunks} passages"
                f"{left} · {terminal_line(Path(p.current).name)}")
        if self.tty:
            print("\r\x1b[K" + line, end="", file=self.out, flush=True)
            self._shown = True
        else:
            print(line, file=self.out, flush=True)

    def end(self) -> None:
        if self._shown:
            print(file=self.out, flush=True)
            self._shown = False


def index_paths(library: DocumentLibrary, name: str, paths: Sequence[Path], embedder: ModelEmbedder,
                force: bool = False, out: TextIO | None = None) -> IndexReport:
    """Index `paths` into `name` with the progress line (no paths: the collection's own again, its files
    gone removed); Ctrl-C stops after the file in hand. What it did is said on stderr: each file that could
    not be read on a line of its own."""
    out = out or sys.stderr
    missing = [p for p in paths if not p.expanduser().exists()]
    if missing:
        raise CliError(f"no file or folder at {terminal_line(str(missing[0]))}")
    line = ProgressLine(out)
    with StopOnCtrlC() as stop:
        try:
            if paths:
                report = library.add(name, list(paths), embedder, embedder.count_tokens, progress=line,
                                     cancel=stop.cancel, force=force)
            else:
                report = library.refresh(name, embedder, embedder.count_tokens, progress=line, cancel=stop.cancel)
        finally:
            line.end()
    # a file that failed before and is unchanged is skipped: it is said again, as not readable
    failed = {f.path: f.problem for f in library.files(name) if f.state == "failed"}
    bad = [o for o in report.outcomes if o.state in ("failed", "skipped") and o.path in failed]
    for o in bad:
        print(f"  not indexed: {terminal_line(failed[o.path])}", file=out)
    new = [o for o in report.outcomes if o.state == "indexed"]
    print(terminal_line(
        f"{name}: {len(new)} indexed ({sum(o.pages for o in new)} pages, {sum(o.chunks for o in new)} passages), "
        f"{report.count('skipped') - sum(o.state == 'skipped' for o in bad)} unchanged, {len(bad)} not readable, "
        f"{report.count('removed')} removed · {report.elapsed_s:.1f} s"), file=out, flush=True)
    if report.cancelled:
        print("stopped: the files done are kept; run the same command again to go on", file=out, flush=True)
    return report


def _with_embedder(spec: str | None, work: Callable[[ModelEmbedder], int]) -> int:
    embedder = load_embedder(spec)
    try:
        return work(embedder)
    finally:
        close_embedder(embedder)


def run_add(args: argparse.Namespace) -> int:
    if not args.name.strip():
        raise CliError("a collection needs a name")
    library = open_library()
    try:
        if not args.paths:
            try:
                kept = library.roots(args.name)
            except CollectionNotFound as e:
                raise CliError(f"{e}; give the files or folders to make it from") from e
            if not kept:
                raise CliError(f"the collection {terminal_line(args.name)} keeps no paths to look at again (it was "
                               "made by an older Prefill): give its files or folders once")

        def work(embedder: ModelEmbedder) -> int:
            report = index_paths(library, args.name, [Path(p) for p in args.paths], embedder, args.force)
            if report.cancelled:
                return 130
            failed = {f.path for f in library.files(args.name) if f.state == "failed"}
            readable = [o for o in report.outcomes if o.state in ("indexed", "skipped") and o.path not in failed]
            return 1 if not readable and report.outcomes else 0
        return _with_embedder(args.embed_model, work)
    finally:
        library.close()


def run_ls(args: argparse.Namespace) -> int:
    library = open_library()
    try:
        rows = library.collections()
    finally:
        library.close()
    if args.json:
        for c in rows:
            print(terminal_json(json.dumps({"name": c.name, "files": c.files, "failed": c.failed, "passages": c.chunks,
                                            "bytes": c.bytes, "embed_model": c.model_id}, ensure_ascii=False)))
        return 0
    if not rows:
        print("no collections yet: prefill docs add NAME PATH… makes one", file=sys.stderr)
        return 0
    for c in rows:
        failed = f" ({c.failed} not readable)" if c.failed else ""
        fields = (c.name, f"{c.files} files{failed}", f"{c.chunks} passages", format_bytes(c.bytes), c.model_id)
        print("\t".join(terminal_line(f) for f in fields))  # each field escaped, the tabs between them kept
    return 0


def run_rm(args: argparse.Namespace) -> int:
    library = open_library()
    try:
        library.remove(args.name)
    except CollectionNotFound as e:
        raise CliError(str(e)) from e
    finally:
        library.close()
    print(f"removed {terminal_line(args.name)}", file=sys.stderr)
    return 0


def run_search(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise CliError("-k is at least 1")
    library = open_library()
    try:
        if args.name not in {c.name for c in library.collections()}:
            raise CliError(str(CollectionNotFound(args.name)))

        def work(embedder: ModelEmbedder) -> int:
            try:
                found = library.search(args.name, args.query, embedder, k=args.top)
            except ValueError as e:  # another embedding model than the collection's
                raise CliError(str(e)) from e
            embed_ms, search_ms = library.last_times
            results = [DocumentSource(Path(p.file).name, p.file, p.text, i, p.file, p.page, p.score)
                       for i, p in enumerate(found, 1)]
            if args.json:
                print(terminal_json(json.dumps({"query": args.query, "results": [r.as_dict() for r in results],
                                                "embed_ms": round(embed_ms, 3), "search_ms": round(search_ms, 3)},
                                               ensure_ascii=False)))
                return 0
            for r in results:
                page = f", page {r.page}" if r.page is not None else ""
                print(terminal_line(f"[{r.n}] {r.file}{page} · score {r.score:.4f}"))
                print(terminal_text(r.quote.strip()) + "\n")
            print(f"{len(results)} passages · embedding {embed_ms:.1f} ms · search {search_ms:.1f} ms", file=sys.stderr)
            return 0
        return _with_embedder(args.embed_model, work)
    finally:
        library.close()
