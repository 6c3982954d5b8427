"""The window's chats' documents without Qt (session/document_chats.py): what a chat reads, kept with it and
read back checked; a question asked through them as the terminal asks it (whole, else retrieved); a search
that waits for its collection's index job, and stops with the answer's Stop. A scripted backend counts the
tokens; a hashed bag-of-words embedder stands in for the embedding model."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from prefill.documents.library import DocumentLibrary
from prefill.engine.message import Message
from prefill.engine.settings import SamplingSettings
from prefill.session.conversation import Conversation, Said
from prefill.session.document_chats import (
    ChatDocs,
    DocumentChats,
    DocumentsUnavailable,
    IndexJobs,
    SharedEmbedder,
)
from tests.documents.embedders import HashEmbedder, count_words
from tests.scripted_backend import ScriptedBackend


class WordEmbedder(HashEmbedder):
    """The hashed embedder with the token counter the indexer sizes passages by."""

    def count_tokens(self, text: str) -> int:
        return count_words(text)


def _chat(question: str, n_ctx: int) -> Conversation:
    conv = Conversation("Be brief.", sampling=SamplingSettings(max_tokens=32), n_ctx=n_ctx)
    conv.items.append(Said(Message("user", question)))
    return conv


def _folder(tmp_path: Path, n: int, words: int) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(n):
        body = " ".join(f"topic{i} fact{i}_{j}" for j in range(words))
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nThe keeper of note {i} is Ada{i}. {body}\n")
    return folder


def test_chat_docs_round_trip_and_refuse_what_the_history_should_not_hold(tmp_path: Path) -> None:
    own = ChatDocs.own([tmp_path / "a.md", str(tmp_path / "a.md"), tmp_path / "b"])
    assert own.collection.startswith("chat-") and own.paths == (str(tmp_path / "a.md"), str(tmp_path / "b"))
    assert ChatDocs.stored({"documents": own.as_dict()}) == own
    assert own.without(str(tmp_path / "a.md")).paths == (str(tmp_path / "b"),)
    assert ChatDocs.stored({"documents": ChatDocs.named("papers").as_dict()}) == ChatDocs("papers", (), True)
    for bad in ({}, {"documents": "x"}, {"documents": {"collection": 3, "paths": ["/a"]}},
                {"documents": {"collection": "chat-1", "paths": []}}, {"documents": {"collection": " "}}):
        assert ChatDocs.stored(bad) is None
    odd = ChatDocs.stored({"documents": {"collection": "c", "paths": ["/a", 7, ""], "shared": "yes"}})
    assert odd == ChatDocs("c", ("/a",), False)


def test_documents_that_fit_go_in_whole_under_the_system_prompt(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 2, 3)
    embedder = WordEmbedder()
    chats = DocumentChats(tmp_path / "documents.sqlite3", SharedEmbedder(lambda: embedder), IndexJobs())
    backend = ScriptedBackend()
    turn, retrieved = chats.ask(ChatDocs.own([folder]), _chat("Who keeps note 1?", 4096), backend.count_tokens)
    assert retrieved.retrieval is not None and retrieved.retrieval.mode == "whole"
    assert retrieved.retrieval.documents == 2 and embedder.calls == 0
    system = turn.request.messages[0].content
    assert "Ada0" in system and "Ada1" in system
    assert turn.request.messages[-1] == Message("user", "Who keeps note 1?")
    assert [s.file for s in retrieved.cite("Ada1 does [2].")] == [str(folder / "note1.md")]  # type: ignore[attr-defined]
    assert retrieved.cite("No marks here, or a stray [9].") == ()


def test_documents_too_long_are_searched_after_their_index_job(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 6, 200)
    # 1000 places, not 128: at 128 "topic1", a hundred times in note 1, shares a place with a word of the
    # question, and notes 1 and 5 come out ten times nearer in meaning than note 4 (0.42 against 0.06)
    embedder = WordEmbedder(1000, "test-hash-1000")
    jobs = IndexJobs()
    index = tmp_path / "documents.sqlite3"
    chats = DocumentChats(index, SharedEmbedder(lambda: embedder), jobs)
    docs = ChatDocs.own([folder])
    jobs.began(docs.collection)  # the window's index job, running on another thread
    done = threading.Event()
    result: list[object] = []

    def ask() -> None:
        try:
            result.append(chats.ask(docs, _chat("Who is the keeper of note 4?", 1024),
                                    ScriptedBackend().count_tokens))
        finally:
            done.set()

    asker = threading.Thread(target=ask)
    asker.start()
    assert not done.wait(0.3)  # waiting for the job, not searching a half-made index
    job = DocumentLibrary(index)
    job.add(docs.collection, [folder], embedder, count_words)
    job.close()
    jobs.ended(docs.collection)
    assert done.wait(10)
    asker.join()
    turn, retrieved = result[0]  # type: ignore[misc]
    r = retrieved.retrieval
    assert r is not None and r.mode == "retrieved" and r.passages > 0 and r.tokens <= r.budget
    assert r.embed_ms >= 0 and r.search_ms > 0
    question = turn.request.messages[-1].content
    assert question.endswith("Who is the keeper of note 4?") and "Ada4" in question  # the passages before it
    assert [m.role for m in turn.request.messages] == ["system", "user"]
    assert "Ada4" not in turn.request.messages[0].content  # retrieved for this turn only


def test_a_search_waiting_for_its_index_job_stops_with_the_answer(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 6, 200)
    jobs = IndexJobs()
    chats = DocumentChats(tmp_path / "documents.sqlite3", SharedEmbedder(WordEmbedder), jobs)
    docs = ChatDocs.own([folder])
    jobs.began(docs.collection)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DocumentsUnavailable, match="Stopped while the documents were still being indexed"):
        chats.ask(docs, _chat("Who keeps note 4?", 1024), ScriptedBackend().count_tokens, cancel)


def test_a_collection_removed_since_is_said_in_words(tmp_path: Path) -> None:
    chats = DocumentChats(tmp_path / "documents.sqlite3", SharedEmbedder(WordEmbedder), IndexJobs())
    with pytest.raises(DocumentsUnavailable, match="papers"):
        chats.ask(ChatDocs.named("papers"), _chat("Anything?", 1024), ScriptedBackend().count_tokens)


def test_index_jobs_wait_until_the_last_job_of_a_collection_ends() -> None:
    jobs = IndexJobs()
    jobs.began("c")
    jobs.began("c")
    jobs.ended("c")
    assert jobs.running("c") and not jobs.running("d")
    cancel = threading.Event()
    threading.Timer(0.05, lambda: jobs.ended("c")).start()
    assert jobs.wait("c", cancel) and not jobs.running("c")


def test_the_shared_embedder_loads_once_and_refuses_after_close() -> None:
    made: list[WordEmbedder] = []

    def load() -> WordEmbedder:
        made.append(WordEmbedder())
        return made[-1]

    shared = SharedEmbedder(load)
    assert not shared.loaded
    assert shared.n_embd == 128 and shared.embed(["a b"]) and shared.count_tokens("a b c") == 3
    assert len(made) == 1
    shared.close()
    with pytest.raises(DocumentsUnavailable):
        shared.embed(["a"])


def test_while_the_embedding_model_is_switched_every_collection_waits() -> None:
    jobs = IndexJobs()
    jobs.began_all()
    assert jobs.running("c") and jobs.running("d")
    cancel = threading.Event()
    cancel.set()
    assert not jobs.wait("c", cancel)
    jobs.began("c")  # the collections to re-index are known: those go on waiting, the others not
    jobs.ended_all()
    assert jobs.running("c") and not jobs.running("d")


def test_a_question_asked_after_its_collection_was_indexed_waits_for_a_later_job(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 6, 200)
    embedder = WordEmbedder()
    jobs = IndexJobs()
    chats = DocumentChats(tmp_path / "documents.sqlite3", SharedEmbedder(lambda: embedder), jobs)
    docs = ChatDocs.own([folder])
    count = ScriptedBackend().count_tokens
    chats.ask(docs, _chat("Who is the keeper of note 4?", 1024), count)  # indexed, searched
    jobs.began(docs.collection)  # a watched folder's refresh, or a re-index with another model
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DocumentsUnavailable, match="Stopped while the documents were still being indexed"):
        chats.ask(docs, _chat("And note 2?", 1024), count, cancel)


def test_the_shared_embedder_switches_to_another_model_known_by_its_file_name() -> None:
    first, second = WordEmbedder(model_id="a.gguf"), WordEmbedder(n_embd=64, model_id="b.gguf")
    shared = SharedEmbedder(lambda: first)
    assert shared.expected_id == "a.gguf" and shared.loaded  # no id given: loaded to ask it
    shared.switch(lambda: second, "b.gguf")
    assert not shared.loaded and shared.expected_id == "b.gguf" and not shared.loaded  # known without a load
    assert shared.model_id == "b.gguf" and shared.n_embd == 64
