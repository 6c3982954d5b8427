"""Errors in Anthropic's shape: {"type": "error", "error": {"type", "message"}}, the type by status."""

from __future__ import annotations

from prefill.server.errors import ApiError

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
          503: "overloaded_error", 529: "overloaded_error"}


def error_type(status: int) -> str:
    return _TYPES.get(status, "invalid_request_error" if 400 <= status < 500 else "api_error")


def anthropic_error(err: ApiError) -> dict[str, object]:
    message = err.message.replace("'Authorization: Bearer KEY'", "'x-api-key: KEY' or 'Authorization: Bearer KEY'")
    return {"type": "error", "error": {"type": error_type(err.status), "message": message}}
