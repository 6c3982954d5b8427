"""`prefill chat`: a terminal chat, or scripted turns with one JSON line per answer.

Everything the model (or a remote server) writes reaches the terminal through `terminal_text`:
the answer, its thinking, the notes and the metrics line; the JSON lines through `terminal_json`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prefill.commands.chat_repl import (
    Compact,
    Control,
    ListModels,
    NewConversation,
    SetSystem,
    StopOnCtrlC,
    SwitchModel,
    TerminalInput,
)
from prefill.commands.chat_tools import add_tool_options, check_tool_options, open_tools, tool_calls_json
from prefill.commands.docs import add_embed_option
from prefill.commands.errors import CliError
from prefill.commands.options import (
    add_memory_options,
    add_model_options,
    add_sampling_options,
    add_speculative_option,
    chosen_projector,
    load_settings,
    memory_limits,
    model_path,
    overflow_settings,
    sampling_settings,
)
from prefill.commands.terminal_text import terminal_json, terminal_line, terminal_text
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.message import ImagePart, Message
from prefill.engine.prompt.thinking_budget import EFFORT_BUDGETS, budget_of
from prefill.engine.request import MAX_REASONING_BUDGET, REASONING_EFFORTS, TemplateOptions
from prefill.engine.speculation import Speculation
from prefill.session.compaction import CompactionError, Summary
from prefill.session.conversation import Conversation, Said
from prefill.session.documents import DocumentSource
from prefill.session.tool_loop import LoopEvent, RoundStarted, ToolCallDone, ToolCallStarted

if TYPE_CHECKING:
    from prefill.commands.chat_models import TerminalModels
    from prefill.commands.chat_tools import TerminalTools
    from prefill.documents.embedding import ModelEmbedder
    from prefill.session.capabilities import Speculates
    from prefill.session.chat_session import ChatSession
    from prefill.session.documents import ChatDocuments, Retrieval
    from prefill.session.loaded import LoadedModel

JSON_FIELDS = (
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "evaluated_tokens",
    "ttft_ms", "answer_ttft_ms", "prefill_tps", "decode_tps", "itl_p50_ms", "itl_p95_ms", "kv_used",
    "kv_total", "kv_bytes", "draft_n", "draft_n_accepted", "draft_drift", "image_tokens", "image_encode_ms",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("chat", help="chat in the terminal")
    add_model_options(p)
    add_sampling_options(p)
    add_speculative_option(p)
    add_memory_options(p, "kept in memory", ttl_note="; never the model answering")
    p.add_argument("--system", default="", help="system prompt")
    p.add_argument("--prompt", action="append", default=[], help="a user turn to run without asking (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object per turn")
    p.add_argument("--think", action=argparse.BooleanOptionalAction, default=None,
                   help="turn a reasoning model's thinking on or off (templates that take enable_thinking)")
    p.add_argument("--reasoning-effort", choices=REASONING_EFFORTS, default="",
                   help="how long the model reasons: gpt-oss's own effort; for other reasoning models a thinking "
                        f"budget of {', '.join(f'{k} {v}' for k, v in EFFORT_BUDGETS.items())} tokens")
    p.add_argument("--reasoning-budget", metavar="N", type=_budget, default=None,
                   help="the most tokens a reasoning model thinks before it answers (then its thinking is "
                        "closed and it answers); 0: no thinking; default: no limit")
    p.add_argument("--remote", metavar="URL", default="",
                   help="chat with an OpenAI-compatible server instead of a local file; --model is then its model id")
    p.add_argument("--api-key", metavar="KEY", default="",
                   help="the --remote server's key (default: the key saved with that URL, if any)")
    p.add_argument("--image", metavar="PATH", action="append", default=[],
                   help="an image for the next prompt (repeatable); needs a vision model's projector")
    p.add_argument("--mmproj", metavar="PATH", default="",
                   help="the vision model's projector (default: the mmproj*.gguf beside the model; 'none': no images)")
    p.add_argument("--docs", metavar="PATH", action="append", default=[],
                   help="a file or folder to ask about (repeatable), or the name of a collection (prefill docs add): "
                        "read whole where it fits the context, else indexed and searched for each question")
    add_embed_option(p)
    add_tool_options(p)
    p.set_defaults(handler=run)


def _budget(text: str) -> int:
    """--reasoning-budget's value: a number of tokens, 0 up."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of tokens") from None
    if not 0 <= n <= MAX_REASONING_BUDGET:
        raise argparse.ArgumentTypeError(f"a thinking budget is 0 to {MAX_REASONING_BUDGET} tokens")
    return n


