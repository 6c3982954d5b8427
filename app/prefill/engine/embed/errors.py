"""Typed errors of the embedding models; each message is a sentence a person can act on."""

from __future__ import annotations

from prefill.engine.errors import EngineError, ModelLoadError


class NotAnEmbeddingModel(ModelLoadError):
    """The GGUF loads but gives no pooled vector per input: a chat (generative) model, or an
    encoder without a pooling type."""


class ConversionError(ModelLoadError):
    """A checkpoint could not be written as a GGUF (a file missing, malformed, or of a shape the
    converter does not know); the message names what."""


class InputTooLong(EngineError):
    """An input has more tokens than the model's context, and cutting it was not asked for.

    Attributes:
        index: Which input (0-based), in the order given.
        tokens: Its length in tokens.
        limit: The most tokens one input may have.
    """

    def __init__(self, index: int, tokens: int, limit: int):
        self.index, self.tokens, self.limit = index, tokens, limit
        super().__init__(
            f"input {index} is {tokens} tokens, longer than the {limit} tokens this embedding model reads "
            "at once: shorten it, split it, or ask for it to be cut to fit"
        )
