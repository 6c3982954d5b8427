"""Documents in a chat, without Qt: whole when they fit, retrieved when they do not (LM Studio's rule).

`ChatDocuments` holds what a chat was given (files and folders, or a named collection) and asks each
question its way in (`ask`, in place of `Conversation.ask`):

- **Whole.** Its budget is a fraction (`fraction`, half by default) of the context left free: the context
  minus what the chat already takes (the question included, counted by the backend's token counter) and
  the room kept for the answer. When every document fits it, each goes in whole as one numbered source,
  under the system prompt, so the chat keeps them and the next turn's prompt starts with them (the
  prefix cache keeps them); later questions read them there, nothing is searched.
- **Retrieved.** Otherwise each question retrieves passages (fused search), as many of the best as fit the
  budget, and the model reads them as numbered sources before the question in that turn only.

Either way the model is told how to cite (documents/sources.py's `CITATION_RULE`), and the answer's
`Turn.sources` are exactly the sources its marks point at (`cited`): a mark that points at no source
given is none. What retrieval did (`Retrieval`: passages, their tokens, embedding and search time) is
reported apart from the prefill, as `last`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prefill.documents.errors import DocumentError
from prefill.documents.indexer import Embedder, gather
from prefill.documents.library import DocumentLibrary
from prefill.documents.readers import ReadLimits, read_document
from prefill.documents.sources import NumberedSource, cited, number_passages, sources_block
from prefill.engine.message import ImagePart, Message
from prefill.engine.request import ChatRequest
from prefill.session.conversation import Conversation
from prefill.session.prompt_parts import DocumentsDraft
from prefill.session.turn import Source, Turn

CountRequest = Callable[[ChatRequest], int | None]
Mode = Literal["whole", "retrieved"]
DEFAULT_FRACTION = 0.5
SEARCH_POOL = 20  # passages asked of the search; as many of them as fit the budget go in
UNKNOWN_CONTEXT_BUDGET = 2048  # tokens for sources where the context is not known (a remote engine)
# A file's bytes per token, at most, for the quick test before reading: past this many bytes a budget, the
# documents cannot fit (a PDF's text is a small part of its bytes, so this errs on the side of reading).
_BYTES_PER_TOKEN = 16


@dataclass(frozen=True)
class DocumentSource(Source):
    """A source of an answer from a document: `Source` with its file, page and search score.

    Attributes:
        n: Its number, as the answer cites it ([n]).
        file: The file's path.
        page: Its PDF page (1-based); None for a format without pages, or a whole document.
        score: The search's score (larger is better within one search); 1.0 for a whole document.
    """

    n: int = 0
    file: str = ""
    page: int | None = None
    score: float = 0.0

    @classmethod
    def of(cls, s: NumberedSource) -> DocumentSource:
        return cls(s.title, s.location, s.quote, s.n, s.file, s.page, s.score)

    def as_dict(self) -> dict[str, object]:
        """As `prefill chat --json` and `prefill docs search --json` print it."""
        return {"n": self.n, "file": self.file, "page": self.page, "score": round(self.score, 6), "text": self.quote}


@dataclass(frozen=True)
class Retrieval:
    """What the documents did for one question, apart from the prefill.

    Attributes:
        mode: "whole" (the documents are in the chat) or "retrieved" (passages found for this question).
        documents: Documents in whole ("whole"); 0 when retrieved.
        passages: Passages given ("retrieved"); 0 when whole.
        tokens: Tokens the sources take in the prompt (rule and labels included).
        budget: The tokens they were allowed.
        embed_ms, search_ms: The question's embedding and the search (0 when whole).
        skipped: Files that could not be read, each said in words.
    """

    mode: Mode
    documents: int
    passages: int
    tokens: int
    budget: int
    embed_ms: float
    search_ms: float
    skipped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "documents": self.documents, "passages": self.passages, "tokens": self.tokens,
                "budget": self.budget, "embed_ms": round(self.embed_ms, 3), "search_ms": round(self.search_ms, 3),
                "skipped": list(self.skipped)}


class ChatDocuments:
    """The documents attached to one chat, and how each question reads them.

    Args:
        library: The index the documents are (or will be) in.
        collection: The collection searched when they do not fit whole.
        prepare: Called once, before the first search: indexes what needs indexing (a rerun skips files
            unchanged) and gives the embedding model the collection was indexed with.
        paths: The files and folders attached; none: the collection's files as indexed.
        fraction: The share of the free context the sources may take.
        limits: What a reader refuses (as the indexer does).
    """

    def __init__(self, library: DocumentLibrary, collection: str, prepare: Callable[[], Embedder], *,
                 paths: Sequence[Path] = (), fraction: float = DEFAULT_FRACTION, limits: ReadLimits = ReadLimits()):
        if not 0 < fraction <= 1:
            raise ValueError("the documents' share of the free context is between 0 and 1")
        self.library = library
        self.collection = collection
        self.paths = tuple(paths)
        self.fraction = fraction
        self.limits = limits
        self._prepare = prepare
        self._embedder: Embedder | None = None
        self._whole: list[NumberedSource] | None = None  # set once the documents went in whole
        self._whole_block = ""
        self._too_big = False
        self._offered: list[NumberedSource] = []
        self._draft_whole: list[NumberedSource] | None = None  # the files read whole for `draft`
        self.last: Retrieval | None = None

    @property
    def mode(self) -> Mode | None:
        """How the documents are read: None until the first question decides."""
        return "whole" if self._whole is not None else "retrieved" if self._too_big else None

    @property
    def offered(self) -> tuple[NumberedSource, ...]:
        """The sources the last question was given (its answer may cite only these)."""
        return tuple(self._offered)

    def attach(self, conversation: Conversation) -> None:
        """Have the conversation's answers cite these documents' sources."""
        conversation.cite = self.cite

    def cite(self, answer: str) -> tuple[Source, ...]:
        """The sources `answer`'s marks point at, among those its question was given."""
        return tuple(DocumentSource.of(s) for s in cited(answer, self._offered))

    def ask(self, conversation: Conversation, text: str, count: CountRequest,
            images: Sequence[ImagePart] = ()) -> Turn:
        """Ask `text` in `conversation` with the documents: whole (under the system prompt) where they fit
        the budget, else with the passages retrieved for it. `count` is the backend's token counter
        (None where it cannot count: the documents are then retrieved within a fixed budget)."""
        self.attach(conversation)
        counter = _text_counter(count)
        if self._whole is not None:
            self._keep_whole(conversation)
            self._offered = list(self._whole)
            assert self.last is not None
            self.last = Retrieval("whole", len(self._whole), 0, self.last.tokens, self.last.budget, 0.0, 0.0)
            return conversation.ask(text, images)
        budget = self._budget(conversation, Message("user", text, images=tuple(images)), count)
        if not self._too_big:
            whole, skipped = self._read_whole(budget)
            if whole is not None:
                block = sources_block(whole)
                tokens = counter(block)
                if tokens <= budget:
                    self._whole, self._whole_block, self._offered = whole, block, list(whole)
                    self._keep_whole(conversation)
                    self.last = Retrieval("whole", len(whole), 0, tokens, budget, 0.0, 0.0, skipped)
                    return conversation.ask(text, images)
            self._too_big = True
        if self._embedder is None:
            self._embedder = self._prepare()
        passages = self.library.search(self.collection, text, self._embedder, k=SEARCH_POOL)
        embed_ms, search_ms = self.library.last_times
        self._offered = number_passages(passages, counter, budget)
        block = sources_block(self._offered)
        self.last = Retrieval("retrieved", 0, len(self._offered), counter(block) if block else 0, budget,
                              embed_ms, search_ms)
        return conversation.ask(text, images, context=block)

    def draft(self, conversation: Conversation, text: str, count: CountRequest,
              search: Embedder | None = None) -> DocumentsDraft:
        """What the documents would add to the prompt if `text` were asked next, changing nothing: the
        whole block where they went (or would go) in whole, else the passages found for `text` with
        `search` (the embedding model, where it may be used now: `searched` is False without it).
        Files read whole are kept for the next draft (never re-read as the person types)."""
        counter = _text_counter(count)
        if self._whole is not None:
            return DocumentsDraft("whole", system=self._whole_block, budget=self.last.budget if self.last else 0)
        budget = self._budget(conversation, Message("user", text), count)
        if not self._too_big:
            if self._draft_whole is None:
                self._draft_whole, _skipped = self._read_whole(budget)
            if self._draft_whole is not None:
                block = sources_block(self._draft_whole)
                if counter(block) <= budget:
                    return DocumentsDraft("whole", system=block, budget=budget)
        embedder = self._embedder or search
        if embedder is None or not text.strip():
            return DocumentsDraft("retrieved", budget=budget, searched=False)
        passages = self.library.search(self.collection, text, embedder, k=SEARCH_POOL)
        return DocumentsDraft("retrieved", context=sources_block(number_passages(passages, counter, budget)),
                              budget=budget)

    def _keep_whole(self, conversation: Conversation) -> None:
        """The whole documents under the system prompt (again, where /system replaced it)."""
        if not conversation.system.endswith(self._whole_block):
            conversation.system = (conversation.system + "\n\n" + self._whole_block).strip()

    def _budget(self, conversation: Conversation, question: Message, count: CountRequest) -> int:
        n_ctx = conversation.n_ctx
        taken = count(conversation.request(question)) if n_ctx > 0 else None
        if taken is None:
            return UNKNOWN_CONTEXT_BUDGET
        free = n_ctx - taken - conversation.overflow.reserve_for(conversation.sampling.max_tokens, n_ctx)
        return max(0, int(free * self.fraction))

    def _files(self) -> list[Path]:
        if self.paths:
            return gather(self.paths)
        return [Path(f.path) for f in self.library.files(self.collection) if f.state == "indexed"]

    def _read_whole(self, budget: int) -> tuple[list[NumberedSource] | None, tuple[str, ...]]:
        """Every document read whole, numbered; None when they are plainly past `budget` (by their bytes)
        or none could be read. Files that cannot be read are left out and said (the second value)."""
        files = self._files()
        if not files or sum(_size(f) for f in files) > budget * _BYTES_PER_TOKEN:
            return None, ()
        out: list[NumberedSource] = []
        skipped: list[str] = []
        for f in files:
            try:
                doc = read_document(f, self.limits)
            except DocumentError as e:
                skipped.append(str(e))
                continue
            if doc.text.strip():
                out.append(NumberedSource(len(out) + 1, f.name, str(f), doc.text, str(f), None, 0, len(doc.text), 1.0))
        return (out or None), tuple(skipped)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _text_counter(count: CountRequest) -> Callable[[str], int]:
    """Tokens of a text as the chat model reads it in a user message: the backend's count of a message with
    it less one without; where the backend cannot count, a guess of four characters a token."""
    empty = count(ChatRequest((Message("user", ""),)))

    def counter(text: str) -> int:
        n = count(ChatRequest((Message("user", text),))) if empty is not None else None
        return len(text) // 4 + 1 if n is None or empty is None else max(0, n - empty)
    return counter