def metrics_line(m: MetricsSnapshot) -> str:
    return terminal_line(
        f"[{m.finish_reason}] prompt {m.prompt_tokens} tok ({m.cached_tokens} cached, "
        f"{m.evaluated_tokens} evaluated) · TTFT {m.ttft_ms:.0f} ms · prefill {m.prefill_tps:.0f} tok/s · "
        f"decode {m.decode_tps:.1f} tok/s · ITL p50 {m.itl_p50_ms:.1f} / p95 {m.itl_p95_ms:.1f} ms · "
        f"{m.completion_tokens} tok · "
        + (f"KV {m.kv_used}/{m.kv_total} ({m.kv_bytes / 2**20:.1f} MiB)" if m.kv_known else "KV unknown")
    )


def turn_json(f: Finished, chat_format: str) -> dict[str, object]:
    m = f.metrics
    out: dict[str, object] = {
        "answer": f.text, "reasoning": f.reasoning, "finish_reason": f.reason, "chat_format": chat_format,
    }
    out.update({k: getattr(m, k) for k in JSON_FIELDS})
    if not m.kv_known:  # a remote engine: its cache is not visible
        out.update(kv_used=None, kv_total=None, kv_bytes=None)
    return out


def sources_json(conversation: Conversation) -> list[dict[str, object]]:
    """The last answer's sources, for --json: file, page, score and text each."""
    last = conversation.items[-1] if conversation.items else None
    if not isinstance(last, Said) or last.role != "assistant":
        return []
    return [s.as_dict() if isinstance(s, DocumentSource)
            else {"n": i, "file": s.location, "page": None, "score": None, "text": s.quote}
            for i, s in enumerate(last.sources, 1)]


def retrieval_line(r: Retrieval) -> str:
    """What the documents did for a question, apart from the prefill, for stderr."""
    if r.mode == "whole":
        said = f"documents: {r.documents} read whole, {r.tokens} tok of a budget of {r.budget}"
    else:
        said = (f"documents: {r.passages} passages, {r.tokens} tok of a budget of {r.budget} · embedding "
                f"{r.embed_ms:.0f} ms · search {r.search_ms:.0f} ms")
    return terminal_line(said + "".join(f"; not read: {s}" for s in r.skipped))


def device_json(info: LoadedModel) -> dict[str, object]:
    """Where the model runs, for --json: layers offloaded, the device, GPU memory llama.cpp took, whether
    flash attention is on as llama.cpp resolved it (None where unknown: a remote endpoint's, or a GPU
    load whose log gave no buffer sizes)."""
    d = info.device
    if d is None:
        return {"gpu_layers": None, "total_layers": None, "device": None, "vram_bytes": None, "flash_attn": None}
    on_gpu = d.gpu_layers > 0
    return {"gpu_layers": d.gpu_layers, "total_layers": d.total_layers, "device": d.device if on_gpu else "CPU",
            "vram_bytes": (d.vram_bytes or None) if on_gpu else 0, "flash_attn": info.flash_attn}


def _prompts(args: argparse.Namespace) -> Iterable[str | Control]:
    """The --prompt turns, else what the user types (or pipes) with its slash commands."""
    return list(args.prompt) if args.prompt else TerminalInput(args.system)


