"""How long a draft to check: acceptance per kind of draft, the measured decode costs, and how drafts
share one decode."""

from __future__ import annotations

import pytest

from prefill.engine.drafts.draft_length import PROBE_EVERY, DecodeCosts, DraftLength, share
from prefill.engine.drafts.ngram_draft import match_prior


def test_draft_length_grows_shrinks_and_backs_off() -> None:
    length = DraftLength(start=4, most=16)
    assert length.want() == 4
    length.taken(4, 4)
    assert length.want() == 8
    length.taken(8, 2)
    assert length.want() == 3
    length.taken(3, 0)
    assert length.want() == 0  # a miss at the first token: skip one lookup
    assert length.want() == 1
    length.taken(1, 0)
    assert [length.want() for _ in range(3)] == [0, 0, 1]  # the back-off doubles
    length.taken(1, 1)
    assert length.want() == 2


def test_drafts_are_checked_only_where_they_pay_at_the_measured_costs() -> None:
    cheap = DraftLength(start=8, most=16)  # a GPU: a batch costs little more than one token
    cheap.cost(1, 0.010)
    cheap.cost(2, 0.0105)
    cheap.cost(9, 0.012)
    assert cheap.want() >= 4  # the length that brings the most tokens per second at 1 in 2
    dear = DraftLength(start=8, most=16)  # a CPU where each checked token costs 60% of a step
    dear.cost(1, 0.010)
    dear.cost(2, 0.013)
    dear.cost(9, 0.013 + 7 * 0.006)
    dear.taken(8, 2)  # and drafts are mostly rejected
    wants = [dear.want() for _ in range(64)]
    # only a probe now and then, as long as acceptance alone says (2 of 8 taken: 3)
    assert wants.count(0) >= 62 and wants[31] == 3 and wants[63] == 3
    for _ in range(12):
        dear.taken(1, 1)  # the probes are taken: the text now repeats
    assert dear.want() > 0
    unweighed = DraftLength(start=8, most=16, weigh=False)
    unweighed.cost(1, 0.010)
    unweighed.cost(9, 1.0)
    assert unweighed.want() == 8


def test_acceptance_is_counted_per_token_and_long_drafts_follow_a_high_rate() -> None:
    # Measured here: a step 7.2 ms, a batch about 8.5 ms + 3.2 ms per token.
    costs = DecodeCosts()
    for n, ms in ((1, 7.2), (2, 14.9), (17, 62.9)):
        costs.add(n, ms / 1000)
    assert costs.line() == pytest.approx((0.0085, 0.0032))
    length = DraftLength(most=16, costs=costs)
    for _ in range(10):
        length.taken(16, 16)
    length.taken(16, 3)  # three right, then one wrong: p stays high, 13 were never judged
    assert length.p > 0.9
    assert length.want() >= 8
    for _ in range(10):
        length.taken(4, 0)  # the text changed: nothing drafted is right any more
    assert length.want() == 0
    # Two sizes close together do not make a line: the first extra token is dearer than the rest.
    near = DecodeCosts()
    for n, ms in ((1, 7.2), (2, 14.9), (3, 18.0)):
        near.add(n, ms / 1000)
    assert near.line() is None


def test_each_kind_of_draft_is_judged_apart() -> None:
    length = DraftLength(most=16, weigh=False, prior=match_prior)
    assert length.want(-1) == 0  # nothing to draft from: no lookup, no back-off
    assert length.chance(8) > 0.95 and length.chance(2) < 0.7  # the priors
    length.want(8)
    length.taken(10, 10)
    length.want(2)
    for _ in range(6):
        length.taken(4, 0)  # short matches are wrong here
    assert length.chance(2) < 0.2
    assert length.chance(8) > 0.95  # what short matches did says nothing of long ones


def costs_of(single_ms: float, a_ms: float, b_ms: float) -> DecodeCosts:
    costs = DecodeCosts()
    costs.add(1, single_ms / 1000)
    for n in (4, 20):
        costs.add(n, (a_ms + b_ms * n) / 1000)
    return costs


