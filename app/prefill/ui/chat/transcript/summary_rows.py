"""A compaction's summary as a transcript row: its role, its words while it is written or after it is
removed, the figures kept with it, and where the chat's last one is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prefill.session.compaction import Summary
from prefill.store import MessageRecord
from prefill.ui.chat.transcript.transcript_model import Row

SUMMARY = "summary"  # the transcript role of a compaction's summary
WORKING = "Summarising the earlier turns…"
REMOVED = "Summary removed: the model reads the earlier turns again."
FIGURES = ("folded", "turns", "tokens_before", "tokens_after", "ms", "written")


def last_summary(rows: Sequence[Row]) -> int:
    """The row of the chat's last summary (one still being written does not count); -1: none."""
    for i in range(len(rows) - 1, -1, -1):
        if rows[i].role == SUMMARY and not rows[i].streaming:
            return i
    return -1


def stored_summary_row(m: MessageRecord) -> Row | None:
    """A stored message as a summary row, if it is one (a "system" message holding "compaction"
    figures; whatever a file holds is checked here: a figure that is not a number is left out)."""
    kept = m.figures.get("compaction") if m.role == "system" and isinstance(m.figures, Mapping) else None
    if not isinstance(kept, Mapping):
        return None
    figures = {k: kept[k] for k in FIGURES if isinstance(kept.get(k), int | float) and not isinstance(kept[k], bool)}
    return Row(SUMMARY, [m.content], figures, "", False, m.id, position=m.position)


def summary_note(figures: Mapping[str, Any]) -> str:
    """What a summary did, in words, from its row's figures ("4 earlier turns summarised: 1,900 tokens → 210")."""
    def n(key: str) -> int:
        v = figures.get(key, 0)
        return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0

    return Summary("", n("folded"), n("turns"), n("tokens_before"), n("tokens_after"), 0.0, n("written")).note
