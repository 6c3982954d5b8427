"""Drafts from the text itself: what followed the latest occurrence of the longest n-gram, and which
kind of draft (the n-gram's length) that is."""

from __future__ import annotations

import pytest

from prefill.engine.drafts.ngram_draft import NgramIndex, match_prior


def test_index_drafts_what_followed_the_latest_occurrence() -> None:
    index = NgramIndex([1, 2, 3, 4, 5, 9, 9, 1, 2, 3, 7, 8, 1, 2, 3])
    assert index.draft(3) == [7, 8, 1]  # the latest "1 2 3" was followed by 7 8
    assert index.draft(1) == [7]
    assert index.draft(0) == []
    index.append(7)
    assert index.draft(16) == [8, 1, 2, 3, 7]  # up to the end of the history


def test_index_prefers_the_longest_n_gram_and_finds_nothing_new() -> None:
    index = NgramIndex([5, 6, 7, 1, 2, 8, 6, 7, 1, 2])
    assert index.draft(2) == [8, 6]  # the 4-gram "6 7 1 2" decides, not the later bigram
    index = NgramIndex([10, 11, 12, 13])
    assert index.draft(4) == []
    index = NgramIndex([1, 2, 3, 1])
    assert index.draft(4) == []  # a 1-gram is not enough (n from 4 down to 2)
    index.append(2)
    assert index.draft(4) == [3, 1, 2]


def test_index_truncate_forgets_what_went() -> None:
    index = NgramIndex([1, 2, 3, 4, 1, 2])
    assert index.draft(2) == [3, 4]
    index.truncate(4)
    assert len(index) == 4 and index.draft(2) == []
    index.extend([1, 2])
    assert index.draft(2) == [3, 4]
    with pytest.raises(ValueError):
        NgramIndex(n_min=3, n_max=2)


def test_kind_is_the_length_of_the_n_gram_matched() -> None:
    index = NgramIndex([5, 6, 7, 1, 2, 8, 6, 7, 1, 2])
    assert index.kind() == 4  # "6 7 1 2" occurred before
    assert index.draft(2) == [8, 6]
    index.append(9)
    assert index.kind() == -1 and index.draft(4) == []  # "2 9" never did
    index.append(5)
    assert index.kind() == -1  # "9 5" neither: a 1-gram is not enough
    index.truncate(9)
    assert index.kind() == 3  # after truncating, "6 7 1" is the history's end again (it ends "7 1")


def test_longer_matches_start_from_higher_hopes() -> None:
    chances = [right / (right + wrong) for right, wrong in map(match_prior, range(2, 9))]
    assert chances == sorted(chances) and chances[0] < 0.7 < 0.95 < chances[-1]
