"""A repository's README as a model card: fetched from the hub stand-in, bounded, front matter apart."""

from __future__ import annotations

import pytest

from prefill.hub.client import HubClient
from prefill.hub.errors import RepoNotFound
from prefill.hub.model_card import fetch_model_card, parse_card
from tests.hub.conftest import add_repo
from tests.hub.fake_hub import FakeHub


def test_fetched_through_the_cdn_redirect(hub: FakeHub, client: HubClient) -> None:
    add_repo(hub, "org/A-GGUF", {"a-Q4_0.gguf": b"x", "README.md": b"---\nlicense: mit\n---\n# A\n\nText."})
    card = fetch_model_card(client, "org/A-GGUF")
    assert card is not None and card.text == "# A\n\nText." and card.facts == (("license", "mit"),)
    assert not card.truncated


def test_no_readme_is_none_and_a_missing_repo_is_said(hub: FakeHub, client: HubClient) -> None:
    add_repo(hub, "org/B-GGUF", {"b-Q4_0.gguf": b"x"})
    assert fetch_model_card(client, "org/B-GGUF") is None
    with pytest.raises(RepoNotFound):
        fetch_model_card(client, "org/Nope-GGUF")


def test_a_huge_card_is_cut(hub: FakeHub, client: HubClient) -> None:
    add_repo(hub, "org/C-GGUF", {"README.md": "é".encode() * 50_000})
    card = fetch_model_card(client, "org/C-GGUF", max_bytes=1001)
    assert card is not None and card.truncated and card.text == "é" * 500  # the split character dropped


def test_parse_front_matter_lists_and_bad_bytes() -> None:
    raw = b"---\r\nlicense: 'apache-2.0'\r\nbase_model:\r\n  - org/X\r\n  - org/Y\r\ntags:\r\n- a\r\n---\r\nHi \xff"
    card = parse_card("o/r", raw)
    assert card.facts == (("license", "apache-2.0"), ("base model", "org/X, org/Y"))
    assert card.text == "Hi \ufffd"
    assert parse_card("o/r", b"no front matter\n---\n").text == "no front matter\n---"
