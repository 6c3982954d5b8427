"""The server's rule for drafts, on synthetic step timings (no model): drafts that realise more tokens per
second than plain steps go on, those that cost stop and try again later, and probes keep the plain
step's time fresh."""

from __future__ import annotations

import pytest

from prefill.engine.drafts.draft_length import PROBE_EVERY
from prefill.engine.drafts.step_rates import (
    COST_PROBE_FIRST,
    COST_SAMPLES,
    FIRST_JUDGED,
    RETRY_FIRST,
    RETRY_MOST,
    DraftGate,
    StepRates,
)

ROWS = 4
PLAIN_S = 0.040  # a plain step of four rows: 100 tokens a second


def rates_after_plain(step: int = 0) -> StepRates:
    rates = StepRates()
    assert rates.probe_due(ROWS, step)  # nothing measured: the first step at four rows drafts nothing
    rates.plain(ROWS, ROWS, PLAIN_S, step)
    assert not rates.probe_due(ROWS, step + 1) and rates.plain_time(ROWS) == PLAIN_S
    return rates


def test_drafts_that_pay_go_on() -> None:
    rates, gate = rates_after_plain(), DraftGate()
    for step in range(1, 40):
        assert rates.may_draft(gate, step, ROWS)
        # 8 drafted tokens add 10 ms (a quarter of a step: worth 1 token) and bring 3 more tokens
        rates.drafted(ROWS, ROWS + 3, PLAIN_S + 0.010, step, [(gate, 8, 4)])
    assert gate.stops == 0 and gate.pays(ROWS)
    assert rates.drafted_over_plain() == pytest.approx(1.4)  # 7 tokens in 50 ms against 4 in 40


def test_drafts_that_cost_stop_wait_and_try_again_with_a_longer_wait_each_time() -> None:
    rates, gate = rates_after_plain(), DraftGate()
    step = 1
    # 8 drafted tokens add 20 ms (half a step: worth 2 tokens) and bring 1 more: the batch loses
    for _ in range(FIRST_JUDGED):
        assert rates.may_draft(gate, step, ROWS)
        rates.drafted(ROWS, ROWS + 1, PLAIN_S + 0.020, step, [(gate, 8, 2)])
        step += 1
    assert gate.stops == 1 and not rates.may_draft(gate, step, ROWS)
    assert rates.may_draft(gate, step, ROWS - 1)  # once a request ends, the others' drafts cost less: a try
    assert rates.may_draft(gate, step - 1 + RETRY_FIRST, ROWS)  # one try after the wait
    step = step - 1 + RETRY_FIRST
    rates.drafted(ROWS, ROWS + 1, PLAIN_S + 0.020, step, [(gate, 8, 2)])  # that try costs too
    assert gate.stops == 2 and not rates.may_draft(gate, step + RETRY_FIRST, ROWS)
    assert rates.may_draft(gate, step + 2 * RETRY_FIRST, ROWS)  # the wait doubled
    for _ in range(20):
        step = gate.resume_at
        rates.drafted(ROWS, ROWS, PLAIN_S + 0.020, step, [(gate, 8, 1)])
    assert gate.resume_at - step == RETRY_MOST  # and no longer than RETRY_MOST
    assert rates.drafted_over_plain() < 1.0
    # a try that pays ends the waits
    step = gate.resume_at
    rates.drafted(ROWS, ROWS + 6, PLAIN_S + 0.010, step, [(gate, 8, 7)])
    assert gate.pays(ROWS) and rates.may_draft(gate, step + 1, ROWS) and gate.wait == RETRY_FIRST


def test_a_slot_whose_drafts_cost_stops_while_one_whose_drafts_pay_goes_on() -> None:
    """In one step, the time the drafts add is shared by their drafted tokens: each slot is judged on
    what its own drafts brought for their share."""
    rates, copying, chatting = rates_after_plain(), DraftGate(), DraftGate()
    for step in range(1, 1 + FIRST_JUDGED):
        # 16 drafted tokens add 16 ms; the copying slot's 8 bring 6 tokens, the other's 8 bring none
        rates.drafted(ROWS, ROWS + 6, PLAIN_S + 0.016, step, [(copying, 8, 7), (chatting, 8, 1)])
    step = FIRST_JUDGED + 1
    assert rates.may_draft(copying, step, ROWS) and not rates.may_draft(chatting, step, ROWS)
    assert copying.cost == pytest.approx(0.2) and chatting.cost == pytest.approx(0.2)  # 8 ms each: a fifth of a step


