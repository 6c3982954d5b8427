"""Documents in a chat (session/documents.py): whole when they fit the budget, retrieved when they do not,
and an answer's sources exactly the ones its marks point at. A scripted backend answers; a hashed
bag-of-words embedder stands in for the embedding model."""

from __future__ import annotations

from pathlib import Path

from prefill.documents.library import DocumentLibrary
from prefill.documents.sources import CITATION_RULE
from prefill.engine.settings import SamplingSettings
from prefill.session.conversation import Conversation
from prefill.session.documents import ChatDocuments, DocumentSource
from tests.documents.embedders import HashEmbedder, count_words
from tests.scripted_backend import ScriptedBackend


def _files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "owls.md").write_text("# Owls\n\nThe barn owl hunts mice at night over open fields.\n")
    (folder / "tea.txt").write_text("Green tea is steamed or pan-fired soon after picking to stop oxidation.\n")
    return folder


def _chat(tmp_path: Path, folder: Path, n_ctx: int) -> tuple[Conversation, ChatDocuments, HashEmbedder]:
    lib = DocumentLibrary(tmp_path / "index.sqlite3")
    embedder = HashEmbedder()

    def prepare() -> HashEmbedder:
        lib.add("chat", [folder], embedder, count_words)
        return embedder

    docs = ChatDocuments(lib, "chat", prepare, paths=[folder])
    conv = Conversation("Be brief.", sampling=SamplingSettings(max_tokens=64), n_ctx=n_ctx)
    return conv, docs, embedder


def _run(conv: Conversation, backend: ScriptedBackend, turn: object) -> None:
    for _ in conv.run(turn, backend.stream, max_rounds=0):  # type: ignore[arg-type]
        pass


def test_documents_that_fit_go_in_whole_and_stay_for_the_next_turn(tmp_path: Path) -> None:
    folder = _files(tmp_path / "docs")
    conv, docs, embedder = _chat(tmp_path, folder, n_ctx=4096)
    backend = ScriptedBackend(["Barn owls hunt mice [1].", "Tea is steamed [2] [7]."])
    turn = docs.ask(conv, "What do barn owls hunt?", backend.count_tokens)
    assert docs.mode == "whole" and docs.last is not None and docs.last.mode == "whole"
    assert docs.last.documents == 2 and docs.last.passages == 0 and 0 < docs.last.tokens <= docs.last.budget
    system = turn.request.messages[0]
    assert system.role == "system" and CITATION_RULE in system.content
    assert "[1] owls.md" in system.content and "barn owl hunts mice" in system.content
    assert "[2] tea.txt" in system.content
    _run(conv, backend, turn)
    assert [s.title for s in turn.sources] == ["owls.md"]
    assert conv.items[-1].sources == turn.sources  # kept with the answer
    assert embedder.calls == 0  # nothing indexed, nothing embedded: the documents were read whole

    second = docs.ask(conv, "And tea?", backend.count_tokens)
    # the next prompt starts as the first did: the documents stay where the prefix cache keeps them
    assert second.request.messages[0] == system
    assert second.request.messages[-1].content == "And tea?"
    _run(conv, backend, second)
    assert [s.title for s in second.sources] == ["tea.txt"]  # [7] points at no source: none


def test_documents_too_big_for_the_budget_are_retrieved_per_question(tmp_path: Path) -> None:
    folder = _files(tmp_path / "docs")
    filler = "\n\n".join(f"Paragraph {i} is about weather, rivers and the price of bread in town {i}."
                         for i in range(300))
    (folder / "long.md").write_text("# Almanac\n\n" + filler + "\n")
    conv, docs, embedder = _chat(tmp_path, folder, n_ctx=1024)
    backend = ScriptedBackend(["They hunt mice [1], and more [99]."])
    turn = docs.ask(conv, "What do barn owls hunt at night?", backend.count_tokens)
    assert docs.mode == "retrieved" and docs.last is not None
    r = docs.last
    assert r.mode == "retrieved" and r.passages >= 1 and r.tokens <= r.budget and r.search_ms >= 0
    assert embedder.calls > 0  # indexed, then the question embedded
    asked = turn.request.messages[-1]
    assert asked.content.startswith(CITATION_RULE) and asked.content.endswith("What do barn owls hunt at night?")
    assert "[1] owls.md" in asked.content  # the best passage first
    assert turn.request.messages[0].content == "Be brief."  # nothing whole under the system prompt
    _run(conv, backend, turn)
    assert conv.items[-2].message.content == "What do barn owls hunt at night?"  # the chat keeps the question alone
    (src,) = turn.sources  # [99] points at no passage given
    assert isinstance(src, DocumentSource) and src.file.endswith("owls.md") and "mice" in src.quote
    assert set(src.as_dict()) == {"n", "file", "page", "score", "text"} and src.n == 1


def test_an_unreadable_file_is_said_and_the_others_go_in(tmp_path: Path) -> None:
    folder = _files(tmp_path / "docs")
    (folder / "junk.txt").write_bytes(b"\x00\x01\x02binary\x00" * 50)
    conv, docs, _ = _chat(tmp_path, folder, n_ctx=4096)
    backend = ScriptedBackend(["Mice [1]."])
    turn = docs.ask(conv, "What do owls hunt?", backend.count_tokens)
    assert docs.last is not None and docs.last.documents == 2
    assert len(docs.last.skipped) == 1 and docs.last.skipped[0].startswith("junk.txt: ")
    _run(conv, backend, turn)
    assert [s.title for s in turn.sources] == ["owls.md"]


def test_a_chat_without_documents_keeps_its_sources_as_set(tmp_path: Path) -> None:
    conv = Conversation()
    backend = ScriptedBackend(["Plain [1]."])
    turn = conv.ask("Hi")
    _run(conv, backend, turn)
    assert turn.sources == () and conv.cite is None


def test_the_passages_put_in_never_pass_the_budget_rule_and_labels_included(tmp_path: Path) -> None:
    folder = _files(tmp_path / "docs")
    filler = "\n\n".join(f"Paragraph {i} is about owls, rivers and the price of bread in town {i}."
                         for i in range(300))
    (folder / "long.md").write_text("# Almanac\n\n" + filler + "\n")
    backend = ScriptedBackend([])
    tight = 0
    for n_ctx in range(420, 1400, 60):
        conv, docs, _ = _chat(tmp_path / f"ctx{n_ctx}", folder, n_ctx=n_ctx)
        docs.ask(conv, "What do barn owls hunt at night?", backend.count_tokens)
        r = docs.last
        assert r is not None and r.mode == "retrieved"
        assert r.tokens <= r.budget, (n_ctx, r)
        tight += r.passages > 0 and r.budget - r.tokens < 40  # budgets the passages filled
    assert tight >= 3