def chat_turns(
    session: ChatSession, conversation: Conversation, prompts: Iterable[str | Control], echo: bool,
    stopper: StopOnCtrlC | None = None, tools: TerminalTools | None = None, images: Sequence[ImagePart] = (),
    compactions: list[Summary] | None = None, documents: ChatDocuments | None = None,
    models: TerminalModels | None = None,
) -> Iterator[Finished]:
    """Run user turns in `conversation` (session/conversation.py: it builds each request, runs the tool
    loop and keeps the messages) on `session`'s model; yields each answer's Finished event (with
    `tools`, the last round's: `tools.last` has the turn's calls). Echoed thinking goes to stderr,
    dimmed, so stdout holds the answers alone. A NewConversation or SetSystem among the prompts starts
    over or changes the system prompt, a Compact has the model summarise the chat; with a `stopper`,
    Ctrl-C ends the answer that streams (kept as far as it got) or the tool that runs, and the chat
    goes on. `images` go with the first prompt. With the "summarise" policy, a chat whose last answer
    left it past the compaction threshold of the conversation's `n_ctx`, or whose next turn would pass
    it, is summarised before that turn; each compaction's Summary is added to `compactions`. With
    `documents`, each question is asked with them (session/documents.py), and what they did is said on
    stderr when echoing. With `models`, a SwitchModel goes on with another model (the conversation as
    it is, in that model's format) and a ListModels lists those in memory."""
    compact_next = False
    for prompt in prompts:
        if isinstance(prompt, NewConversation):
            conversation.clear()
            continue
        if isinstance(prompt, SwitchModel | ListModels):
            if models is None:
                print("(this chat has one model: /model needs a local one)", file=sys.stderr)
            elif isinstance(prompt, SwitchModel):
                models.switch(prompt.name, conversation)
            else:
                models.show()
            continue
        if isinstance(prompt, SetSystem):
            conversation.system = prompt.text
            continue
        asked = Message("user", prompt, images=tuple(images)) if isinstance(prompt, str) else None
        if asked is not None and not compact_next:  # a next turn that would not fit compacts too
            compact_next = conversation.due_before(asked, session.count_tokens)
        if isinstance(prompt, Compact) or compact_next:
            done = _compact(session, conversation, stopper, echo)
            if done is not None and compactions is not None:
                compactions.append(done)
            compact_next = False
        if asked is None:
            continue
        images = ()
        with stopper or contextlib.nullcontext():
            cancel = stopper.cancel if stopper is not None else None
            if tools is not None:
                conversation.tools = tools.tools  # the servers' tools as they are now
            if documents is not None:
                turn = documents.ask(conversation, asked.content, session.count_tokens, asked.images)
                if echo and documents.last is not None:
                    print(f"({retrieval_line(documents.last)})", file=sys.stderr, flush=True)
            else:
                turn = conversation.ask(asked.content, asked.images)
            if tools is not None:
                events = conversation.run(turn, session.stream, tools.runner(),
                                          functools.partial(tools.approve, cancel=cancel), cancel=cancel,
                                          approvals=tools.approvals, max_rounds=tools.max_rounds)
            else:
                events = conversation.run(turn, session.stream, cancel=cancel, max_rounds=0)
            _show(events, echo, tools)
        assert turn.end is not None
        compact_next = conversation.due_after(turn.end.finished)
        yield turn.end.finished


def _show(events: Iterable[LoopEvent], echo: bool, tools: TerminalTools | None) -> None:
    """Print a turn as it streams: the answer on stdout, its thinking dimmed and the notes on stderr."""
    thinking = mid_line = False
    for ev in events:
        if echo and thinking and isinstance(ev, RoundStarted | ToolCallStarted | ToolCallDone | Finished):
            thinking = False
            print("\x1b[0m", end="", file=sys.stderr, flush=True)
        if echo and isinstance(ev, Token):
            if ev.reasoning != thinking:
                thinking = ev.reasoning
                print("\x1b[2m[thinking] " if thinking else "\x1b[0m\n", end="", file=sys.stderr, flush=True)
            print(terminal_text(ev.text), end="", flush=True, file=sys.stderr if ev.reasoning else sys.stdout)
            if ev.text and not ev.reasoning:
                mid_line = not ev.text.endswith("\n")
        elif echo and isinstance(ev, PrefillDone):
            for note in (ev.overflow_note, ev.cache_note):
                if note:
                    print(f"({terminal_line(note)})", file=sys.stderr)
        elif echo and isinstance(ev, Finished) and ev.tool_calls and mid_line:
            print(flush=True)  # the calls are shown on lines of their own
            mid_line = False
        if tools is not None:
            tools.show(ev)


