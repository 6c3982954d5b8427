"""Prompt tokens for a request: chat messages in the model's chat format, or raw text.

The same format the window uses (`engine.chat_format`): the model's own template, else the
built-in format its vocabulary points to, else a base-model transcript; consecutive messages
of one role are merged first. Called off the event loop (rendering and tokenising are CPU work);
llama.cpp's tokenizer reads the vocabulary only, so this may run beside the decoding thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefill.engine import chat_format
from prefill.engine.gguf_header import GGUFHeader
from prefill.engine.llama_runtime import LlamaRuntime
from prefill.engine.message import Message
from prefill.engine.reasoning import detect_syntax
from prefill.engine.template import merge_turns


class PromptBuilder:
    def __init__(self, runtime: LlamaRuntime, header: GGUFHeader):
        self.runtime = runtime
        bos = runtime.token_text(runtime.bos_id) if runtime.bos_id >= 0 else ""
        eos = runtime.token_text(runtime.eos_id) if runtime.eos_id >= 0 else ""
        self.format = chat_format.choose_format(
            header.chat_template, {"bos_token": bos, "eos_token": eos}, runtime.is_single_token
        )
        self.reasoning = detect_syntax(header.chat_template or "", runtime.is_single_token)
        runtime.render_as_text(self.reasoning.markers)

    def chat_prompt(self, messages: Sequence[Message]) -> tuple[list[int], str]:
        """The tokens and the text of a chat's prompt. Raises TemplateError when the template
        refuses the conversation."""
        text = chat_format.render(self.format, merge_turns(messages))
        bos = self.format.template.bos_token if self.format.template is not None else ""
        if self.runtime.add_bos and bos and text.startswith(bos):
            text = text[len(bos):]  # llama.cpp adds BOS itself
        return self.runtime.tokenize(text, add_special=self.runtime.add_bos), text

    def chat(self, messages: Sequence[Message]) -> list[int]:
        return self.chat_prompt(messages)[0]

    def completion(self, prompt: str) -> list[int]:
        return self.runtime.tokenize(prompt, add_special=self.runtime.add_bos)
