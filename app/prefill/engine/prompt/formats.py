"""Which chat format a model speaks, and the markers that end its turn.

A GGUF with its own `tokenizer.chat_template` is rendered with it. One without (a base
model, or a file converted without its template) gets a format chosen from what llama.cpp
knows: the turn markers its vocabulary has as single tokens (Gemma's `<start_of_turn>`,
Llama 3's headers, ChatML, Mistral's `[INST]`, Phi-3…), rendered by llama.cpp's own built-in
template of that name. A model with neither a template nor chat tokens is a base model: it
gets a plain transcript, and says so.

Every format knows its turn markers: generation stops when the model writes one as text
(not only as the special token), so no marker ever reaches the answer.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefill.engine.errors import TemplateError, TemplateRefusal
from prefill.engine.message import Message
from prefill.engine.prompt.reasoning import ReasoningSyntax, detect_syntax
from prefill.engine.prompt.template import ChatTemplate, fold_system, merge_turns
from prefill.engine.request import TemplateOptions

if TYPE_CHECKING:
    from prefill.engine.llama.runtime import LlamaRuntime

# Turn markers of the formats in use; any that a model's template writes is a stop string.
TURN_MARKERS = (
    "<|im_end|>", "<|im_start|>", "<end_of_turn>", "<start_of_turn>", "<turn|>", "<|turn>",
    "<|eot_id|>", "<|start_header_id|>", "<|end|>", "<|user|>", "<|END_OF_TURN_TOKEN|>",
    "<|START_OF_TURN_TOKEN|>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<|end_of_text|>",
    "<|start_of_role|>", "<|return|>", "<|call|>", "<|endoftext|>", "<|im_sep|>",
    "[INST]", "<|user_start|>", "<|assistant_end|>",
)


@dataclass(frozen=True)
class _Builtin:
    name: str  # llama.cpp's built-in template
    needs: tuple[str, ...]  # single tokens the vocabulary must have
    stops: tuple[str, ...]


# In order: the first whose tokens the vocabulary has wins (the more specific ones first).
BUILTINS = (
    _Builtin("gpt-oss", ("<|channel|>", "<|start|>", "<|message|>"), ("<|return|>", "<|call|>")),
    _Builtin("gemma", ("<start_of_turn>", "<end_of_turn>"), ("<end_of_turn>", "<start_of_turn>")),
    _Builtin("llama3", ("<|start_header_id|>", "<|eot_id|>"), ("<|eot_id|>", "<|start_header_id|>")),
    _Builtin("phi4", ("<|im_start|>", "<|im_sep|>"), ("<|im_end|>", "<|im_start|>")),
    _Builtin("chatml", ("<|im_start|>", "<|im_end|>"), ("<|im_end|>", "<|im_start|>")),
    _Builtin("command-r", ("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
             ("<|END_OF_TURN_TOKEN|>", "<|START_OF_TURN_TOKEN|>")),
    _Builtin("granite", ("<|start_of_role|>", "<|end_of_role|>"), ("<|end_of_text|>", "<|start_of_role|>")),
    _Builtin("deepseek3", ("<｜User｜>", "<｜Assistant｜>"), ("<｜end▁of▁sentence｜>", "<｜User｜>")),
    _Builtin("phi3", ("<|user|>", "<|assistant|>", "<|end|>"), ("<|end|>", "<|user|>")),
    _Builtin("mistral-v7", ("[INST]", "[/INST]", "[SYSTEM_PROMPT]"), ("[INST]",)),
    _Builtin("llama2", ("[INST]", "[/INST]"), ("[INST]",)),
)

BASE_STOPS = ("\nUser:",)


@dataclass(frozen=True)
class ChatFormat:
    """How prompts are written for a model, and what the user is told about it.

    Attributes:
        name: "template" (the model's own), a llama.cpp built-in name, or "base".
        label: One line for the user: where the format came from.
        stops: Text that ends the answer when the model writes it.
        template: The model's own template, for "template".
    """

    name: str
    label: str
    stops: tuple[str, ...]
    template: ChatTemplate | None = None

    @property
    def is_base(self) -> bool:
        return self.name == "base"

    @property
    def from_model(self) -> bool:
        return self.template is not None

    @property
    def takes_thinking_switch(self) -> bool:
        """Whether the model's template reads `enable_thinking` (Qwen3, SmolLM3, Granite…)."""
        return self.template is not None and self.template.takes_thinking_switch

    @property
    def takes_reasoning_effort(self) -> bool:
        """Whether the model's template reads `reasoning_effort` (gpt-oss)."""
        return self.template is not None and self.template.takes_reasoning_effort


def template_stops(source: str, eos_text: str) -> tuple[str, ...]:
    """The turn markers a template writes, and the EOS text: the model ends its turn with one of them."""
    found = [m for m in TURN_MARKERS if m in source]
    if eos_text and eos_text in source and eos_text not in found:
        found.append(eos_text)
    return tuple(found)


def choose_format(
    source: str | None,
    special_tokens: dict[str, str],
    is_single_token: Callable[[str], bool],
) -> ChatFormat:
    """The format for a model: its own template, else the built-in its vocabulary points to, else base.

    `is_single_token(text)` says whether the vocabulary has `text` as one special token.
    """
    eos = special_tokens.get("eos_token", "")
    if source:
        return ChatFormat("template", "the model's own chat template", template_stops(source, eos),
                          ChatTemplate(source, special_tokens))
    for b in BUILTINS:
        if all(is_single_token(t) for t in b.needs):
            return ChatFormat(
                b.name, f"built-in {b.name} format (the model file has no chat template)", b.stops
            )
    return ChatFormat(
        "base",
        "base model: plain-text transcript (no chat template, no chat tokens); it may not follow instructions",
        BASE_STOPS,
    )


def render_base(messages: Sequence[Message]) -> str:
    """A plain transcript a base model can continue."""
    lines: list[str] = []
    for m in messages:
        if m.role == "system":
            lines.append(m.content.strip() + "\n")
        else:
            lines.append(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content.strip()}\n")
    lines.append("Assistant:")
    return "\n".join(lines)


def render_builtin(name: str, messages: Sequence[Message]) -> str:
    """Render through llama.cpp's own built-in template `name`.

    Raises:
        TemplateError: llama.cpp does not know the format.
    """
    import llama_cpp  # the C bindings; loaded only where a model is

    keep = [(m.role.encode(), m.content.encode()) for m in messages]
    arr = (llama_cpp.llama_chat_message * len(keep))()
    for i, (role, content) in enumerate(keep):
        arr[i].role = role
        arr[i].content = content
    size = 2 * sum(len(c) + len(r) for r, c in keep) + 1024
    for _ in range(2):
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_chat_apply_template(name.encode(), arr, len(keep), True, buf, size)
        if n < 0:
            raise TemplateError(f"llama.cpp has no built-in chat format {name!r}")
        if n <= size:
            return buf.raw[:n].decode("utf-8", errors="replace")
        size = n + 1
    raise TemplateError("llama.cpp's built-in chat format did not fit its buffer")


def render(
    fmt: ChatFormat, messages: Sequence[Message], options: TemplateOptions | None = None,
    cancel: threading.Event | None = None, tools: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The prompt for `messages` in `fmt`, ending where the assistant's answer starts; `tools` (OpenAI
    function schemas) go to a template that renders them."""
    if fmt.template is not None:
        try:
            return fmt.template.render(messages, True, options, cancel=cancel, tools=tools)
        except TemplateRefusal:
            if not any(m.role == "system" for m in messages):
                raise
            # Templates without a system role refuse one; the system prompt then leads the first
            # user message, the way their models were trained to read instructions.
            return fmt.template.render(fold_system(messages), True, options, cancel=cancel, tools=tools)
    if fmt.is_base:
        return render_base(messages)
    return render_builtin(fmt.name, messages)


def for_model(template_source: str | None, runtime: LlamaRuntime) -> tuple[ChatFormat, ReasoningSyntax]:
    """A loaded model's chat format and reasoning syntax; the syntax's marker tokens are then
    rendered as text, so the reasoning parser sees them even where they are control tokens."""
    bos = runtime.token_text(runtime.bos_id) if runtime.bos_id >= 0 else ""
    eos = runtime.token_text(runtime.eos_id) if runtime.eos_id >= 0 else ""
    fmt = choose_format(template_source, {"bos_token": bos, "eos_token": eos}, runtime.is_single_token)
    syntax = detect_syntax(template_source or "", runtime.is_single_token)
    runtime.render_as_text(syntax.markers)
    return fmt, syntax


def prompt_text(
    fmt: ChatFormat, messages: Sequence[Message], options: TemplateOptions | None, add_bos: bool,
    tools: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The prompt text: consecutive messages of one role merged, then rendered; the template's own
    BOS is cut when llama.cpp adds one itself (`add_bos`)."""
    text = render(fmt, merge_turns(messages), options, tools=tools)
    bos = fmt.template.bos_token if fmt.template is not None else ""
    if add_bos and bos and text.startswith(bos):
        text = text[len(bos) :]
    return text
