"""The next prompt's parts (session/prompt_parts.py) and the documents' draft (ChatDocuments.draft): the
parts add up to the prompt as the turn sends it, each changes when its part is added, the documents are
counted as the turn would put them in (whole under the system prompt, or the passages found before the
question) without changing how the chat reads them, and a prompt that no policy can fit says whether the
tools' schemas are what leaves no room. A scripted counter stands in for the model's tokenizer."""

from __future__ import annotations

from pathlib import Path

from prefill.documents.library import DocumentLibrary
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import OverflowSettings, SamplingSettings
from prefill.session.conversation import Conversation
from prefill.session.documents import ChatDocuments
from prefill.session.prompt_parts import DocumentsDraft, PromptParts, count_parts
from tests.documents.embedders import HashEmbedder, count_words
from tests.scripted_backend import ScriptedBackend, prompt_tokens, tokens

WEATHER = Tool("weather", "The weather in a city, today and tomorrow",
               '{"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}}')


def count(request: ChatRequest) -> int:
    """The scripted model's count, with each tool's schema read as words (as a template writes it in)."""
    return len(prompt_tokens(request.messages)) + sum(
        len(tokens(f"{t.name} {t.description} {t.parameters}")) for t in request.offered_tools)


def _adds_up(p: PromptParts) -> None:
    assert p.system + p.tools + p.documents + p.conversation == p.total
    assert min(p.system, p.tools, p.documents, p.conversation) >= 0


def test_the_parts_add_up_and_each_grows_when_its_part_is_added() -> None:
    question = Message("user", "Will it rain in Oslo tomorrow?")
    chat = [Message("user", "Hello there."), Message("assistant", "Hello! How can I help?")]
    conv = Conversation("", [])
    for m in chat:
        conv.add(m)
    bare = count_parts(conv, question, count, 4096)
    assert bare is not None
    _adds_up(bare)
    assert (bare.system, bare.tools, bare.documents) == (0, 0, 0) and bare.conversation == bare.total
    assert bare.total == count(conv.request(question))

    conv.system = "You answer in one short sentence."
    with_system = count_parts(conv, question, count, 4096)
    assert with_system is not None
    _adds_up(with_system)
    assert with_system.system == len(tokens(conv.system))  # its words (the system message's mark is the template's)
    assert with_system.conversation == bare.conversation + 1  # the template's mark for a system message

    conv.tools = (WEATHER,)
    with_tools = count_parts(conv, question, count, 4096)
    assert with_tools is not None
    _adds_up(with_tools)
    assert with_tools.tools == count(ChatRequest((question,), tools=(WEATHER,))) - count(ChatRequest((question,)))
    assert with_tools.total == count(conv.request(question))  # the prompt as the turn sends it
    assert (with_tools.system, with_tools.conversation) == (with_system.system, with_system.conversation)

    block = "Use these sources.\n\n[1] owls.md\nThe barn owl hunts mice at night."
    whole = count_parts(conv, question, count, 4096, DocumentsDraft("whole", system=block, budget=900))
    assert whole is not None
    _adds_up(whole)
    assert whole.documents == len(tokens(block)) and whole.documents_mode == "whole"
    assert whole.system == with_tools.system and whole.tools == with_tools.tools

    passages = count_parts(conv, question, count, 4096, DocumentsDraft("retrieved", context=block, budget=900))
    assert passages is not None
    _adds_up(passages)
    assert passages.documents == len(tokens(block + "\n\n")) and passages.documents_mode == "retrieved"


def test_a_backend_that_does_not_count_gives_no_parts() -> None:
    assert count_parts(Conversation("Hi."), Message("user", "x"), lambda _r: None, 4096) is None


