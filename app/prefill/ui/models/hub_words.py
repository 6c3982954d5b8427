"""The hub's typed errors as the window says them: a next step in the window's own terms (the token is a
Settings field here, not an environment variable)."""

from __future__ import annotations

from prefill.hub.errors import BadToken, GatedRepo

TOKEN_FIELD = "Settings › Downloads › Hugging Face token"


def hub_error_text(e: BaseException | str) -> str:
    """`e` in words for the window, without the terminal's HF_TOKEN (a sentence without its full stop)."""
    if isinstance(e, GatedRepo):
        return (f"{e.repo_id} is gated: accept its terms at huggingface.co/{e.repo_id}, then give the access "
                f"token of that account in {TOKEN_FIELD}")
    if isinstance(e, BadToken):
        return f"the hub refused the access token in {TOKEN_FIELD} (wrong, expired or revoked): check it there"
    return str(e)
