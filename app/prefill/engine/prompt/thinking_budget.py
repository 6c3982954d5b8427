"""A reasoning model's thinking held to a budget of tokens, in both decode loops.

`ThinkingBudget` watches an answer's tokens as they are decoded (the same markers the answer's
`ReasoningParser` reads) and counts those spent thinking. When `limit` of them are spent while the
model still thinks, it hands the decode loop the tokens that close the thinking in the model's own
format instead of sampling: a short line that says so, then the end-of-thinking marker (a tag
pair's closing tag; gpt-oss's end of the analysis channel and the start of its final one). The
answer follows from the model, as it would after closing its thinking itself. A model that opens
its thinking again after the budget is spent has it closed at once: the budget is for the answer.

A budget of 0 closes the thinking before the first thought; a template with a thinking switch is
asked not to think at all instead (`effective_options`), so nothing needs closing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from prefill.engine.prompt.reasoning import CHANNEL, MESSAGE, START, ReasoningParser, ReasoningSyntax
from prefill.engine.request import TemplateOptions

NOTE = "Time to answer."  # written into the thinking where the budget closes it
GPT_OSS_CLOSE = f"<|end|>{START}assistant{CHANNEL}final{MESSAGE}"
# OpenAI's reasoning effort as a budget, for models whose template does not read the effort itself
EFFORT_BUDGETS = {"low": 512, "medium": 2048, "high": 8192}


def effective_options(options: TemplateOptions, takes_thinking_switch: bool) -> TemplateOptions:
    """The switches a template is given: a budget of 0 turns thinking off where the template can."""
    if options.reasoning_budget == 0 and takes_thinking_switch and options.think is not False:
        return replace(options, think=False)
    return options


def budget_of(options: TemplateOptions, takes_reasoning_effort: bool) -> int | None:
    """The thinking budget in tokens (None: no limit): the options' own, else the reasoning effort's
    for a model whose template does not read the effort (gpt-oss reads it itself)."""
    if options.reasoning_budget is not None:
        return options.reasoning_budget
    if options.reasoning_effort and not takes_reasoning_effort:
        return EFFORT_BUDGETS[options.reasoning_effort]
    return None


def close_text(close_tag: str | None) -> str:
    """What closes a thinking in the model's own format: a tag pair's `close_tag`, or (None) gpt-oss's
    analysis channel."""
    if close_tag is not None:
        return f"\n\n{NOTE}\n{close_tag}\n\n"
    return f"\n\n{NOTE}{GPT_OSS_CLOSE}"


@dataclass(frozen=True)
class ThinkingLimit:
    """One answer's thinking budget: at most `tokens` tokens of thinking. `syntax` is the model's
    reasoning markers and `opened` the tag pair its prompt left open (the template began the thinking)."""

    tokens: int
    syntax: ReasoningSyntax
    opened: tuple[str, str] | None = None


class ThinkingBudget:
    """Counts one answer's thinking tokens and closes the thinking when its limit is spent.

    The loop asks `forced()` before it samples (a token: feed it instead of sampling) and tells
    `saw(text)` each token's text (as the answer decodes it), sampled or forced. `tokenize` turns text
    into tokens as the model reads them mid-answer (special markers as their tokens, no BOS).
    """

    def __init__(self, limit: ThinkingLimit, tokenize: Callable[[str], list[int]]):
        self.limit = limit.tokens
        self._tokenize = tokenize
        self._parser = ReasoningParser(limit.syntax, limit.opened)
        self.used = 0  # thinking tokens the model wrote (the forced ones not counted)
        self.closed = False  # the budget closed the thinking at least once
        self._queue: list[int] = []
        self._opened = int(self._parser.in_reasoning)  # times the thinking began
        self._closed_at = 0  # the value of `_opened` when the budget last closed it

    def forced(self) -> int | None:
        """The next token of a close under way, or of one due now; None: sample as usual. Each
        thinking is closed once: a close the parser did not read as one is not forced again."""
        if (not self._queue and self._parser.in_reasoning and self.used >= self.limit
                and self._opened > self._closed_at):
            self._queue = self._tokenize(close_text(self._parser.close))
            self._closed_at = self._opened
            self.closed = True
        return self._queue.pop(0) if self._queue else None

    def saw(self, text: str, forced: bool = False) -> None:
        """A token's text, as the answer's decoder made it of its bytes (`forced`: one of the close's)."""
        was = self._parser.in_reasoning
        self._parser.feed(text)
        self._opened += not was and self._parser.in_reasoning
        if not forced and (was or self._parser.in_reasoning):
            self.used += 1
