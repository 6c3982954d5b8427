"""RowHeights answers as plain sums over a list do, through every kind of edit."""

from __future__ import annotations

import random

from prefill.ui.chat.transcript.row_heights import RowHeights, estimate_heights


def check(tree: RowHeights, plain: list[int]) -> None:
    assert len(tree) == len(plain)
    assert [tree[i] for i in range(len(plain))] == plain
    assert [tree.top(i) for i in range(len(plain) + 1)] == [
        sum(plain[:i]) for i in range(len(plain) + 1)
    ]
    assert tree.total() == sum(plain)
    for y in range(-3, sum(plain) + 3, 7):
        row = tree.row_at(y)
        if not plain:
            assert row == -1
        elif y < 0:
            assert row == 0
        elif y >= sum(plain):
            assert row == len(plain) - 1
        else:
            assert tree.top(row) <= y < tree.top(row) + plain[row]


def test_matches_plain_sums_through_random_edits() -> None:
    rng = random.Random(12)
    plain = [rng.randint(0, 90) for _ in range(37)]
    tree = RowHeights(plain)
    check(tree, plain)
    for _ in range(300):
        op = rng.choice(["set", "append", "insert", "remove_tail", "remove_middle"])
        if op == "set" and plain:
            i, h = rng.randrange(len(plain)), rng.randint(0, 90)
            plain[i] = h
            tree.set(i, h)
        elif op == "append":
            h = rng.randint(0, 90)
            plain.append(h)
            tree.append(h)
        elif op == "insert":
            i, hs = (
                rng.randint(0, len(plain)),
                [rng.randint(0, 90) for _ in range(rng.randint(1, 3))],
            )
            plain[i:i] = hs
            tree.insert(i, hs)
        elif op == "remove_tail" and plain:
            first = rng.randrange(len(plain))
            del plain[first:]
            tree.remove(first, len(tree) - 1)
        elif op == "remove_middle" and len(plain) > 2:
            first = rng.randrange(len(plain) - 2)
            last = rng.randrange(first, len(plain) - 1)
            del plain[first : last + 1]
            tree.remove(first, last)
        check(tree, plain)


def test_empty_and_negative_heights() -> None:
    tree = RowHeights()
    check(tree, [])
    tree.append(-5)
    assert tree[0] == 0 and tree.row_at(10) == 0


def test_estimates_grow_with_text_and_narrow_width() -> None:
    short, long_, lines = estimate_heights(["hi", "word " * 400, "a\nb\nc\nd"], 600, 18, 7.0, 40)
    assert short == 40 + 18
    assert long_ > short and lines == 40 + 4 * 18
    (narrow,) = estimate_heights(["word " * 400], 200, 18, 7.0, 40)
    assert narrow > long_
