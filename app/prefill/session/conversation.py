"""One chat, without Qt: its messages as typed values, each turn's request, the turn in flight, the
tool loop, compaction, regenerate / edit / branch, and the hooks that store it.

The window's controller (ui/chat/controller.py) and the terminal's `chat_turns` (commands/chat.py) are
adapters over it: they show what it holds and ask it; neither builds a request nor keeps a history
of its own. Its values are session/turn.py's (`Said`, `Compacted`, `Source`, `Turn`). What the model
reads is the system prompt with the last summary under it, then the messages after that summary
(`model_messages`); the messages before it stay in `items`.

A store plugs in through `ConversationHooks` (the terminal keeps nothing: `NoStore`). The hooks are
called on the thread that drives the conversation, in this order for a turn: `added` for the
question, `answer_grew` per streamed token, then, when it ends, `added` for each message the turn
kept (each round's answer and its calls' results) and `answer_finished` (also for a turn that failed
or was stopped before a word, whose question goes: `dropped`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished, Token
from prefill.engine.message import ImagePart, Message, ToolCall
from prefill.engine.request import ChatRequest, TemplateOptions, Tool
from prefill.engine.settings import OverflowSettings, SamplingSettings
from prefill.session.compaction import Summary, due, model_view, summarise
from prefill.session.tool_loop import (
    DEFAULT_MAX_ROUNDS,
    Approver,
    Decision,
    LoopEvent,
    Streamer,
    ToolApprovals,
    ToolOutcome,
    ToolRunner,
    run_tool_loop,
)
from prefill.session.turn import Compacted, Item, Said, Source, Turn

__all__ = ["Compacted", "Conversation", "ConversationBusy", "ConversationHooks", "Item", "NoStore", "Said",
           "Source", "Turn"]


class ConversationBusy(RuntimeError):
    """A change asked of a conversation while its turn is in flight."""


class ConversationHooks(Protocol):
    """What a store hears from a conversation (see the module's docstring for the order)."""

    def added(self, item: Item) -> None:
        """A message (or a summary) joined the chat, at its end."""

    def answer_grew(self, turn: Turn) -> None:
        """The turn's answer streamed on (`turn.text`, `turn.reasoning`)."""

    def answer_finished(self, turn: Turn) -> None:
        """The turn ended: done, cancelled or failed (`turn.state`); its messages were added first."""

    def summary_made(self, item: Compacted) -> None:
        """A compaction's summary ends the chat now (after `added`)."""

    def dropped(self, items: Sequence[Item]) -> None:
        """These items left the chat (a question stopped before a word, Regenerate, Edit)."""


class NoStore:
    """The hooks of a chat kept nowhere (the terminal's)."""

    def added(self, item: Item) -> None:
        pass

    def answer_grew(self, turn: Turn) -> None:
        pass

    def answer_finished(self, turn: Turn) -> None:
        pass

    def summary_made(self, item: Compacted) -> None:
        pass

    def dropped(self, items: Sequence[Item]) -> None:
        pass


class Conversation:
    """One chat's items and how its turns are asked.

    Attributes:
        system: The system prompt ("" for none).
        sampling, overflow, options, tools: How each turn is asked (options: the thinking switch,
            effort and the chat's reasoning budget; tools: what a turn offers).
        n_ctx: The loaded model's context (0: not known; compaction is then never due).
        items: The chat, in order.
        turn: The turn in flight (None: none); `busy` while it runs.
        hooks: Told what changes (`NoStore` by default).
        cite: Reads an answer's sources from its words when its turn ends (documents attached to the
            chat set it: session/documents.py); None: a turn's `sources` are left as they were set.
    """

    def __init__(self, system: str = "", items: Sequence[Item] = (), *,
                 sampling: SamplingSettings | None = None, overflow: OverflowSettings | None = None,
                 options: TemplateOptions | None = None, tools: Sequence[Tool] = (), n_ctx: int = 0,
                 hooks: ConversationHooks | None = None):
        self.system = system
        self.items: list[Item] = list(items)
        self.sampling = sampling or SamplingSettings()
        self.overflow = overflow or OverflowSettings()
        self.options = options or TemplateOptions()
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.n_ctx = n_ctx
        self.hooks: ConversationHooks = hooks if hooks is not None else NoStore()
        self.turn: Turn | None = None
        self.cite: Callable[[str], Sequence[Source]] | None = None

    @property
    def busy(self) -> bool:
        return self.turn is not None and self.turn.running

    # --- what the model reads -------------------------------------------------------------------
    def last_summary(self) -> int:
        """The index of the chat's last summary (-1: none)."""
        return next((i for i in range(len(self.items) - 1, -1, -1) if isinstance(self.items[i], Compacted)), -1)

    def messages(self) -> list[Message]:
        """Every message of the chat, summaries left out (what a person reads)."""
        return [i.message for i in self.items if isinstance(i, Said)]

    def model_messages(self) -> list[Message]:
        """The chat as the model reads it: the system prompt with the last summary under it, then the
        messages after that summary."""
        at = self.last_summary()
        last = self.items[at] if at >= 0 else None
        summary = last.text if isinstance(last, Compacted) else ""
        return model_view(self.system, summary, [i.message for i in self.items[at + 1:] if isinstance(i, Said)])

    def request(self, question: Message | None = None) -> ChatRequest:
        """The request of a turn: what the model reads (and `question` after it), with the chat's
        sampling, overflow, options and tools."""
        messages = self.model_messages() + ([question] if question is not None else [])
        return ChatRequest(tuple(messages), self.sampling, self.overflow, self.options, tools=self.tools)

    # --- a turn ---------------------------------------------------------------------------------
    def add(self, message: Message, sources: Sequence[Source] = ()) -> Said:
        """Put a message at the chat's end (told to the hooks)."""
        item = Said(message, tuple(sources))
        self.items.append(item)
        self.hooks.added(item)
        return item

    def ask(self, text: str, images: Sequence[ImagePart] = (), *, context: str = "") -> Turn:
        """Add the user's question and make the turn that answers it (run it with `run`). `context`
        (passages retrieved for it) is read by the model before the question in this turn only: the
        chat keeps the question as asked."""
        self._check_idle()
        question = self.add(Message("user", text, images=tuple(images))).message
        request = self.request()
        if context:
            messages = (*request.messages[:-1], replace(question, content=context + "\n\n" + text))
            request = replace(request, messages=messages)
        self.turn = Turn(request, question)
        return self.turn

    def again(self) -> Turn:
        """The turn that answers the chat as it stands (Retry, and after `regenerate`)."""
        self._check_idle()
        self.turn = Turn(self.request())
        return self.turn

    def run(self, turn: Turn, stream: Streamer, run_tool: ToolRunner | None = None, approve: Approver | None = None,
            *, cancel: threading.Event | None = None, approvals: ToolApprovals | None = None,
            max_rounds: int = DEFAULT_MAX_ROUNDS) -> Iterator[LoopEvent]:
        """Run `turn` through the tool loop (`run_tool_loop`: the model answers, the calls it makes are
        approved and run); yields the loop's events. When it ends, the messages the loop kept join the
        chat (a cancelled turn keeps what it had; a question stopped before a word goes). A backend
        that raises leaves the question in the chat, the turn "failed", and the error raised; one whose
        events are no longer wanted (the generator closed early) keeps nothing and ends "cancelled"."""
        added = len(self.items)
        try:
            for ev in run_tool_loop(stream, turn.request, run_tool or _no_tool, approve or _deny, max_rounds,
                                    cancel, approvals):
                turn.take(ev)
                if isinstance(ev, Token):
                    self.hooks.answer_grew(turn)
                yield ev
        except Exception as e:
            turn.fail(str(e))
            self._ended(turn)
            raise
        except GeneratorExit:
            turn.state = "cancelled"
            self._ended(turn)
            raise
        if self.cite is not None:
            turn.sources = tuple(self.cite(turn.text))
        kept = turn.new_messages()
        for i, m in enumerate(kept):
            self.add(m, turn.sources if i == len(kept) - 1 and m.role == "assistant" else ())
        asked = turn.question
        if turn.state == "cancelled" and asked is not None and len(self.items) == added and self.items \
                and isinstance(self.items[-1], Said) and self.items[-1].message is asked:
            gone = [self.items.pop()]  # stopped before a word: the question goes, so the roles still alternate
            self.hooks.dropped(gone)
        self._ended(turn)

    def _ended(self, turn: Turn) -> None:
        if self.turn is turn:
            self.turn = None
        self.hooks.answer_finished(turn)

    # --- compaction -----------------------------------------------------------------------------
    def due_after(self, finished: Finished) -> bool:
        """Whether the answer `finished` left the chat past its compaction threshold ("summarise" policy)."""
        m = finished.metrics
        return due(self.overflow.policy, m.prompt_tokens + m.completion_tokens, self.n_ctx)

    def due_before(self, question: Message, count_tokens: Callable[[ChatRequest], int | None]) -> bool:
        """Whether asking `question` next, with room for its answer, would pass the compaction threshold
        ("summarise" policy; never for a chat with nothing after its last summary, nor where the
        backend cannot count a prompt)."""
        if self.overflow.policy != "summarise" or self.n_ctx <= 0 or self.last_summary() == len(self.items) - 1:
            return False
        n = count_tokens(ChatRequest((*self.model_messages(), question), self.sampling, self.overflow))
        reserve = self.overflow.reserve_for(self.sampling.max_tokens, self.n_ctx)
        return n is not None and due("summarise", n + reserve, self.n_ctx)

    def compaction_request(self) -> ChatRequest:
        """The chat as the model reads it, for `summarise` (no question, no tools)."""
        return ChatRequest(tuple(self.model_messages()), self.sampling, self.overflow, self.options)

    def compact(self, stream: Streamer, count_tokens: Callable[[ChatRequest], int | None],
                cancel: threading.Event | None = None) -> Generator[Event, None, Summary]:
        """Have the model summarise the chat (`session.compaction.summarise`); yields its events, returns
        the Summary, which then ends the chat (`add_summary`).

        Raises:
            CompactionError: no summary (nothing to fold, stopped, nothing written): the chat is as it was.
        """
        self._check_idle()
        summary = yield from summarise(stream, self.compaction_request(), count_tokens, self.n_ctx, cancel)
        self.add_summary(summary)
        return summary

    def add_summary(self, summary: Summary | str) -> Compacted:
        """Put a summary at the chat's end: the model reads it in place of every turn before it."""
        item = Compacted(summary.text, summary) if isinstance(summary, Summary) else Compacted(summary)
        self.items.append(item)
        self.hooks.added(item)
        self.hooks.summary_made(item)
        return item

    # --- regenerate, edit, branch ---------------------------------------------------------------
    def regenerate(self) -> list[Item]:
        """Drop the last answer (with the tool rounds it made), so that `again` asks anew; the items
        dropped (none if the chat does not end with an answer)."""
        self._check_idle()
        at = len(self.items)
        while at > 0 and isinstance(self.items[at - 1], Said) and self.items[at - 1].role in ("assistant", "tool"):
            at -= 1
        return self._drop_from(at)

    def edit(self, index: int, text: str) -> list[Item]:
        """Put `text` in place of the user message at `index` and drop what follows it (returned); then
        `again` asks it."""
        self._check_idle()
        item = self.items[index]
        if not isinstance(item, Said) or item.role != "user":
            raise ValueError("only a user message is edited this way")
        self.items[index] = Said(replace(item.message, content=text), item.sources)
        return self._drop_from(index + 1)

    def branch(self, index: int) -> Conversation:
        """A new chat holding this one up to and including `index`, asked the same way (no hooks:
        the caller stores it)."""
        return Conversation(self.system, self.items[:index + 1], sampling=self.sampling, overflow=self.overflow,
                            options=self.options, tools=self.tools, n_ctx=self.n_ctx)

    def clear(self) -> None:
        """Start over: no message, no summary (the system prompt and settings stay)."""
        self._check_idle()
        self._drop_from(0)

    def _drop_from(self, at: int) -> list[Item]:
        gone, self.items[at:] = self.items[at:], []
        if gone:
            self.hooks.dropped(gone)
        return gone

    def _check_idle(self) -> None:
        if self.busy:
            raise ConversationBusy("the conversation is answering: stop it first")


def _no_tool(call: ToolCall, _cancel: object) -> ToolOutcome:
    raise AssertionError("no tools were offered, so none is called")


def _deny(_call: ToolCall) -> Decision:
    return Decision.DENY
