"""Transcript rows from the history: a stored message, its answer's tool calls, its versions.

The store thread reads the messages and their images (`StoreProxy.read_messages`); the rows are
built from them here, which costs the GUI thread no disk. What a file holds is checked here: a tool
call kept with an answer that is not one is skipped (its sources: `sources/cited.py`).
"""

from __future__ import annotations

from typing import Any

from prefill.store import ConversationRecord, MessageRecord
from prefill.ui.chat.sources.cited import SOURCES_KEY, stored_sources
from prefill.ui.chat.transcript.summary_rows import stored_summary_row
from prefill.ui.chat.transcript.transcript_model import Row
from prefill.ui.workers.store_worker import StoredMessages

CALL_FIELDS = ("id", "tool", "arguments", "elapsed_ms", "is_error", "denied", "stopped", "not_run", "round")


def rows_of(read: StoredMessages) -> tuple[ConversationRecord, list[Row]]:
    """A conversation and its transcript rows, from what `StoreProxy.read_messages` read. A "system"
    message is a compaction's summary row, or no row."""
    rows: list[Row] = []
    for m in read.messages:
        if m.role != "system":
            rows += message_rows(m)
            if m.id in read.images:
                rows[-1].images = read.images[m.id]
        elif (summary := stored_summary_row(m)) is not None:
            rows.append(summary)
    return read.conversation, rows


def message_rows(m: MessageRecord) -> list[Row]:
    """One stored message as rows: an answer's tool calls first, then the message (with the sources it
    cites), showing its version."""
    figures = dict(m.figures or {})
    answer = m.role == "assistant"
    rows = stored_tool_rows(figures.pop("tool_calls", None), m.position) if answer else []
    sources = stored_sources(figures.pop(SOURCES_KEY, None)) if answer else ()
    rows.append(Row(m.role, [m.content], figures, m.finish_reason or "", False, m.id,
                    [m.reasoning] if m.reasoning else [], position=m.position,
                    version=m.version, versions=len(m.versions) + 1, sources=sources))
    return rows


def stored_tool_rows(calls: Any, position: int) -> list[Row]:
    """The tool rows kept with an answer (whatever the file holds: checked here; a bad one is skipped)."""
    if not isinstance(calls, list):
        return []
    rows = []
    for c in calls:
        if not isinstance(c, dict) or not isinstance(c.get("tool"), str) or not isinstance(c.get("result"), str):
            continue
        figures = {k: c[k] for k in CALL_FIELDS if isinstance(c.get(k), (str, int, float, bool))}
        figures["arguments"] = str(figures.get("arguments", "{}"))
        rows.append(Row("tool", [c["result"]], figures, position=position))
    return rows
