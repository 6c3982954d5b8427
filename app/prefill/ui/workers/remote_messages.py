"""A remote endpoint's failures in words, each with what the user can do next."""

from __future__ import annotations

from prefill.remote.errors import (
    BadResponse,
    InvalidEndpoint,
    ModelNotFound,
    RateLimited,
    RemoteError,
    ResponseTooLarge,
    StreamCut,
    TlsFailure,
    Unauthorized,
    Unreachable,
)


def remote_error_text(e: RemoteError) -> str:
    """One or two sentences: what happened (the error's own words), then the next step."""
    what = f"{e.message[:1].upper()}{e.message[1:]}."
    if isinstance(e, RateLimited):
        wait = f" in {e.retry_after_s:.0f} s" if e.retry_after_s else " in a moment"
        return f"{what} Try again{wait}."
    if e.partial or e.partial_reasoning:
        return f"{what} The answer so far is kept, marked incomplete; regenerate it to ask again."
    step = next((s for kind, s in _NEXT_STEPS if isinstance(e, kind)), "")
    return f"{what} {step}" if step else what


_NEXT_STEPS: tuple[tuple[type[RemoteError], str], ...] = (
    (InvalidEndpoint, "Edit the endpoint's URL (http:// or https:// and a host)."),
    (Unreachable, "Check that the server is running and the URL is right."),
    (TlsFailure, "Check the URL's scheme (http or https) and the server's certificate."),
    (Unauthorized, "Check the endpoint's API key."),
    (ModelNotFound, "Pick one of the models the endpoint lists."),
    (StreamCut, "Nothing of the answer had come; retry it."),
    (ResponseTooLarge, "Check that the URL leads to the endpoint's API, not to some other server."),
    (BadResponse, "The endpoint may not speak the OpenAI API; check its URL."),
)
