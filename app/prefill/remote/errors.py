"""Typed errors of a remote endpoint. They carry what a person needs; the edge words them.

Each keeps what was streamed before the failure (`partial`, `partial_reasoning`), so a caller
can keep a cut answer and mark it.
"""

from __future__ import annotations

from prefill.engine.errors import EngineError


class RemoteError(EngineError):
    """Base of every failure of a remote endpoint.

    Attributes:
        url: The endpoint's base URL (never its key).
        partial: The answer text received before the failure ("" when none).
        partial_reasoning: The thinking received before the failure.
    """

    def __init__(self, url: str, message: str, partial: str = "", partial_reasoning: str = ""):
        super().__init__(message)
        self.url = url
        self.message = message
        self.partial = partial
        self.partial_reasoning = partial_reasoning


class InvalidEndpoint(RemoteError):
    """The URL is not an http(s) URL with a host."""


class Unreachable(RemoteError):
    """No connection: the host does not resolve, refuses, or does not answer in time."""


class TlsFailure(RemoteError):
    """The TLS handshake failed (a bad certificate, or https to a plain-HTTP port)."""


class Unauthorized(RemoteError):
    """401 or 403: the key is missing, wrong or not allowed."""


class ModelNotFound(RemoteError):
    """404: the endpoint does not serve this model (or this path)."""


class RateLimited(RemoteError):
    """429: too many requests; `retry_after_s` is the server's hint (0 when none)."""

    def __init__(self, url: str, message: str, retry_after_s: float = 0.0):
        super().__init__(url, message)
        self.retry_after_s = retry_after_s


class BadResponse(RemoteError):
    """Another HTTP error, an error event in the stream, or a body that is not the OpenAI shape."""

    def __init__(self, url: str, message: str, status: int = 0, partial: str = "", partial_reasoning: str = ""):
        super().__init__(url, message, partial, partial_reasoning)
        self.status = status


class ResponseTooLarge(BadResponse):
    """A body, a line of the stream or one event's data past the client's bound (`limit`: bytes,
    or characters for an event's data): refused as it arrives, its connection closed."""

    def __init__(self, url: str, message: str, limit: int, status: int = 0, partial: str = "",
                 partial_reasoning: str = ""):
        super().__init__(url, message, status, partial, partial_reasoning)
        self.limit = limit


class StreamCut(RemoteError):
    """The stream ended (or broke) before the answer was finished; `partial` holds what came."""


def size_text(n: int) -> str:
    """`n` bytes for a person: 8 MiB, 64 KiB, 100 bytes."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"
