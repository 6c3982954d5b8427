"""Prompt tokens for a request: chat messages through the model's own template, or raw text.

Called off the event loop (rendering and tokenising are CPU work); llama.cpp's
tokenizer reads the vocabulary only, so this may run beside the decoding thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefill.engine.gguf_header import GGUFHeader
from prefill.engine.llama_runtime import LlamaRuntime
from prefill.engine.template import ChatTemplate, Message


class PromptBuilder:
    def __init__(self, runtime: LlamaRuntime, header: GGUFHeader):
        self.runtime = runtime
        bos = runtime.token_text(runtime.bos_id) if runtime.bos_id >= 0 else ""
        eos = runtime.token_text(runtime.eos_id) if runtime.eos_id >= 0 else ""
        self.template = ChatTemplate(header.chat_template, bos_token=bos, eos_token=eos)

    def chat(self, messages: Sequence[Message]) -> list[int]:
        """Raises TemplateError when the template refuses the conversation."""
        # As ChatEngine.render: llama.cpp adds BOS itself, so the template's own is cut.
        text = self.template.render(messages, add_generation_prompt=True)
        bos = self.template.bos_token
        if self.runtime.add_bos and bos and text.startswith(bos):
            text = text[len(bos):]
        return self.runtime.tokenize(text, add_special=self.runtime.add_bos)

    def completion(self, prompt: str) -> list[int]:
        return self.runtime.tokenize(prompt, add_special=self.runtime.add_bos)
