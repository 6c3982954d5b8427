"""The row functions behind LlamaRuntime.top_two_at/top_prob and BatchRuntime.lead_at/top_prob_at."""

import numpy as np
import pytest

from prefill.engine.llama.runtime import lead_of, top_prob_of


def test_lead_of_is_the_gap_to_the_runner_up() -> None:
    row = np.array([0.5, 3.0, 1.0, 2.5], dtype=np.float32)
    assert lead_of(row) == (1, pytest.approx(0.5))


def test_lead_of_a_tie_is_the_first_tied_with_no_lead() -> None:
    assert lead_of(np.array([1.0, 2.0, 2.0], dtype=np.float32)) == (1, 0.0)


def test_lead_of_a_one_token_vocabulary_is_infinite() -> None:
    assert lead_of(np.array([1.0], dtype=np.float32)) == (0, np.inf)


def test_lead_of_leaves_the_row_as_it_was() -> None:
    row = np.array([0.0, 4.0, 1.0], dtype=np.float32)
    lead_of(row)
    assert row.tolist() == [0.0, 4.0, 1.0]


def test_top_prob_of_is_the_softmax_of_the_likeliest() -> None:
    row = np.array([0.0, np.log(3.0)], dtype=np.float32)
    best, p = top_prob_of(row)
    assert best == 1 and p == pytest.approx(0.75)
    assert top_prob_of(np.array([7.0], dtype=np.float32)) == (0, 1.0)
