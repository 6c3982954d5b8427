"""Model-facing tool names and a result's text: pure functions, no server."""

from __future__ import annotations

import re

import mcp_types as types

from prefill.mcp_tools.names import MAX_CHARS, model_names
from prefill.mcp_tools.results import cut_to_budget, result_text

SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def test_names_are_safe_short_and_unique() -> None:
    pairs = [("files", "read"), ("my files", "read file"), ("web", "search"), ("WEB", "search"),
             ("web", "search"), ("ü/ö", "検索"), ("s" * 100, "t" * 100), ("s" * 100, "t" * 100)]
    names = model_names(pairs)
    assert names[:4] == ["files__read", "my_files__read_file", "web__search", "WEB__search_2"]
    assert names[4] == "web__search_3"
    assert names[5] == "x__x"
    assert all(SAFE.match(n) for n in names) and all(len(n) <= MAX_CHARS for n in names)
    assert len({n.lower() for n in names}) == len(names)
    assert names[6].startswith("s" * 24 + "__t") and names[7].endswith("_2")
    assert model_names(pairs) == names  # the same tools always get the same names


def test_content_parts_are_joined_and_the_rest_described() -> None:
    result = types.CallToolResult(content=[
        types.TextContent(type="text", text="first"),
        types.ImageContent(type="image", data="A" * 4000, mime_type="image/png"),
        types.ResourceLink(type="resource_link", name="log", uri="file:///tmp/log"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///a", text="inner")),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(uri="file:///b", blob="AAAA")),
    ])
    text = result_text(result)
    parts = text.split("\n\n")
    assert parts[0] == "first" and parts[3] == "inner"
    assert "an image (image/png, 2.9 KiB)" in parts[1]
    assert "a link to a resource: log at file:///tmp/log" in parts[2]
    assert "file:///b (binary data, 3 B)" in parts[4]


def test_structured_content_alone_is_given_as_json() -> None:
    result = types.CallToolResult(content=[], structured_content={"a": 1})
    assert result_text(result) == '{"a": 1}'


def test_a_result_over_the_budget_is_cut_with_a_note() -> None:
    assert cut_to_budget("short", 100) == ("short", 0)
    text = "é" * 100  # 200 bytes; a cut at an odd byte must not leave half a character
    kept, cut = cut_to_budget(text, 51)
    assert kept.startswith("é" * 25) and not kept.startswith("é" * 26)
    assert cut == 150
    assert "Prefill cut this result" in kept and "200 B of text" in kept and "the last 150 B were left out" in kept
