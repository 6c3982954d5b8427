"""A repository's model card: its README.md, fetched through `huggingface_hub`'s session.

The card is text from outside. It is read with a byte bound (a README of megabytes is
cut, and said to be), decoded as UTF-8 with bad bytes replaced, and its YAML front
matter (the hub's metadata block between `---` lines) is taken off the text a person
reads; the few fields worth a line (license, base model) are kept apart. Nothing in
it is fetched: images and links stay text for the one markdown renderer to show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from huggingface_hub.utils import hf_raise_for_status  # type: ignore[attr-defined]

from prefill.hub.client import HubClient, translate_errors
from prefill.hub.errors import RemoteFileNotFound

CARD_FILE = "README.md"
MAX_CARD_BYTES = 256 << 10  # a long card is a few tens of KiB; more is cut
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*$\r?\n?", re.DOTALL | re.MULTILINE)
_FIELD = re.compile(r"^(license|base_model|pipeline_tag)\s*:\s*(.*)$", re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*-\s*(.+)$")


@dataclass(frozen=True)
class ModelCard:
    """What the Models page shows of a repository's README.

    Attributes:
        repo_id: the repository.
        text: the card's markdown, front matter removed ("" for an empty card).
        facts: (field, value) from the front matter worth showing: license, base model, task.
        truncated: the file was longer than `MAX_CARD_BYTES` and `text` is its beginning.
    """

    repo_id: str
    text: str
    facts: tuple[tuple[str, str], ...] = ()
    truncated: bool = False


def fetch_model_card(client: HubClient, repo_id: str, revision: str | None = None,
                     max_bytes: int = MAX_CARD_BYTES) -> ModelCard | None:
    """The repository's README.md, or None when it has none. Blocking: call it off the GUI thread.

    Raises:
        HubError: the hub could not be reached or refused the request (a gated repository...).
    """
    from huggingface_hub.utils import get_session  # type: ignore[attr-defined]

    url = client.file_url(repo_id, CARD_FILE, revision)
    body = bytearray()
    truncated = False
    try:
        with translate_errors(client.endpoint, repo_id, CARD_FILE):
            # Redirects followed by the session (the hub sends LFS files to its CDN); the token
            # goes to the hub only: httpx drops Authorization on a redirect to another origin.
            with get_session().stream("GET", url, headers=client.auth_headers(url), timeout=client.timeout,
                                      follow_redirects=True) as r:
                hf_raise_for_status(r)
                for chunk in r.iter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        truncated = True
                        break
    except RemoteFileNotFound:
        return None
    return parse_card(repo_id, bytes(body[:max_bytes]), truncated)


def parse_card(repo_id: str, raw: bytes, truncated: bool = False) -> ModelCard:
    """A README's bytes as a `ModelCard` (pure: the door every card goes through)."""
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    if truncated:  # a cut may split a character: drop the replacement at the very end
        text = text.rstrip("\ufffd")
    facts: list[tuple[str, str]] = []
    m = _FRONT_MATTER.match(text)
    if m is not None:
        facts = _facts(m.group(1))
        text = text[m.end():]
    return ModelCard(repo_id, text.strip("\n"), tuple(facts), truncated)


def _facts(front: str) -> list[tuple[str, str]]:
    """License, base model and task from the front matter, read line by line (no YAML parser:
    a card's metadata is often malformed, and these three are flat or a one-level list)."""
    lines = front.split("\n")
    found: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        m = _FIELD.match(line)
        if m is None:
            continue
        value = m.group(2).strip().strip("'\"")
        if not value:  # a list on the lines below
            items = []
            for nxt in lines[i + 1:]:
                item = _LIST_ITEM.match(nxt)
                if item is None:
                    break
                items.append(item.group(1).strip().strip("'\""))
            value = ", ".join(items)
        if value:
            found.append((m.group(1).replace("_", " "), value[:200]))
    return found
