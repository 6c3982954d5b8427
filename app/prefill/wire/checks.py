"""What every decoder of a wire shape shares: the one fault it raises (`WireFault`, which the server
answers with a 400 naming `param`) and the checks on text that came from outside."""

from __future__ import annotations

import json
from typing import Any

MAX_SCHEMA_BYTES = 64 * 1024  # one tool's parameters, or a response format's schema


class WireFault(ValueError):
    """A shape that cannot be decoded: `message` is a sentence for the sender, `param` the field it
    is about (None: the body as a whole)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param


def unicode_text(text: str, param: str) -> str:
    """The text, if it is valid Unicode: JSON can spell a lone surrogate (\\ud800) that no tokenizer takes.

    Raises:
        WireFault: it holds one.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WireFault(f"'{param}' holds a lone surrogate (\\ud800-\\udfff), which is not valid Unicode.",
                        param) from None
    return text


def schema_text(schema: dict[str, Any], where: str) -> str:
    """A JSON schema as the text the model reads: valid Unicode, at most MAX_SCHEMA_BYTES.

    Raises:
        WireFault: it is not valid Unicode, or too large.
    """
    text = unicode_text(json.dumps(schema, ensure_ascii=False), where)
    if len(text.encode("utf-8")) > MAX_SCHEMA_BYTES:
        raise WireFault(f"{where} is over {MAX_SCHEMA_BYTES // 1024} KiB.", where)
    return text
