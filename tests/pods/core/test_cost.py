"""pods.core.cost: the cost of a run so far, and w measured from a run's phase times."""

import pytest
import torch

from pods.core.cost import cost_metrics, measure_weight, spent
from pods.errors import ResultsError


def row(step, gen_tokens, trained_tokens, gen_s, update_s):
    return {"step": step, "cost/tokens_generated": gen_tokens, "cost/tokens_trained": trained_tokens,
            "time/generation": gen_s, "time/update": update_s}


def test_spent_is_generated_plus_w_times_trained():
    assert spent(None, 2.0) == 0.0
    assert spent({"cost/tokens_generated_total": 100, "cost/tokens_trained_total": 30}, 2.5) == 175.0


def test_w_is_the_median_training_cost_per_token_over_the_median_generation_cost():
    # generation 1 ms per token in every step; the update 3, 4 and 50 ms per trained token: the median is 4
    rows = {1: row(1, 100, 10, 0.1, 0.03), 2: row(2, 200, 10, 0.2, 0.04), 3: row(3, 100, 10, 0.1, 0.5)}
    assert measure_weight([rows]) == pytest.approx(4.0)
    # two runs pool their steps: 3, 4, 4, 50 -> 4
    assert measure_weight([rows, {1: row(1, 50, 5, 0.05, 0.02)}]) == pytest.approx(4.0)


def test_w_skips_rows_without_the_cost_ledger_and_says_when_none_has_it():
    rows = {1: row(1, 100, 10, 0.1, 0.04), 2: {"step": 2, "time/update": 9.0}}
    assert measure_weight([rows]) == pytest.approx(4.0)
    with pytest.raises(ResultsError, match="no metrics rows"):
        measure_weight([{2: rows[2]}])


def test_cost_metrics_count_every_round_and_carry_running_totals():
    row = cost_metrics(generated=[torch.tensor([[3, 4], [5, 6]]), torch.tensor([[1, 1]])], trained_tokens=9,
                       rollouts_trained=2, prompts_skipped=3, rounds=2, previous={"cost/tokens_generated_total": 100})
    assert row["cost/tokens_generated"] == 20 and row["cost/rollouts_generated"] == 6 and row["cost/rounds"] == 2
    assert row["cost/tokens_trained"] == 9 and row["cost/rollouts_trained"] == 2 and row["cost/prompts_skipped"] == 3
    assert row["cost/tokens_generated_total"] == 120 and row["cost/tokens_trained_total"] == 9
    assert row["cost/prompts_skipped_total"] == 3
