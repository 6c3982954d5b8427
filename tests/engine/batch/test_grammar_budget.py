"""A grammar-constrained request whose grammar step runs past its budget ends alone: the slots go on."""

from __future__ import annotations

import pytest

from prefill.engine.batch.request import BatchRequest, Failed
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.events import Token
from prefill.engine.llama import grammar_sampler
from prefill.engine.llama.grammar_sampler import Constraint
from tests.engine.batch.test_scheduler import GREEDY, WAIT_S, Collector, prompt_of, run, sched  # noqa: F401


def test_a_grammar_step_over_budget_ends_that_request_only(sched: BatchScheduler,  # noqa: F811
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grammar_sampler, "STEP_BUDGET_S", -1.0)  # every grammar step runs past it
    plain = run(sched, prompt_of(sched, "abc def"))
    slow = Collector()
    sched.submit(BatchRequest(prompt_of(sched, "ghi jkl"), GREEDY, slow, constraint=Constraint("root ::= [a-z ]*")))
    assert slow.done.wait(WAIT_S)
    end = slow.events[-1]
    assert isinstance(end, Failed) and "ms to judge one token" in end.message, end
    assert not any(isinstance(e, Token) for e in slow.events)  # ended at its first token
    assert plain.wait().reason == "length"  # the other slot never noticed
    assert run(sched, prompt_of(sched, "again")).wait().reason == "length"  # and the slots still serve
