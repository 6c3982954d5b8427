"""The words shown for why an answer ended, one word per reason wherever it is shown.

The engine's ``finish_reason`` values ("cancelled", "length"…) are its own vocabulary; the
message's figures line and the sidebar both show these words instead, so a stopped answer is
"stopped" in both places.
"""

from __future__ import annotations

REASONS = {"stop": "finished", "length": "hit the length limit", "cancelled": "stopped",
           "context_full": "the context is full", "error": "⚠ incomplete: the answer was cut short",
           "tool_calls": "asked for tools"}


def finish_words(reason: str) -> str:
    """What a person reads for an engine finish reason (an unknown one as it is)."""
    return REASONS.get(reason, reason)