def test_probes_keep_the_plain_rate_fresh() -> None:
    rates, gate = rates_after_plain(), DraftGate()
    assert not rates.probe_due(ROWS, PROBE_EVERY - 1)
    assert rates.probe_due(ROWS, PROBE_EVERY)  # the plain time at four rows is due again
    assert rates.probe_due(ROWS - 1, 1)  # and at three rows it was never measured
    # the machine slowed down: plain steps now take 80 ms, and the probes see it
    for step in range(PROBE_EVERY, 20 * PROBE_EVERY, PROBE_EVERY):
        rates.plain(ROWS, ROWS, 0.080, step)
        assert not rates.probe_due(ROWS, step + 1)
    assert abs(rates.plain_time(ROWS) - 0.080) < 0.001
    # drafted steps of 90 ms that bring 2 more tokens pay against an 80 ms plain step (not against 40)
    step = 20 * PROBE_EVERY
    for i in range(4):
        rates.drafted(ROWS, ROWS + 2, 0.090, step + i, [(gate, 4, 3)])
    assert gate.stops == 0 and rates.may_draft(gate, step + 4, ROWS)


def test_a_drafted_step_before_any_plain_one_is_not_judged() -> None:
    rates, gate = StepRates(), DraftGate()
    rates.drafted(ROWS, ROWS, 1.0, 1, [(gate, 8, 1)])
    assert gate.judged == 0 and rates.may_draft(gate, 2, ROWS) and rates.drafted_totals.steps == 0


def test_the_report_has_each_part_of_a_step() -> None:
    rates = rates_after_plain()
    gate = DraftGate()
    parts = {"build": 0.001, "draft": 0.002, "events": 0.0, "decode": 0.040, "take": 0.007}
    rates.drafted(ROWS, ROWS + 4, 0.050, 1, [(gate, 8, 5)], parts)
    report = rates.report()
    drafted = report["drafted"]
    assert isinstance(drafted, dict)
    assert drafted["steps"] == 1 and drafted["ms_by_part"] == {"build": 1.0, "draft": 2.0, "events": 0.0,
                                                               "decode": 40.0, "take": 7.0}
    assert drafted["tokens_per_step"] == 8 and drafted["drafted_per_step"] == 8
    assert report["drafted_over_plain"] == 1.6


def test_drafts_are_no_longer_than_their_last_token_pays_for_and_none_where_none_could() -> None:
    rates, gate = rates_after_plain(), DraftGate()
    assert rates.longest(ROWS, 0.9) is None and not rates.hopeless(ROWS)  # no drafted step measured yet
    # 8 drafted tokens add 4 ms: each an 80th of a plain step, worth a 20th of a token at four rows
    for step in range(1, 1 + COST_SAMPLES):
        assert rates.token_cost(ROWS) is None  # not on one step: a busy moment is not a price
        rates.drafted(ROWS, ROWS + 7, PLAIN_S + 0.004, step, [(gate, 8, 8)])
    assert rates.token_cost(ROWS) == pytest.approx(1 / 80)
    assert rates.longest(ROWS, 1.0) is None  # a token always taken always pays
    assert rates.longest(ROWS, 0.8) == 13  # 0.8^13 = 0.055 > 0.05 * 1.02 > 0.8^14
    assert rates.longest(ROWS, 0.04) == 0
    # one step slowed by something else does not make drafts hopeless: the price is a sum over a sum
    rates.drafted(ROWS, ROWS, PLAIN_S * 3, COST_SAMPLES + 1, [(gate, 1, 1)])
    assert not rates.hopeless(ROWS)
    # a CPU's batch: every drafted token adds a quarter of a four-row step, worth a whole token
    cpu = rates_after_plain()
    for step in range(1, 1 + COST_SAMPLES):
        cpu.drafted(ROWS, ROWS + 4, 2 * PLAIN_S, step, [(DraftGate(), 4, 5)])
    assert cpu.hopeless(ROWS) and cpu.longest(ROWS, 0.99) == 0
    first = COST_SAMPLES + COST_PROBE_FIRST
    assert not cpu.cost_probe_due(ROWS, first - 1) and cpu.cost_probe_due(ROWS, first)
    cpu.drafted(ROWS, ROWS + 4, 2 * PLAIN_S, first, [(DraftGate(), 4, 5)])  # the probe confirms it
    # the next probe after twice the wait
    assert not cpu.cost_probe_due(ROWS, first + 2 * COST_PROBE_FIRST - 1)
    assert cpu.cost_probe_due(ROWS, first + 2 * COST_PROBE_FIRST)
    assert not cpu.hopeless(1)  # each count of rows on its own: at one row the cost is not known
