"""A tool's answer as text for the model: its content parts joined, cut to a budget.

Text parts are kept as they are; an image, audio or binary resource is described in words (a
model reading text cannot see it); a resource link is named. A tool that answers only
structured content gets it as JSON. Past the budget the text is cut and a note says how much.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from prefill.engine.units import format_bytes

DEFAULT_BUDGET_BYTES = 64 * 1024


@dataclass(frozen=True)
class ToolResult:
    """What one tool call gave, ready for the model and for a person.

    Attributes:
        text: The answer (or, when `is_error`, what went wrong and what to do), cut to the budget.
        is_error: The tool reported an error, or the call failed, timed out or was stopped.
        elapsed_s: From the call to its answer (or to giving up).
        cut_bytes: How many bytes of the answer were left out (0 when it fitted).
        stopped: The caller stopped it (`cancel` was set) before it answered.
    """

    text: str
    is_error: bool
    elapsed_s: float
    cut_bytes: int = 0
    stopped: bool = False


def result_text(result: types.CallToolResult) -> str:
    """The text of every content part, joined by blank lines; non-text parts described."""
    parts = [_part_text(part) for part in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n\n".join(parts)


def cut_to_budget(text: str, budget_bytes: int, answered_bytes: int = 0) -> tuple[str, int]:
    """`text` cut to at most `budget_bytes` of UTF-8, with a note saying how much was left out.

    Args:
        text: The answer's text.
        budget_bytes: What a result may use.
        answered_bytes: The size of the answer `text` was already taken from, when the transport
            cut it (a message too long to read whole); 0 when `text` is the whole answer.

    Returns:
        The text to hand on, and how many bytes were cut (0 when it fitted).
    """
    raw = text.encode("utf-8", "surrogatepass")
    whole = max(len(raw), answered_bytes)
    if whole <= budget_bytes:
        return text, 0
    kept = raw[:budget_bytes].decode("utf-8", "ignore")  # a character cut in two is dropped whole
    cut = whole - len(kept.encode("utf-8", "surrogatepass"))
    answered = f"a message of {format_bytes(whole)}" if answered_bytes else f"{format_bytes(whole)} of text"
    note = (
        f"\n\n[Prefill cut this result: the tool answered {answered}, more than the "
        f"{format_bytes(budget_bytes)} a tool result may use; the last {format_bytes(cut)} were left out. "
        "Ask the tool for less (a narrower query, a page, a range) if the rest matters.]"
    )
    return kept + note, cut


def _part_text(part: Any) -> str:
    if isinstance(part, types.TextContent):
        return part.text
    if isinstance(part, types.ImageContent):
        return f"[an image ({part.mime_type}, {_decoded_size(part.data)}) that cannot be shown as text]"
    if isinstance(part, types.AudioContent):
        return f"[audio ({part.mime_type}, {_decoded_size(part.data)}) that cannot be shown as text]"
    if isinstance(part, types.ResourceLink):
        detail = f" ({part.description})" if part.description else ""
        return f"[a link to a resource: {part.name} at {part.uri}{detail}]"
    if isinstance(part, types.EmbeddedResource):
        res = part.resource
        if isinstance(res, types.TextResourceContents):
            return res.text
        if isinstance(res, types.BlobResourceContents):
            mime = res.mime_type or "binary data"
            return f"[a resource {res.uri} ({mime}, {_decoded_size(res.blob)}) that cannot be shown as text]"
    return f"[a part of kind {getattr(part, 'type', type(part).__name__)!s} that cannot be shown as text]"


def _decoded_size(data: str) -> str:
    """The size base64 `data` decodes to, counted without decoding it (it may be megabytes)."""
    return format_bytes(len(data.strip().rstrip("=")) * 3 // 4)
