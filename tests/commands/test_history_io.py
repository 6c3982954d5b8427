"""`prefill export` and `prefill import` on real history files: round trip, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefill.cli import main
from prefill.store import HistoryStore
from tests.hub.gguf_factory import write_tiny_gguf

WEBUI_EXPORT = Path(__file__).parent.parent / "store" / "data" / "llamacpp_webui_export.json"


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation(model="m.gguf")
        store.add_message(conv.id, "user", "Name a bird.")
        answer = store.begin_answer(conv.id)
        store.finish_answer(
            answer, "A wren.", "stop", {"completion_tokens": 3}, "Small birds first."
        )
        store.create_conversation(title="Second")
    return path


def test_export_then_import_round_trips(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "all.json"
    assert (
        main(["export", "--all", "--format", "json", "-o", str(out), "--history", str(history)])
        == 0
    )
    assert capsys.readouterr().err == f"exported 2 conversations to {out}\n"
    other = tmp_path / "other.sqlite3"
    assert main(["import", str(out), "--history", str(other)]) == 0
    assert (
        capsys.readouterr().out == "imported 2 conversations (2 messages) from a Prefill export\n"
    )
    assert main(["import", str(out), "--history", str(other)]) == 0
    assert (
        "imported 0 conversations (0 messages) from a Prefill export; 2 conversations already here"
        in (capsys.readouterr().out)
    )
    assert main(["export", "--format", "json", "--history", str(other)]) == 0
    again = json.loads(capsys.readouterr().out)
    first = json.loads(out.read_text(encoding="utf-8"))
    assert [c["messages"] for c in again["conversations"]] == [
        c["messages"] for c in first["conversations"]
    ]
    assert again["conversations"][0]["messages"][1]["reasoning"] == "Small birds first."


def test_export_one_conversation_as_markdown(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--conversation", "1", "--format", "md", "--history", str(history)]) == 0
    text = capsys.readouterr().out
    assert (
        text.startswith("# Name a bird.\n")
        and "> Small birds first." in text
        and "Second" not in text
    )


def test_llamacpp_webui_export_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "h.sqlite3"
    assert main(["import", str(WEBUI_EXPORT), "--history", str(target)]) == 0
    assert capsys.readouterr().out == (
        "imported 2 conversations (4 messages) from a llama.cpp web UI export;"
        " 1 message of other branches or tool calls left out\n"
    )


def test_failures_are_one_line_and_exit_1(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"conv": {"id": "x"}, "messages": []}', encoding="utf-8")
    assert main(["import", str(bad), "--history", str(history)]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f'prefill: cannot import {bad}: [0].conv: "lastModified" is missing; nothing was imported\n'
    )
    assert (
        main(["export", "--conversation", "99", "--format", "json", "--history", str(history)]) == 1
    )
    assert capsys.readouterr().err == "prefill: no conversation with id 99\n"
    for wrong in (["--format", "pdf"], ["--all", "--conversation", "1", "--format", "md"], []):
        with pytest.raises(SystemExit) as info:
            main(["export", *wrong, "--history", str(history)])
        assert info.value.code == 2
        assert capsys.readouterr().err.startswith("prefill: ")


def test_import_of_a_gguf_still_adds_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = write_tiny_gguf(tmp_path / "tiny.bin")  # no .gguf suffix: the magic bytes decide
    history = tmp_path / "h.sqlite3"
    models = tmp_path / "models"
    assert main(["import", str(model), "--models-dir", str(models), "--history", str(history)]) == 0
    assert list(models.rglob("*")) and not history.exists()