def _compact(session: ChatSession, conversation: Conversation, stopper: StopOnCtrlC | None,
             echo: bool) -> Summary | None:
    """Have the model summarise the chat; what it did is said on stderr (the summary itself too, dimmed,
    when the chat is echoed). None: no summary (said why), the chat goes on as it was."""
    print("(summarising the chat so far…)", file=sys.stderr, flush=True)
    with stopper or contextlib.nullcontext():
        work = conversation.compact(session.stream, session.count_tokens, stopper.cancel if stopper else None)
        try:
            while True:
                next(work)
        except StopIteration as done:
            summary: Summary = done.value
        except CompactionError as e:
            print(f"({terminal_line(str(e))})", file=sys.stderr, flush=True)
            return None
    if echo:
        print(f"\x1b[2m{terminal_text(summary.text)}\x1b[0m", file=sys.stderr)
    print(f"({terminal_line(summary.note)})", file=sys.stderr, flush=True)
    return summary


def _compacted_json(compactions: list[Summary]) -> dict[str, object] | None:
    """The compaction made before this turn, for --json (None: none); taken, so it is told once."""
    if not compactions:
        return None
    done = compactions.pop()
    compactions.clear()
    return {"summary": done.text, **done.as_dict()}


def _speculate(session: ChatSession, flag: str, most: int) -> Speculates | None:
    """Set speculative decoding as --speculative says (off, ngram, or a draft model's path, loaded
    here) where the backend speculates; it, when asked for and it applies. A refused draft model is
    one line, and the chat goes on without it."""
    from prefill.engine.errors import EngineError
    from prefill.session.backends import apply_speculation

    wanted = Speculation.from_flag(flag, most)  # checked by the parser (options.speculative_mode)
    if wanted.mode == "off":
        return None
    engine = session.backend.speculates if session.backend is not None else None
    if engine is None:
        print("prefill: --speculative applies to a local model only: it is off", file=sys.stderr)
        return None
    try:
        apply_speculation(engine, wanted)
    except EngineError as e:
        print(f"prefill: {terminal_line(str(e))}; speculative decoding is off", file=sys.stderr)
        return None
    return engine


def _images(args: argparse.Namespace) -> list[ImagePart]:
    """The --image files through the door (a refused one is one line, and nothing runs)."""
    from prefill.engine.vision.image_door import read_image_file

    return [read_image_file(Path(p).expanduser()) for p in args.image]


def _projector(session: ChatSession, args: argparse.Namespace, wanted: bool) -> None:
    """Load the projector of a local model: --mmproj's file, else the mmproj*.gguf beside the model
    (said on stderr, so the person knows which); none found is said only when images are wanted."""
    backend = session.backend
    sees, local = (backend.sees_images, backend.local) if backend is not None else (None, None)
    if sees is None or local is None or args.mmproj == "none":
        return
    path, how = chosen_projector(args.mmproj, local.path)
    if path is None:
        if wanted:
            print(f"prefill: no mmproj*.gguf beside {terminal_line(local.path.name)}: images need the model's "
                  "projector (--mmproj PATH)", file=sys.stderr)
        return
    sees.use_projector(path)
    print(f"prefill: projector: {terminal_line(path.name)}{how}", file=sys.stderr)


class _ChatDocs:
    """--docs for one chat: the library, the collection, the embedding model once a search needs it."""

    def __init__(self, args: argparse.Namespace):
        import hashlib

        from prefill.commands.docs import open_library
        from prefill.session.documents import ChatDocuments

        self.embedder: ModelEmbedder | None = None
        self._spec = args.embed_model
        self.library = open_library()
        named = {c.name for c in self.library.collections()}
        found = [Path(d).expanduser() for d in args.docs]
        if len(args.docs) == 1 and not found[0].exists() and args.docs[0] in named:
            self.collection, self.paths = args.docs[0], []
        else:
            missing = [d for d, p in zip(args.docs, found) if not p.exists()]
            if missing:
                self.library.close()
                raise CliError(f"--docs {terminal_line(missing[0])}: no such file, folder or collection "
                               "(a collection is named alone)")
            self.paths = sorted({p.resolve() for p in found})
            # one collection per set of paths: a second chat over them skips the files unchanged since
            key = hashlib.sha256("\n".join(map(str, self.paths)).encode()).hexdigest()[:12]
            self.collection = f"chat-{key}"
        self.documents = ChatDocuments(self.library, self.collection, self._prepare, paths=self.paths)

    def _prepare(self) -> ModelEmbedder:
        from prefill.commands.docs import index_paths, load_embedder

        print("(the documents do not fit the context whole: they are searched for each question)",
              file=sys.stderr, flush=True)
        self.embedder = load_embedder(self._spec)
        if self.paths:
            index_paths(self.library, self.collection, self.paths, self.embedder)
        elif self.library.changes(self.collection):  # a named collection whose folders changed: indexed again
            index_paths(self.library, self.collection, [], self.embedder)
        return self.embedder

    def close(self) -> None:
        from prefill.commands.docs import close_embedder

        if self.embedder is not None:
            close_embedder(self.embedder)
        self.library.close()


