"""`prefill docs` and `prefill chat --docs` with the bundled models: all-MiniLM-L6-v2 indexes and searches,
SmolLM2 answers. The files are written here: Markdown, text, a two-page PDF and one unreadable file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.commands.test_chat_terminal import prefill
from tests.documents.pdf_writer import write_pdf

pytestmark = pytest.mark.model

SMALL = ["--model", "bundled", "--gpu-layers", "none", "--threads", "2", "--temperature", "0"]


def _needs_bundled_embed() -> None:
    bundled = pytest.importorskip("prefill.engine.embed.bundled")
    if bundled.bundled_embed_source() is None:
        pytest.skip("the bundled embedding model's package is not installed")


def _files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "owls.md").write_text("# Owls\n\nThe barn owl hunts mice and voles at night over open fields.\n\n"
                                    "## Nests\n\nBarn owls nest in old barns, church towers and hollow trees.\n")
    (folder / "tea.txt").write_text("Green tea is steamed or pan-fired soon after picking, which stops "
                                    "oxidation and keeps the leaves green.\n")
    write_pdf(folder / "bridge.pdf", [["The Forth Bridge opened in 1890 in Scotland."],
                                      ["The bridge is painted a colour called Forth Bridge Red."]])
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf at all\n")
    return folder


def _marks(text: str) -> set[int]:
    return {int(n) for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", text) for n in group.split(",")}


def test_docs_add_and_search_with_the_bundled_embedding_model(tmp_path: Path) -> None:
    _needs_bundled_embed()
    folder = _files(tmp_path / "docs")
    out = prefill(tmp_path, "docs", "add", "notes", str(folder))
    assert out.returncode == 0, out.stderr
    assert "not indexed: broken.pdf: " in out.stderr  # refused in words; the others indexed
    assert "notes: 3 indexed" in out.stderr and "1 not readable" in out.stderr

    again = prefill(tmp_path, "docs", "add", "notes", str(folder))
    assert "0 indexed" in again.stderr and "3 unchanged" in again.stderr  # unchanged files skipped by hash

    found = prefill(tmp_path, "docs", "search", "notes", "What colour is the bridge painted?", "--json")
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout)["results"][0]
    assert Path(first["file"]).name == "bridge.pdf" and first["page"] == 2 and "Forth Bridge Red" in first["text"]
    assert first["score"] > 0

    listed = prefill(tmp_path, "docs", "ls", "--json")
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["name"], row["files"], row["failed"]) == ("notes", 4, 1)
    assert "all-MiniLM-L6-v2" in row["embed_model"]


def test_chat_with_a_document_that_fits_reads_it_whole(tmp_path: Path) -> None:
    folder = _files(tmp_path / "docs")
    out = prefill(tmp_path, "chat", *SMALL, "--docs", str(folder / "owls.md"), "--json", "--max-tokens", "48",
                  "--ctx", "2048", "--prompt", "What do barn owls hunt? Cite the source as [1].")
    assert out.returncode == 0, out.stderr
    turn = json.loads(out.stdout)
    r = turn["retrieval"]
    assert r["mode"] == "whole" and r["documents"] == 1 and 0 < r["tokens"] <= r["budget"]
    assert turn["prompt_tokens"] > r["tokens"]  # the document is in the prompt
    assert {s["n"] for s in turn["sources"]} == _marks(turn["answer"]) & {1}  # exactly what its marks point at
    for s in turn["sources"]:
        assert Path(s["file"]).name == "owls.md" and "barn owl" in s["text"]


def test_chat_with_documents_too_big_retrieves_passages(tmp_path: Path) -> None:
    _needs_bundled_embed()
    folder = _files(tmp_path / "docs")
    filler = "\n\n".join(f"Section {i}. The harbour log notes ships, tides and weather on day {i} of the year."
                         for i in range(400))
    (folder / "log.md").write_text("# Harbour log\n\n" + filler + "\n")
    out = prefill(tmp_path, "chat", *SMALL, "--docs", str(folder), "--json", "--max-tokens", "48", "--ctx", "1024",
                  "--prompt", "What colour is the Forth Bridge painted? Cite the source as [1].")
    assert out.returncode == 0, out.stderr
    assert "not read" not in out.stdout
    turn = json.loads(out.stdout)
    r = turn["retrieval"]
    assert r["mode"] == "retrieved" and r["passages"] >= 1 and r["tokens"] <= r["budget"]
    assert r["embed_ms"] > 0 and r["search_ms"] > 0
    assert "indexing" in out.stderr and "not indexed: broken.pdf: " in out.stderr
    offered = set(range(1, r["passages"] + 1))
    assert {s["n"] for s in turn["sources"]} == _marks(turn["answer"]) & offered
    for s in turn["sources"]:
        assert set(s) == {"n", "file", "page", "score", "text"}
