"""Errors in Ollama's shape: {"error": "..."}, the status saying what kind it is."""

from __future__ import annotations

from prefill.server.errors import ApiError


def ollama_error(err: ApiError) -> dict[str, object]:
    return {"error": err.message}
