"""Stop strings held back and matched across token boundaries, against a plain reference."""

from __future__ import annotations

import random

from prefill.engine.prompt.stop_strings import StopMatcher


def reference(stops: tuple[str, ...], text: str) -> tuple[str, bool]:
    """What the whole stream should show: everything before the first stop string, and whether one came."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def test_a_stop_split_across_tokens_is_held_back_then_matched() -> None:
    m = StopMatcher(("<|im_end|>",))
    assert m.feed("Hello <|im") == ("Hello ", False)  # could be the stop: held back
    assert m.held == "<|im"
    assert m.feed("_end|> more") == ("", True)


def test_held_text_that_is_not_a_stop_after_all_is_shown() -> None:
    m = StopMatcher(("<|im_end|>", "\nUser:"))
    assert m.feed("a <|i") == ("a ", False)
    assert m.feed("s it\n") == ("<|is it", False)  # the newline may start "\nUser:"
    assert m.flush() == "\n"


def test_the_earliest_stop_wins_whichever_is_listed_first() -> None:
    assert StopMatcher(("world", "o")).feed("hello world") == ("hell", True)


def test_streams_match_the_reference_wherever_the_tokens_are_cut() -> None:
    rng = random.Random(7)
    alphabet = "ab<|>\n"
    for _ in range(5000):
        stops = tuple({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(3)})
        if any(a != b and a in b for a in stops for b in stops):
            continue  # one inside another: the shorter may end a stream first (see StopMatcher)
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        m, shown, hit, i = StopMatcher(stops), "", False, 0
        while i < len(text) and not hit:
            n = rng.randint(1, 4)
            out, hit = m.feed(text[i : i + n])
            shown += out
            i += n
        if not hit:
            shown += m.flush()
        assert (shown, hit) == reference(stops, text), (stops, text)


def test_the_stop_string_met_is_named() -> None:
    m = StopMatcher(("END", "\n\n"))
    assert m.feed("one\n") == ("one", False) and m.matched == ""
    assert m.feed("\ntwo END") == ("", True) and m.matched == "\n\n"  # the earliest, split across feeds
    later = StopMatcher(("END", "x"))
    assert later.feed("a END x") == ("a ", True) and later.matched == "END"
