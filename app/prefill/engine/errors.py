"""Typed errors of the engine. They carry what a person needs; the UI words them."""

from __future__ import annotations


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class ModelLoadError(EngineError):
    """The model file could not be loaded (missing, truncated, not GGUF, rejected by llama.cpp)."""


class TemplateError(EngineError):
    """The model's chat template is missing, broken, or tried to leave its sandbox."""


class TemplateRefusal(TemplateError):
    """The chat template itself refused the conversation (`raise_exception`), with its reason."""


class ContextOverflow(EngineError):
    """The prompt plus the room reserved for the answer does not fit the context."""

    def __init__(self, prompt_tokens: int, reserved: int, n_ctx: int):
        self.prompt_tokens = prompt_tokens
        self.reserved = reserved
        self.n_ctx = n_ctx
        self.over = prompt_tokens + reserved - n_ctx
        super().__init__(
            f"the prompt is {prompt_tokens} tokens and {reserved} are reserved for the answer, "
            f"{self.over} more than the {n_ctx}-token context"
        )


class EngineBusy(EngineError):
    """A request arrived while another one is still running."""


class QueueFull(EngineError):
    """Every slot is busy and the queue behind them is at its bound: try again shortly."""


class InvalidSetting(EngineError, ValueError):
    """A setting was given a value outside its type, range or rules.

    Attributes:
        key: Dotted name of the setting, such as ``model.kv_type``: for a rule between
            fields, the one whose default repairs it.
        reason: What is wrong, without the key.
    """

    def __init__(self, key: str, reason: str):
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


class GrammarError(EngineError):
    """A response format's schema, a tool's parameters or a grammar could not be made into a
    grammar llama.cpp takes; the message says which part and why."""


class DraftModelError(ModelLoadError):
    """A draft model for speculative decoding was refused: its file could not be loaded, or its
    vocabulary is not the main model's (the message says what differs)."""
