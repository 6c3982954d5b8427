"""Errors of the HTTP API, in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from prefill.engine.units import format_bytes
from prefill.wire.checks import WireFault

INVALID = "invalid_request_error"


@dataclass
class ApiError(Exception):
    """An error a client gets as an OpenAI-shaped JSON body with `status`."""

    status: int
    message: str
    type: str = INVALID
    param: str | None = None
    code: str | None = None
    headers: dict[str, str] | None = None  # sent with the response (Retry-After)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def body(self) -> dict[str, object]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


@contextmanager
def wire_faults() -> Iterator[None]:
    """A shared decoder's `WireFault` (wire/) as the 400 it is, in its words and naming its field."""
    try:
        yield
    except WireFault as e:
        raise bad_request(e.message, e.param) from None


def unauthorized() -> ApiError:
    return ApiError(401, "Incorrect or missing API key: send it as 'Authorization: Bearer KEY'.",
                    code="invalid_api_key")


def model_not_found(name: str, available: Sequence[str]) -> ApiError:
    served = ", ".join(repr(a) for a in available) or "no model"
    return ApiError(404, f"The model {name!r} does not exist here; this server serves {served}.",
                    param="model", code="model_not_found")


def too_large(limit: int) -> ApiError:
    return ApiError(413, f"The request body is over the {format_bytes(limit)} limit: no prompt that fits this "
                    "server's context is that large.", code="request_too_large")


def context_exceeded(message: str) -> ApiError:
    return ApiError(400, message, param="messages", code="context_length_exceeded")


def server_error(message: str) -> ApiError:
    return ApiError(500, message, type="server_error")


def busy(message: str, retry_after_s: int) -> ApiError:
    return ApiError(429, f"The server is busy: {message}. Try again in a few seconds.", code="rate_limit_exceeded",
                    headers={"Retry-After": str(retry_after_s)})


def unavailable(message: str) -> ApiError:
    return ApiError(503, message, type="server_error")
