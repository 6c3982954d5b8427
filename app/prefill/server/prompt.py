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


class PromptBuilder:
    def __init__(self, runtime: LlamaRuntime, header: GGUFHeader):
        self.runtime = runtime
        self.format, self.reasoning = chat_format.for_model(header.chat_template, runtime)

    def chat_prompt(self, messages: Sequence[Message]) -> tuple[list[int], str]:
        """The tokens and the text of a chat's prompt. Raises TemplateError when the template
        refuses the conversation."""
        text = chat_format.prompt_text(self.format, messages, None, self.runtime.add_bos)
        return self.runtime.tokenize(text, add_special=self.runtime.add_bos), text

    def chat(self, messages: Sequence[Message]) -> list[int]:
        return self.chat_prompt(messages)[0]

    def completion(self, prompt: str) -> list[int]:
        return self.runtime.tokenize(prompt, add_special=self.runtime.add_bos)
