"""Fit a conversation into the context: the `stop`, `truncate_middle` and `rolling_window` policies.

Messages are dropped a turn at a time (a user message and the answers after it);
the system prompt and the newest user message are never dropped. `summarise` is the session's
(session/compaction.py: the model summarises the chat before it is full); what still does not fit
here, a long new turn after the summary, is fitted as by `rolling_window`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prefill.engine.errors import ContextOverflow
from prefill.engine.message import Message


@dataclass(frozen=True)
class Fitted:
    messages: list[Message]
    dropped: tuple[int, ...]  # indices into the original list
    prompt_tokens: int

    @property
    def note(self) -> str:
        if not self.dropped:
            return ""
        n = len(self.dropped)
        return f"{n} earlier message{'s' if n != 1 else ''} left out to fit the context"


def _turns(messages: Sequence[Message], first: int) -> list[list[int]]:
    """Indices from `first` on, grouped into turns that start at a user message."""
    turns: list[list[int]] = []
    for i in range(first, len(messages)):
        if messages[i].role == "system":
            continue
        if messages[i].role == "user" or not turns:
            turns.append([i])
        else:
            turns[-1].append(i)
    return turns


def fit_messages(
    messages: Sequence[Message],
    count_tokens: Callable[[Sequence[Message]], int],
    n_ctx: int,
    reserve: int,
    policy: str,
) -> Fitted:
    """Apply `policy` until prompt + reserve fits n_ctx.

    Raises:
        ContextOverflow: with policy `stop`, or when even the system prompt and the last
            user message alone do not fit.
    """
    msgs = list(messages)
    n = count_tokens(msgs)
    if n + reserve <= n_ctx:
        return Fitted(msgs, (), n)
    if policy == "stop":
        raise ContextOverflow(n, reserve, n_ctx)
    turns = _turns(msgs, 0)
    protected = 1 if policy == "truncate_middle" and len(turns) > 2 else 0
    droppable = turns[protected:-1]  # never the newest turn
    dropped: list[int] = []
    for turn in droppable:
        dropped.extend(turn)
        gone = set(dropped)
        kept = [m for i, m in enumerate(msgs) if i not in gone]
        n = count_tokens(kept)
        if n + reserve <= n_ctx:
            return Fitted(kept, tuple(dropped), n)
    raise ContextOverflow(n, reserve, n_ctx)
