"""Render a chat with the model's own template, in a Jinja sandbox.

A GGUF carries its chat template as Jinja source written by whoever made the
file. It is rendered in an immutable sandbox: a template that reaches for Python
internals (`__class__`, `__subclasses__`, `os`…) raises `TemplateError` and
never runs code.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from prefill.engine.errors import TemplateError

ROLES = ("system", "user", "assistant")

# Used when a GGUF has no template of its own: ChatML, which most small chat models follow.
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; a message is one of {', '.join(ROLES)}")


def _raise_exception(message: str) -> None:
    raise TemplateError(f"the chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


class ChatTemplate:
    """A compiled, sandboxed chat template."""

    def __init__(self, source: str | None, bos_token: str = "", eos_token: str = ""):
        self.source = source or CHATML
        self.is_fallback = source is None
        self.bos_token = bos_token
        self.eos_token = eos_token
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined
        )
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
        try:
            self._template = env.from_string(self.source)
        except jinja2.TemplateError as e:
            raise TemplateError(f"the model's chat template does not compile: {e}") from e

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text for `messages`, ending with the assistant's turn opener."""
        try:
            return self._template.render(
                messages=[{"role": m.role, "content": m.content} for m in messages],
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except SecurityError as e:
            raise TemplateError(
                f"the model's chat template tried to leave its sandbox and was stopped ({e})"
            ) from e
        except TemplateError:
            raise
        except jinja2.TemplateError as e:
            raise TemplateError(f"the model's chat template failed: {e}") from e
        except Exception as e:  # a template can raise anything from inside the sandbox
            raise TemplateError(f"the model's chat template failed: {type(e).__name__}: {e}") from e