def test_slots_share_the_room_by_what_their_drafts_bring() -> None:
    costs = costs_of(10.0, 8.0, 3.0)  # four slots' plain step: 20 ms, 200 tok/s
    sure, unsure = (0.95, 16), (0.3, 16)
    lengths = share(costs, 4, [sure, unsure], room=64)
    assert lengths is not None and lengths[0] >= 5 and lengths[1] == 0
    assert share(costs, 4, [sure, unsure], room=5) == [5, 0]  # the batch's room bounds them together
    assert share(costs, 4, [(0.95, 3), (0.9, 16)], room=64)[0] == 3  # nor past a slot's own limit
    both = share(costs, 4, [(0.95, 16), (0.95, 16)], room=64)
    assert both is not None and abs(both[0] - both[1]) <= 1  # alike slots get alike drafts
    # 0.7 of a token in 3 ms beats the step's 200 tok/s, but not by MARGIN: what the costs leave out may eat that
    assert share(costs, 4, [(0.7, 16)], room=64) == [0]
    dear = costs_of(10.0, 8.0, 9.0)  # a drafted token costs nearly a step
    assert share(dear, 4, [(0.5, 16), (0.3, 16)], room=64) == [0, 0]


def test_a_lone_slot_weighs_drafts_against_a_plain_step() -> None:
    costs = costs_of(10.0, 8.0, 3.0)
    assert share(costs, 1, [(0.95, 16)], room=16)[0] > 4
    slow_batches = costs_of(10.0, 12.0, 3.0)  # a 2-token batch (18 ms) for 1.3 tokens is worse than a 10 ms step
    assert share(slow_batches, 1, [(0.3, 16)], room=16) == [0]


def test_nothing_is_shared_until_the_costs_are_known() -> None:
    assert share(DecodeCosts(), 4, [(0.9, 16)], room=16) is None
    batches_only = DecodeCosts()
    batches_only.add(4, 0.02)
    batches_only.add(12, 0.044)
    assert share(batches_only, 4, [(0.9, 16)], room=16) is not None  # slots need no one-token step
    assert share(batches_only, 1, [(0.9, 16)], room=16) is None  # a lone answer does


def test_a_draft_as_dear_as_a_step_is_never_tried() -> None:
    """A draft model whose every guess costs about a main step cannot pay even when always right:
    no draft, and no probe either (each probe would first catch the draft model up on the text)."""
    costs = costs_of(10.0, 8.0, 3.0)
    assert share(costs, 1, [(1.0, 16)], room=16, guess=0.0)[0] > 0
    assert share(costs, 1, [(1.0, 16)], room=16, guess=0.009) == [0]  # 3 + 9 ms a token against a 10 ms step
    cheap_guess = share(costs, 1, [(0.9, 16)], room=16, guess=0.001)[0]
    assert 0 < cheap_guess <= share(costs, 1, [(0.9, 16)], room=16)[0]  # a priced guess never lengthens a draft
    dear = DraftLength(most=16, costs=costs, guess=0.009)
    assert [dear.want() for _ in range(3 * PROBE_EVERY)] == [0] * (3 * PROBE_EVERY)
    dear.cost(1, 0.010)  # a plain step says nothing of the guesses' price
    assert dear.guess == 0.009


def test_acceptance_kept_across_answers_starts_the_next_one_where_it_left() -> None:
    judged: dict[int, list[float]] = {}
    first = DraftLength(most=16, weigh=False, judged=judged)
    first.want(0)
    for _ in range(10):
        first.taken(8, 8)
    second = DraftLength(most=16, weigh=False, judged=judged)
    assert second.chance(0) == first.chance(0) > 0.9
    assert DraftLength(most=16, weigh=False).chance(0) == 0.5  # a new source starts from its prior


def test_a_plain_decode_is_priced_as_measured_where_it_was() -> None:
    costs = DecodeCosts()
    for n, ms in ((14, 100.0), (30, 190.0), (60, 330.0)):  # drafted steps: the line's intercept is high
        costs.add(n, ms / 1000)
    assert costs.plain(4) == pytest.approx(costs.line()[0] + 4 * costs.line()[1])  # type: ignore[index]
    costs.add(4, 0.046)
    assert costs.plain(4) == pytest.approx(0.046)  # a four-slot step without drafts, as it took