def test_past_the_context_the_parts_say_whether_the_tools_leave_no_room() -> None:
    big = Tool("search", "Search " + "the web and more " * 60, '{"type": "object", "properties": {}}')
    overflow = OverflowSettings(policy="rolling_window", reserve=16)
    conv = Conversation("Be brief.", sampling=SamplingSettings(max_tokens=16), overflow=overflow, tools=(big,))
    for i in range(3):
        conv.add(Message("user", f"Question {i} " + "word " * 20))
        conv.add(Message("assistant", "Answer " + "word " * 20))
    question = Message("user", "And now?")
    alone = count(ChatRequest((Message("system", "Be brief."), question)))
    tools = count(ChatRequest((question,), tools=(big,))) - count(ChatRequest((question,)))
    # the tools' schemas alone leave no room, though everything else would fit even with every turn kept
    n_ctx = alone + tools + 16 - 1
    p = count_parts(conv, question, count, n_ctx)
    assert p is not None and not p.fits and not p.fits_at_all and p.tools_push_over
    assert p.floor == alone + tools and p.floor_without_tools == alone
    # room for the question and the tools, not for the earlier turns: the policy makes it fit
    p = count_parts(conv, question, count, alone + tools + 16 + 10)
    assert p is not None and not p.fits and p.fits_at_all and not p.tools_push_over
    # it fits: nothing more is counted
    p = count_parts(conv, question, count, 100_000)
    assert p is not None and p.fits and p.floor is None


def _documents(tmp_path: Path, long: bool) -> tuple[Conversation, ChatDocuments, HashEmbedder]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "owls.md").write_text("# Owls\n\nThe barn owl hunts mice at night over open fields.\n")
    if long:
        (folder / "almanac.md").write_text("# Almanac\n\n" + "\n\n".join(
            f"Paragraph {i} is about weather, rivers and the price of bread in town {i}." for i in range(300)))
    lib = DocumentLibrary(tmp_path / "index.sqlite3")
    embedder = HashEmbedder()

    def prepare() -> HashEmbedder:
        lib.add("chat", [folder], embedder, count_words)
        return embedder

    docs = ChatDocuments(lib, "chat", prepare, paths=[folder])
    return Conversation("Be brief.", sampling=SamplingSettings(max_tokens=64)), docs, embedder


def test_documents_that_fit_are_counted_as_the_turn_puts_them_in_whole(tmp_path: Path) -> None:
    conv, docs, embedder = _documents(tmp_path, long=False)
    conv.n_ctx = 4096
    backend = ScriptedBackend(["Mice [1]."])
    q = "What do barn owls hunt?"
    draft = docs.draft(conv, q, backend.count_tokens)
    assert draft.mode == "whole" and "barn owl hunts mice" in draft.system
    assert docs.mode is None and embedder.calls == 0  # drafting decided nothing and embedded nothing
    parts = count_parts(conv, Message("user", q), backend.count_tokens, 4096, draft)
    assert parts is not None and parts.documents > 0
    sent = docs.ask(conv, q, backend.count_tokens)
    assert parts.total == backend.count_tokens(sent.request)  # exactly the prompt the turn sends
    # once in whole, the next prompt carries them too
    again = docs.draft(conv, "And at noon?", backend.count_tokens)
    assert again.mode == "whole" and again.system == draft.system


def test_retrieved_documents_are_counted_as_the_passages_found_for_the_question(tmp_path: Path) -> None:
    conv, docs, embedder = _documents(tmp_path, long=True)
    conv.n_ctx = 1024
    backend = ScriptedBackend(["Mice [1].", "Bread [1]."])
    # before any search, with no embedding model to use: the documents' most, not looked for
    early = docs.draft(conv, "What do barn owls hunt?", backend.count_tokens)
    assert early.mode == "retrieved" and not early.searched and early.budget > 0 and early.context == ""
    assert docs.mode is None
    first = docs.ask(conv, "What do barn owls hunt?", backend.count_tokens)
    for _ in conv.run(first, backend.stream, max_rounds=0):
        pass
    q = "What is the price of bread in town 7?"
    draft = docs.draft(conv, q, backend.count_tokens)
    assert draft.mode == "retrieved" and draft.searched and "town 7" in draft.context
    parts = count_parts(conv, Message("user", q), backend.count_tokens, 1024, draft)
    assert parts is not None and 0 < parts.documents <= draft.budget + 2
    sent = docs.ask(conv, q, backend.count_tokens)
    assert parts.total == backend.count_tokens(sent.request)
