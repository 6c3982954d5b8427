"""The one chat module: how a model reads a conversation and how what it writes back is read.

For a loaded model it renders a `ChatRequest` into prompt text and tokens in the model's chat
format (its own template, else the built-in format its vocabulary points to, else a base-model
transcript), names the stop strings that end a turn, and parses the streamed answer (thinking
apart from the answer). The chat engine, the window's server slot and the HTTP server all use
it, so no path grows its own copy. Rendering and tokenising are CPU work that reads only the
vocabulary: safe beside the decoding thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.message import Message
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt import formats
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.reasoning import ReasoningParser, opened_in_prompt
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import SamplingSettings


class ModelChat:
    """A model's chat format and reasoning syntax, chosen once from its template and vocabulary."""

    def __init__(self, template_source: str | None, runtime: LlamaRuntime):
        self.runtime = runtime
        self.format, self.reasoning = formats.for_model(template_source, runtime)

    # --- what goes in --------------------------------------------------------------------
    def render(self, messages: Sequence[Message], options: TemplateOptions | None = None) -> str:
        """The prompt text, ending where the answer starts; consecutive messages of one role merged.

        Raises:
            TemplateError: the template refused the conversation, failed, or left its sandbox.
        """
        return formats.prompt_text(self.format, messages, options, self.runtime.add_bos)

    def tokenize(self, text: str, at_start: bool = True) -> list[int]:
        """Tokens of prompt text; a BOS is added where the model wants one and `text` starts the prompt."""
        return self.runtime.tokenize(text, add_special=at_start and self.runtime.add_bos)

    def prompt(self, request: ChatRequest) -> tuple[str, list[int]]:
        """The text and the tokens of the request's prompt."""
        text = self.render(request.messages, request.options)
        return text, self.tokenize(text)

    def stops(self, sampling: SamplingSettings) -> tuple[str, ...]:
        """What ends an answer: the request's stop strings and the format's turn markers (a model
        may write them as text)."""
        return (*sampling.stop, *self.format.stops)

    # --- what comes back -----------------------------------------------------------------
    def reader(self, prompt_text: str, clock: RequestClock | None = None, as_written: bool = False) -> AnswerSplit:
        """A parser for the streamed answer to `prompt_text`: thinking apart from the answer, counted
        into `clock`. A prompt that opens the thinking (a template that starts it) starts inside it.
        `as_written`: a model without reasoning markers has its text passed on untouched (the server's
        clients get every character; the window drops the answer's leading blank space)."""
        if as_written and not self.reasoning:
            return plain_reader(clock)
        return AnswerSplit(ReasoningParser(self.reasoning, opened_in_prompt(self.reasoning, prompt_text)), clock)


def plain_reader(clock: RequestClock | None = None) -> AnswerSplit:
    """A parser for raw completions: the whole text is the answer, as written."""
    return AnswerSplit(None, clock)
