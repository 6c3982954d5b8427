"""Chats as files: Prefill's JSON (complete, imports back) and Markdown (for reading)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from prefill.store.archive import ArchivedConversation, ArchivedMessage, to_document

ExportFormat = Literal["md", "json"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("md", "json")


def render(
    conversations: Iterable[ArchivedConversation], fmt: ExportFormat, exported_at: float
) -> str:
    """Return the export in this format ("md" or "json")."""
    if fmt == "json":
        return to_json_text(conversations, exported_at)
    if fmt == "md":
        return to_markdown(conversations)
    raise ValueError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")


def write_export(
    path: Path, conversations: Iterable[ArchivedConversation], fmt: ExportFormat
) -> None:
    """Write an export file whole or not at all: a temporary file beside it, then a rename.

    Raises:
        OSError: The folder or file cannot be written.
    """
    text = render(conversations, fmt, time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_json_text(conversations: Iterable[ArchivedConversation], exported_at: float) -> str:
    """Return Prefill's JSON export, indented, non-ASCII kept as is."""
    return json.dumps(to_document(conversations, exported_at), ensure_ascii=False, indent=2) + "\n"


def to_markdown(conversations: Iterable[ArchivedConversation]) -> str:
    """Return the chats as Markdown: a heading per chat and per turn, reasoning quoted."""
    return "\n---\n\n".join(_conversation(conv) for conv in conversations)


def _conversation(conv: ArchivedConversation) -> str:
    parts = [f"# {_line(conv.title) or 'Untitled chat'}\n"]
    facts = []
    if conv.model:
        facts.append(f"- Model: `{_line(conv.model)}`")
    facts.append(f"- Started {_when(conv.created_at)}, last changed {_when(conv.updated_at)}")
    if conv.settings:
        facts.append(f"- Settings: {_pairs(conv.settings)}")
    parts.append("\n".join(facts) + "\n")
    if conv.system_prompt:
        parts.append(f"## System prompt\n\n{conv.system_prompt.strip()}\n")
    parts.extend(_message(m) for m in conv.messages)
    return "\n".join(parts)


def _message(m: ArchivedMessage) -> str:
    parts = [f"## {m.role.capitalize()} · {_when(m.created_at)}\n"]
    if m.reasoning.strip():
        quoted = "\n".join(f"> {line}".rstrip() for line in m.reasoning.strip().splitlines())
        parts.append(f"> **Reasoning**\n>\n{quoted}\n")
    if m.content.strip():
        parts.append(m.content.strip() + "\n")
    notes = []
    if m.versions:  # which one is shown (the chat's branch after it follows); the others are in the JSON export
        which = f"{'answer' if m.role == 'assistant' else 'version'} {m.version + 1} of {len(m.versions) + 1}"
        if any(v.later for v in m.versions):
            which += " (the others, with the turns that followed them, are in the JSON export)"
        notes.append(which)
    if not m.complete:
        notes.append("cut off")
    if m.finish_reason:
        notes.append(f"finished: {m.finish_reason}")
    figures = dict(m.figures)
    sources = figures.pop("sources", None)  # an answer's citations: listed under it, not as figures
    if figures:
        notes.append(_pairs(figures))
    if notes:
        parts.append(f"*{' · '.join(notes)}*\n")
    listed = _sources(sources)
    if listed:
        parts.append("Sources:\n\n" + "\n".join(f"- {line}" for line in listed) + "\n")
    return "\n".join(parts)


def _sources(value: object) -> list[str]:
    """An answer's sources (its figures' "sources", as the window keeps them) as lines: "[1] report.pdf, page 3"."""
    if not isinstance(value, list):
        return []
    out = []
    for s in value:
        if not isinstance(s, dict) or not isinstance(s.get("n"), int):
            continue
        file, title = s.get("file"), s.get("title")
        name = (file.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(file, str) else "") or (
            title if isinstance(title, str) else "")
        page = s.get("page")
        out.append(_line(f"[{s['n']}] {name}" + (f", page {page}" if isinstance(page, int) else "")))
    return out


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def _line(text: str) -> str:
    return " ".join(text.split())


def _pairs(mapping: Mapping[str, Any]) -> str:
    return ", ".join(f"{_line(str(k))} {_value(v)}" for k, v in mapping.items())


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, str | int | bool) or value is None:
        return _line(str(value))
    return json.dumps(value, ensure_ascii=False)