def run(args: argparse.Namespace) -> int:
    from prefill.commands.chat_models import IdleReaper, TerminalModels
    from prefill.session.backends import LocalModel, Target
    from prefill.session.chat_session import ChatSession

    check_tool_options(args)
    limits = memory_limits(args)
    images = _images(args)
    docs = _ChatDocs(args) if args.docs else None
    session = ChatSession(budget=limits.budget, max_models=limits.max_models, ttl_s=limits.ttl_s)
    reaper = IdleReaper(session)
    target: Target
    asked = ""  # the remote model asked for
    if args.remote:
        from prefill.commands.remote_chat import check_listed, keep_partial, remote_target

        target = remote_target(args)
        asked = target.model
    else:
        target = LocalModel(str(model_path(args)), load_settings(args))
    settings = load_settings(args)
    try:
        info = session.load(target)
    except BaseException:
        if docs is not None:
            docs.close()
        raise
    assert info is not None
    tools = None
    try:
        _projector(session, args, bool(images))
        engine = _speculate(session, args.speculative, args.draft_max)
        endpoint = session.backend.endpoint if session.backend is not None else None
        if endpoint is not None:
            check_listed(endpoint, asked)
        if info.backend_warning:
            print(f"prefill: {terminal_line(info.backend_warning)}", file=sys.stderr)
        if not args.remote and not info.format_from_model:
            print(f"prefill: chat format: {terminal_line(info.chat_format_label)}", file=sys.stderr)
        overflow = overflow_settings(args)
        options = TemplateOptions(args.think, args.reasoning_effort, args.reasoning_budget)
        budget = budget_of(options, info.takes_reasoning_effort) if info.reasons else None
        interactive = not args.prompt and sys.stdin.isatty()
        tools = open_tools(args)
        compactions: list[Summary] = []
        conversation = Conversation(args.system, sampling=sampling_settings(args), overflow=overflow,
                                    options=options, n_ctx=info.n_ctx)
        documents = docs.documents if docs is not None else None
        models = TerminalModels(session, settings, info)
        turns = chat_turns(session, conversation, reaper.between(_prompts(args)), not args.json,
                           StopOnCtrlC() if interactive else None, tools, images, compactions, documents, models)
        if limits.ttl_s is not None and not args.remote:
            reaper.start()
        if args.remote:
            turns = keep_partial(turns, args.json)
        told = ""
        for f in turns:
            if engine is not None and engine.speculation_note and engine.speculation_note != told:
                told = engine.speculation_note
                print(f"prefill: {terminal_line(told)}", file=sys.stderr)
            if args.json:
                line = turn_json(f, models.info.chat_format)
                line.update(device_json(models.info), reasoning_budget=budget, compacted=_compacted_json(compactions),
                            sources=sources_json(conversation),
                            retrieval=documents.last.as_dict() if documents and documents.last else None)
                if tools is not None:
                    line.update(tool_calls_json(tools.last))
                print(terminal_json(json.dumps(line, ensure_ascii=False)), flush=True)
            else:
                print()
                for src in sources_json(conversation):
                    page = f", page {src['page']}" if src["page"] is not None else ""
                    print(terminal_line(f"  [{src['n']}] {src['file']}{page}"), file=sys.stderr)
                print(metrics_line(f.metrics), file=sys.stderr, flush=True)
    finally:
        reaper.close()
        if tools is not None:
            tools.close()
        if docs is not None:
            docs.close()
        session.close()
    return 0
