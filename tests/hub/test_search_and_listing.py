"""Search, a repository's models grouped by quantisation, multi-part sets as one."""

from __future__ import annotations

import pytest

from prefill.hub.client import HubClient
from prefill.hub.quants import group_by_quant, quant_of, split_part
from tests.hub.conftest import add_repo
from tests.hub.fake_hub import FakeHub


def _three_repos(hub: FakeHub) -> None:
    add_repo(hub, "a/Llama-GGUF", {"x.gguf": b"1"}, downloads=300, likes=1, last_modified="2024-03-01T00:00:00.000Z")
    add_repo(hub, "b/Llama-mini-GGUF", {"x.gguf": b"1"}, downloads=10, likes=50,
             last_modified="2024-01-01T00:00:00.000Z")
    add_repo(hub, "c/llama-new-GGUF", {"x.gguf": b"1"}, downloads=5, likes=2, last_modified="2025-06-01T00:00:00.000Z")
    add_repo(hub, "d/qwen-GGUF", {"x.gguf": b"1"}, downloads=999)
    add_repo(hub, "e/llama-safetensors", {"x.bin": b"1"}, downloads=10_000, tags=["pytorch"])


@pytest.mark.parametrize(
    ("sort", "first"),
    [("downloads", "a/Llama-GGUF"), ("likes", "b/Llama-mini-GGUF"), ("last_modified", "c/llama-new-GGUF")],
)
def test_search_finds_gguf_repos_sorted(hub: FakeHub, client: HubClient, sort: str, first: str) -> None:
    _three_repos(hub)
    hits = client.search("llama", sort=sort)  # type: ignore[arg-type]
    assert {h.repo_id for h in hits} == {"a/Llama-GGUF", "b/Llama-mini-GGUF", "c/llama-new-GGUF"}
    assert hits[0].repo_id == first
    top = {h.repo_id: h for h in hits}["a/Llama-GGUF"]
    assert (top.downloads, top.likes, top.last_modified.year) == (300, 1, 2024)  # type: ignore[union-attr]


def test_search_limit_and_bad_sort(hub: FakeHub, client: HubClient) -> None:
    _three_repos(hub)
    assert len(client.search("", limit=2)) == 2
    with pytest.raises(ValueError):
        client.search("x", sort="stars")  # type: ignore[arg-type]


def test_listing_groups_by_quant_and_joins_parts(hub: FakeHub, client: HubClient) -> None:
    files = {
        "model-Q4_K_M.gguf": b"a" * 100,
        "model-Q5_K_M.gguf": b"b" * 120,
        "model-IQ3_XS.gguf": b"c" * 80,
        "model-f16.gguf": b"d" * 400,
        "Q8_0/model-Q8_0-00001-of-00003.gguf": b"e" * 50,
        "Q8_0/model-Q8_0-00002-of-00003.gguf": b"f" * 60,
        "Q8_0/model-Q8_0-00003-of-00003.gguf": b"g" * 70,
        "README.md": b"hello",
    }
    add_repo(hub, "o/model-GGUF", files)
    listing = client.list_models("o/model-GGUF")
    by_quant = group_by_quant(listing.models)
    assert set(by_quant) == {"Q4_K_M", "Q5_K_M", "IQ3_XS", "F16", "Q8_0"}
    (q8,) = by_quant["Q8_0"]
    assert q8.name == "model-Q8_0.gguf" and q8.complete
    assert [p.filename.rsplit("/", 1)[1] for p in q8.parts] == [
        "model-Q8_0-00001-of-00003.gguf", "model-Q8_0-00002-of-00003.gguf", "model-Q8_0-00003-of-00003.gguf",
    ]
    assert q8.size == 180
    assert by_quant["Q4_K_M"][0].size == 100
    assert all(len(p.sha256 or "") == 64 for m in listing.models for p in m.parts)


def test_incomplete_set_is_flagged(hub: FakeHub, client: HubClient) -> None:
    add_repo(hub, "o/m", {"m-Q4_0-00001-of-00002.gguf": b"x"})
    (m,) = client.list_models("o/m").models
    assert not m.complete


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
        ("qwen2.5-7b-instruct-q5_k_m-00001-of-00002.gguf", "Q5_K_M"),
        ("model.IQ2_XXS.gguf", "IQ2_XXS"),
        ("model-IQ4_NL.gguf", "IQ4_NL"),
        ("phi-3-BF16.gguf", "BF16"),
        ("ggml-model-f16.gguf", "F16"),
        ("Q8_0/m.gguf", "Q8_0"),
        ("UD-Q4_K_XL.gguf", "Q4_K_XL"),
        ("mystery.gguf", "other"),
    ],
)
def test_quant_of(name: str, quant: str) -> None:
    assert quant_of(name) == quant


def test_split_part() -> None:
    assert split_part("a-00002-of-00003.gguf") == ("a", 2, 3)
    assert split_part("a-00004-of-00003.gguf") is None
    assert split_part("a.gguf") is None
