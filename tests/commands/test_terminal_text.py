"""The one filter between outside text and the terminal: whatever comes in, however it is cut,
nothing a terminal would obey comes out, and what it would only show is left alone."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from prefill.commands.terminal_text import terminal_json, terminal_line, terminal_text

# What a terminal obeys or reorders: C0 (but \n and \t), DEL and C1, the bidi controls, the line
# and paragraph separators, and lone surrogates (which no encoding writes).
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
FORBIDDEN = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}\u2028\u2029\ud800-\udfff]")
SPECIAL = [chr(c) for c in (*range(0x20), *range(0x7f, 0xa0))] + list(BIDI) + [
    "\u2028", "\u2029", "\ud800", "\udfff", "\x1b[8m", "\x1b]0;title\x07", "\x1bP+q\x1b\\", "\x9b2J", "\\", "é", "漢",
    "👩\u200d💻", "\n", "\t", "a", " "]
# Any code point, surrogates included, with what a terminal obeys drawn often.
ANY_CHAR = st.one_of(st.sampled_from(SPECIAL), st.characters(exclude_categories=()))
TEXT = st.lists(ANY_CHAR, max_size=60).map("".join)


def cut(text: str, points: list[int]) -> list[str]:
    """`text` cut at `points` (any positions, in any order): the pieces of a stream."""
    at = sorted({p % (len(text) + 1) for p in points})
    return [text[a:b] for a, b in zip([0, *at], [*at, len(text)])]


@given(TEXT, st.lists(st.integers(min_value=0), max_size=8))
def test_no_piece_of_any_stream_carries_a_control(text: str, points: list[int]) -> None:
    pieces = [terminal_text(p) for p in cut(text, points)]
    shown = "".join(pieces)
    assert not FORBIDDEN.search(shown)
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == terminal_text(text)  # cut anywhere, the same as whole: a split escape is harmless
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")
    shown.encode("utf-8")  # strict: every character can reach the terminal


@given(TEXT)
def test_a_name_stays_on_its_line(text: str) -> None:
    shown = terminal_line(text)
    assert not re.search("[\x00-\x1f\x7f-\x9f]", shown) and not FORBIDDEN.search(shown)
    assert terminal_line(shown) == shown  # nothing left to escape


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_text_with_nothing_to_obey_is_unchanged(text: str) -> None:
    assert terminal_text(text) == text and terminal_line(text) == text


@given(st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=12))
def test_json_stays_the_same_json(value: object) -> None:
    for ensure_ascii in (False, True):
        shown = terminal_json(json.dumps(value, ensure_ascii=ensure_ascii))
        assert not re.search("[\x00-\x1f\x7f-\x9f]", shown) and not FORBIDDEN.search(shown)
        # what the JSON itself means: a lone high and low surrogate written apart read back as one character
        assert json.loads(shown) == json.loads(json.dumps(value, ensure_ascii=ensure_ascii))


def test_each_is_shown_as_a_visible_escape() -> None:
    assert terminal_text("a\x1b[8mb\x07\r\x00\x9b\u202ec\n\td") == "a\\x1b[8mb\\x07\\r\\x00\\x9b\\u202ec\n\td"
    assert terminal_line("x\n\ty\u2066") == "x\\n\\ty\\u2066"
    assert terminal_json(json.dumps("\x1b\x85\u202e", ensure_ascii=False)) == '"\\u001b\\u0085\\u202e"'
