"""The one chat module: how a model reads a conversation and how what it writes back is read.

For a loaded model it renders a `ChatRequest` into prompt text and tokens in the model's chat
format (its own template, else the built-in format its vocabulary points to, else a base-model
transcript), names the stop strings that end a turn, and parses the streamed answer (thinking
apart from the answer, and the tool calls the model writes when it was offered tools). Tools go
to a template that renders them; a model whose template does not (or that has none) is told about
them in the generic form (`tool_calls.generic_tool_system_prompt`), its earlier calls and results
written as text. The chat engine, the window's server slot and the HTTP server all use it, so no
path grows its own copy. Rendering and tokenising are CPU work that reads only the
vocabulary: safe beside the decoding thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.message import Message
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt import formats
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.grammar import Constraint, constraint_for
from prefill.engine.prompt.reasoning import ReasoningParser, opened_in_prompt
from prefill.engine.prompt.thinking_budget import ThinkingLimit, budget_of, effective_options
from prefill.engine.prompt.tool_calls import generic_tool_system_prompt, render_call_as_text, render_result_as_text
from prefill.engine.prompt.tool_formats import GENERIC, ToolFormat, detect_tool_format
from prefill.engine.request import ChatRequest, TemplateOptions, Tool
from prefill.engine.settings import SamplingSettings


class ModelChat:
    """A model's chat format and reasoning syntax, chosen once from its template and vocabulary."""

    def __init__(self, template_source: str | None, runtime: LlamaRuntime):
        self.runtime = runtime
        self.format, self.reasoning = formats.for_model(template_source, runtime)
        template = self.format.template
        self.renders_tools = template is not None and template.takes_tools
        # how the model writes calls: its family's way where its template renders tools, else the generic form
        self.tool_format: ToolFormat = detect_tool_format(template_source) if self.renders_tools else GENERIC

    # --- what goes in --------------------------------------------------------------------
    def render(self, messages: Sequence[Message], options: TemplateOptions | None = None,
               tools: Sequence[Tool] = ()) -> str:
        """The prompt text, ending where the answer starts; consecutive messages of one role merged.

        Raises:
            TemplateError: the template refused the conversation, failed, or left its sandbox.
        """
        if any(m.images for m in messages):  # templates see text: each image as its marker
            messages = [m.with_image_markers() for m in messages]
        if options is not None:
            options = effective_options(options, self.format.takes_thinking_switch)
        if self.renders_tools:
            return formats.prompt_text(self.format, messages, options, self.runtime.add_bos,
                                       [t.as_openai() for t in tools])
        return formats.prompt_text(self.format, as_plain_turns(messages, tools), options, self.runtime.add_bos)

    def tokenize(self, text: str, at_start: bool = True) -> list[int]:
        """Tokens of prompt text; a BOS is added where the model wants one and `text` starts the prompt."""
        return self.runtime.tokenize(text, add_special=at_start and self.runtime.add_bos)

    def text_of(self, request: ChatRequest) -> str:
        """The request's prompt text: its messages, template switches and the tools it offers."""
        return self.render(request.messages, request.options, request.offered_tools)

    def prompt(self, request: ChatRequest) -> tuple[str, list[int]]:
        """The text and the tokens of the request's prompt."""
        text = self.text_of(request)
        return text, self.tokenize(text)

    def stops(self, sampling: SamplingSettings) -> tuple[str, ...]:
        """What ends an answer: the request's stop strings and the format's turn markers (a model
        may write them as text)."""
        return (*sampling.stop, *self.format.stops)

    # --- what comes back -----------------------------------------------------------------
    def constraint(self, request: ChatRequest) -> Constraint | None:
        """What the sampler keeps the answer inside: a call when one is required, calls once the
        model opens one ("auto", for families whose calls are JSON), the response format's JSON.

        Raises:
            GrammarError: a schema that cannot be made into a grammar.
        """
        fmt = self.calls_format(request)
        if fmt.json_call is None and request.tool_choice == "auto":  # its calls are not JSON: free
            request = replace(request, tools=())
        return constraint_for(request, fmt.json_call, fmt.trigger)

    def calls_format(self, request: ChatRequest) -> ToolFormat:
        """How the answer's calls are written: the model's own way, but the generic JSON form where
        a call is required and the model's own is not JSON (the grammar then writes that form)."""
        forced = request.offered_tools and request.tool_choice not in ("auto", "none")
        return GENERIC if forced and self.tool_format.json_call is None else self.tool_format

    def thinking_limit(self, prompt_text: str, request: ChatRequest) -> ThinkingLimit | None:
        """The answer's thinking budget for the decode loop (None: none, or a model that does not
        think in markers). `prompt_text` is the request's rendered prompt (it may open the thinking)."""
        budget = budget_of(request.options, self.format.takes_reasoning_effort)
        if budget is None or not self.reasoning:
            return None
        return ThinkingLimit(budget, self.reasoning, opened_in_prompt(self.reasoning, prompt_text))

    def reader(self, prompt_text: str, clock: RequestClock | None = None, as_written: bool = False,
               request: ChatRequest | None = None) -> AnswerSplit:
        """A parser for the streamed answer to `prompt_text`: thinking apart from the answer, counted
        into `clock`, and (when the `request` offered tools) the calls taken out of the answer. A prompt
        that opens the thinking (a template that starts it) starts inside it. `as_written`: a model without
        reasoning markers has its text passed on untouched (the server's clients get every character;
        the window drops the answer's leading blank space)."""
        offered = request is not None and bool(request.offered_tools)
        calls = None
        if request is not None and offered:
            calls = self.calls_format(request).parser(tools=request.offered_tools)
        most = None if request is None or request.parallel_tool_calls else 1
        if as_written and not self.reasoning:
            return AnswerSplit(None, clock, calls, most)
        parser = ReasoningParser(self.reasoning, opened_in_prompt(self.reasoning, prompt_text))
        return AnswerSplit(parser, clock, calls, most)


def as_plain_turns(messages: Sequence[Message], tools: Sequence[Tool]) -> list[Message]:
    """The conversation for a chat format that knows no tools: the tools described in the system
    prompt, earlier calls written into the assistant's text and results as the user's turns, in the
    generic form the model is asked to write."""
    if not tools and not any(m.tool_calls or m.role == "tool" for m in messages):
        return list(messages)
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            out.append(Message("user", render_result_as_text(m)))
        elif m.tool_calls:
            calls = "\n".join(render_call_as_text(c) for c in m.tool_calls)
            out.append(Message("assistant", f"{m.content}\n{calls}".strip(), m.reasoning))
        else:
            out.append(m)
    if tools:
        guide = generic_tool_system_prompt(tools)
        if out and out[0].role == "system":
            out[0] = Message("system", f"{out[0].content}\n\n{guide}")
        else:
            out.insert(0, Message("system", guide))
    return out


def plain_reader(clock: RequestClock | None = None) -> AnswerSplit:
    """A parser for raw completions: the whole text is the answer, as written."""
    return AnswerSplit(None, clock)
