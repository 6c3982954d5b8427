"""The transcript's rows as the conversation service holds a chat (session/conversation.py).

The window's rows are what it edits, pages through, deletes and undoes, so the controller builds its
`Conversation` from them whenever it asks one (`conversation_of`): what the model reads and each
turn's request then come from the same service as the terminal's. Notices are left out; a tool row
is one call (its figures: id, tool, arguments, round) and its result, and the calls come before the
answer that made them; a summary row (not one still being written) is a `Compacted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefill.engine.message import Message, ToolCall
from prefill.session.conversation import Compacted, Conversation, Item, Said
from prefill.ui.chat.transcript.summary_rows import SUMMARY
from prefill.ui.chat.transcript.transcript_model import Row


def conversation_of(system: str, rows: Sequence[Row], **how: Any) -> Conversation:
    """The chat of `rows` under `system`; `how`: Conversation's keywords (sampling, overflow, options,
    tools, n_ctx)."""
    items: list[Item] = []
    calls: list[Row] = []  # the tool rows before the next answer
    since = 0  # messages after the last summary so far (fallback call ids count them, as the model reads)
    summary = False
    for r in rows:
        if r.role == SUMMARY and not r.streaming:
            items.append(Compacted(r.content))
            calls, since, summary = [], 0, bool(r.content.strip())
        elif r.role == "tool":
            calls.append(r)
        elif r.role == "user":
            calls = []  # an answer that failed after its calls: they answered nothing
            items.append(Said(Message("user", r.content, r.reasoning, images=r.images)))
            since += 1
        elif r.role == "assistant":
            head = 1 if system.strip() or summary else 0
            said = _with_calls(r, calls, head + since)
            items += [Said(m, r.sources if m is said[-1] and m.role == "assistant" else ()) for m in said]
            since += len(said)
            calls = []
    return Conversation(system, items, **how)


def _with_calls(answer: Row, calls: list[Row], at: int) -> list[Message]:
    """An answer and the tool rounds before it, as messages. Calls whose answer ended asking for
    them (the round limit, Stop) share its message; earlier rounds' own words were not kept."""
    rounds: dict[int, list[tuple[ToolCall, str]]] = {}
    for i, r in enumerate(calls):
        f = r.figures
        call = ToolCall(str(f.get("id") or f"call_{at:012d}{i:012d}"), str(f.get("tool", "")),
                        str(f.get("arguments") or "{}"))
        n = f.get("round")
        rounds.setdefault(n if isinstance(n, int) else 1, []).append((call, r.content))
    out: list[Message] = []
    ordered = [rounds[n] for n in sorted(rounds)]
    for k, done in enumerate(ordered):
        last = k == len(ordered) - 1 and answer.finish_reason == "tool_calls"
        text, reasoning = (answer.content, answer.reasoning) if last else ("", "")
        out.append(Message("assistant", text, reasoning, tool_calls=tuple(c for c, _ in done)))
        out += [Message("tool", result, tool_call_id=c.id, name=c.name) for c, result in done]
    if not ordered or answer.finish_reason != "tool_calls":
        out.append(Message("assistant", answer.content, answer.reasoning))
    return out
