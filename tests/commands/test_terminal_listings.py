"""Listings of outside names reach the terminal through the one filter: a hub's file and repository
names, a library file's name, and the errors that quote them. A name holding NUL, ESC, BEL or a
right-to-left override is printed with each one visible."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.cli import main
from tests.hub.conftest import add_repo, payload
from tests.hub.fake_hub import FakeHub

OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
EVIL = "tiny\u202eflog\x00\x1b]0;x\x07-Q4_K_M.gguf"  # RLO: "tiny…" would read backwards from here
SHOWN = "tiny\\u202eflog\\x00\\x1b]0;x\\x07-Q4_K_M.gguf"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no saved login leaks in
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeHub() as h:
        monkeypatch.setenv("HF_ENDPOINT", h.url)
        yield h


def test_files_shows_a_hub_name_with_its_controls_visible(hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    add_repo(hub, "org/Evil-GGUF", {EVIL: payload(1000), "mmproj-\u2066\x9b2J-f16.gguf": payload(500),
                                    "plain-Q8_0.gguf": payload(1000)})
    assert main(["files", "org/Evil-GGUF"]) == 0
    out, err = capsys.readouterr()
    assert not OBEYED.search(out + err), repr(out + err)
    assert f"  {SHOWN}" in out and "mmproj-\\u2066\\x9b2J-f16.gguf" in out and "plain-Q8_0.gguf" in out


def test_errors_quoting_hub_names_show_them_escaped(hub: FakeHub, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    add_repo(hub, "org/Evil-GGUF", {EVIL: payload(1000), "plain-Q8_0.gguf": payload(1000)})
    assert main(["get", "org/Evil-GGUF", "--models-dir", str(tmp_path)]) == 1  # two models: which one?
    out, err = capsys.readouterr()
    assert "choose one with --quant or --file" in err and SHOWN in err
    assert not OBEYED.search(out + err), repr(err)


def test_search_and_ls_show_names_escaped(hub: FakeHub, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    add_repo(hub, "org/Tiny\u202e\x1b[2J-GGUF", {"a-Q4_0.gguf": payload(100)})
    assert main(["search", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "org/Tiny\\u202e\\x1b[2J-GGUF" in out and not OBEYED.search(out)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "x\x1b]0;owned\x07.gguf").write_bytes(b"GGUF" + b"\0" * 60)  # a file name can hold ESC
    assert main(["ls", "--models-dir", str(tmp_path / "lib")]) == 0
    out = capsys.readouterr().out
    assert "x\\x1b]0;owned\\x07.gguf" in out and not OBEYED.search(out), repr(out)


def test_export_to_stdout_carries_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from prefill.store import HistoryStore

    path = tmp_path / "history.sqlite3"
    said = "A wren\x1b]0;x\x07.\u202e\x9b2J \x7f\u2028"
    with HistoryStore(path) as store:
        conv = store.create_conversation(model="m.gguf", title="Birds\u202e\x1b[8m")
        store.add_message(conv.id, "user", "Name a bird.")
        store.finish_answer(store.begin_answer(conv.id), said, "stop", {}, "")
    assert main(["export", "--format", "json", "--history", str(path)]) == 0
    out = capsys.readouterr().out
    assert not OBEYED.search(out) and "\u2028" not in out, repr(out)
    (exported,) = json.loads(out)["conversations"]  # the same JSON to a reader
    assert exported["title"] == "Birds\u202e\x1b[8m" and exported["messages"][1]["content"] == said
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)  # Markdown on a terminal: through the filter
    assert main(["export", "--format", "md", "--history", str(path)]) == 0
    out = capsys.readouterr().out
    assert not OBEYED.search(out) and "Birds\\u202e\\x1b[8m" in out and "\\x1b]0;x\\x07.\\u202e\\x9b2J" in out
