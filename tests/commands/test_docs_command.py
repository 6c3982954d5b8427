"""`prefill docs` and `prefill chat --docs` without a model: a hashed bag-of-words embedder stands in for
the embedding model, a scripted backend for the chat model. The bundled model's runs are in
test_docs_model.py."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
from pathlib import Path

import pytest

from prefill.cli import main
from prefill.commands import docs as docs_command
from prefill.commands.chat import chat_turns, retrieval_line, sources_json
from prefill.documents.indexer import IndexProgress
from prefill.documents.library import DocumentLibrary
from prefill.engine.settings import SamplingSettings
from prefill.session.chat_session import ChatSession
from prefill.session.conversation import Conversation
from prefill.session.documents import ChatDocuments
from tests.documents.embedders import HashEmbedder, count_words
from tests.scripted_backend import ScriptedBackend


class WordEmbedder(HashEmbedder):
    """The test embedder with the token counter `index_paths` takes from a ModelEmbedder."""

    def count_tokens(self, text: str) -> int:
        return count_words(text)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "owls.md").write_text("# Owls\n\nThe barn owl hunts mice at night over open fields.\n")
    (folder / "tea.txt").write_text("Green tea is steamed or pan-fired soon after picking.\n")
    (folder / "junk.txt").write_bytes(b"\x00\x01binary\x00" * 64)
    return folder


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The history (and the index beside it) in the test's folder; the test embedder for --embed-model."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(docs_command, "load_embedder", lambda spec: WordEmbedder())
    return tmp_path / "data"


def test_add_ls_search_rm(data_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    assert main(["docs", "add", "nature", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "indexing 3/3 files" in err
    assert "not indexed: junk.txt: " in err  # the bad file said in words, the others indexed
    assert "nature: 2 indexed" in err and "1 not readable" in err

    assert main(["docs", "ls", "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["name"], row["files"], row["failed"], row["embed_model"]) == ("nature", 3, 1, "test-hash-128")
    assert main(["docs", "ls"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.split("\t")[:3] == ["nature", "3 files (1 not readable)", "2 passages"]  # real tabs, not "\\t"

    assert main(["docs", "search", "nature", "what do barn owls hunt", "--json", "-k", "2"]) == 0
    found = json.loads(capsys.readouterr().out)
    first = found["results"][0]
    assert set(first) == {"n", "file", "page", "score", "text"}
    assert first["file"].endswith("owls.md") and "mice" in first["text"] and first["page"] is None
    assert found["embed_ms"] >= 0 and found["search_ms"] >= 0

    assert main(["docs", "search", "nature", "barn owls"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ") and "owls.md" in out

    assert main(["docs", "rm", "nature"]) == 0
    assert main(["docs", "rm", "nature"]) == 1
    assert "no document collection named 'nature'" in capsys.readouterr().err


def test_ctrl_c_stops_indexing_and_a_rerun_goes_on(data_home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    line = docs_command.ProgressLine.__call__

    def ctrl_c_after_two_files(self: docs_command.ProgressLine, p: IndexProgress) -> None:
        line(self, p)
        if p.files_done == 2:
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends; the handler sets the stop

    monkeypatch.setattr(docs_command.ProgressLine, "__call__", ctrl_c_after_two_files)
    assert main(["docs", "add", "nature", str(folder)]) == 130
    err = capsys.readouterr().err
    assert "run the same command again to go on" in err and "nature: 1 indexed" in err
    monkeypatch.setattr(docs_command.ProgressLine, "__call__", line)
    assert main(["docs", "add", "nature", str(folder)]) == 0
    err = capsys.readouterr().err
    # the files done before the stop are not read again; the unreadable one is said again
    assert "nature: 1 indexed" in err and "1 unchanged" in err and "1 not readable" in err
    assert "not indexed: junk.txt: " in err
    lib = DocumentLibrary(docs_command.index_path())
    try:
        assert sorted(Path(f.path).name for f in lib.files("nature")) == ["junk.txt", "owls.md", "tea.txt"]
    finally:
        lib.close()


def test_a_missing_path_is_refused_in_words(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "add", "x", "/no/such/place"]) == 1
    assert "no file or folder at /no/such/place" in capsys.readouterr().err


def test_add_without_paths_looks_at_the_collections_own_folders_again(data_home: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    assert main(["docs", "add", "nature", str(folder)]) == 0
    (folder / "tea.txt").write_text("Black tea is withered, rolled and oxidised before drying.\n")
    (folder / "owls.md").unlink()
    capsys.readouterr()
    assert main(["docs", "add", "nature"]) == 0
    err = capsys.readouterr().err
    assert "nature: 1 indexed" in err and "1 removed" in err
    assert main(["docs", "search", "nature", "barn owl mice", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["results"]
    assert found and not any("owl" in r["text"] for r in found) and any("oxidised" in r["text"] for r in found)
    assert main(["docs", "add", "other"]) == 1
    assert "no document collection named 'other'" in capsys.readouterr().err


def test_a_named_collection_whose_folder_changed_is_indexed_again_for_a_chat(data_home: Path, tmp_path: Path) -> None:
    from prefill.commands.chat import _ChatDocs

    folder = _folder(tmp_path)
    assert main(["docs", "add", "nature", str(folder)]) == 0
    (folder / "owls.md").unlink()
    docs = _ChatDocs(argparse.Namespace(docs=["nature"], embed_model="test"))
    try:
        docs._prepare()  # before the first search
        assert sorted(Path(f.path).name for f in docs.library.files("nature")) == ["junk.txt", "tea.txt"]
    finally:
        docs.close()


def test_the_progress_line_rewrites_itself_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    line = docs_command.ProgressLine(out)
    line(IndexProgress(0, 2, 0, 0, 0, 0, 0.1, None, "/a/one.md"))
    line(IndexProgress(1, 2, 0, 3, 0, 0, 0.2, 1.5, "/a/two\x1b[31m.md"))
    line.end()
    text = out.getvalue()
    assert text.count("\r\x1b[K") == 2 and "2 s left" in text and text.endswith("\n")
    assert "\x1b[31m" not in text  # a file's name is text, not commands


def test_chat_turns_with_documents_print_their_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    lib = DocumentLibrary(tmp_path / "i.sqlite3")
    documents = ChatDocuments(lib, "chat", lambda: WordEmbedder(), paths=[folder])
    model = ScriptedBackend(["Mice [1], tea [2], nothing [5]."])
    session = ChatSession()
    session.backend = model
    chat = Conversation("", sampling=SamplingSettings(max_tokens=64), n_ctx=4096)
    (finished,) = chat_turns(session, chat, ["What do owls hunt?"], True, documents=documents)
    assert finished.text.startswith("Mice")
    assert "(documents: 2 read whole" in capsys.readouterr().err
    assert "junk.txt" in retrieval_line(documents.last)  # type: ignore[arg-type]
    printed = sources_json(chat)
    assert [(s["n"], Path(str(s["file"])).name, s["page"]) for s in printed] == [(1, "owls.md", None),
                                                                                 (2, "tea.txt", None)]
    lib.close()


def test_the_terminal_takes_the_windows_embedding_model_unless_one_is_given(tmp_path: Path, capsys) -> None:
    """A collection indexed in the window with the embedding model of Settings > Documents is searched with
    that model by `prefill docs` and `prefill chat --docs` too; --embed-model still wins."""
    from dataclasses import replace

    from prefill.commands.docs import DEFAULT_EMBED_MODEL, embed_model_spec
    from prefill.store.app_settings import Settings
    from prefill.store.settings_file import SettingsFile

    file = SettingsFile(tmp_path / "settings.json")
    assert embed_model_spec(None, file) == DEFAULT_EMBED_MODEL  # no settings file: the bundled model
    chosen = str(tmp_path / "e5-small.gguf")
    settings = Settings()
    file.save(replace(settings, documents=replace(settings.documents, embedding_model=chosen)))
    assert embed_model_spec(None, file) == chosen
    assert embed_model_spec("other.gguf", file) == "other.gguf"
    locked = tmp_path / "locked"
    locked.mkdir()  # a folder where the file should be: unreadable, so said, and the bundled model used
    assert embed_model_spec(None, SettingsFile(locked)) == DEFAULT_EMBED_MODEL
    assert "embedding model setting is not used" in capsys.readouterr().err
