"""pods.core.cost: the cost of a run so far, and w measured from a run's phase times."""

import pytest
import torch

from pods.core.cost import (
    COST_TOTAL,
    Decoded,
    cost_metrics,
    decoded_batches,
    ledger_totals,
    measure_weight,
    spent,
    step_counts,
)
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


def test_decoded_batches_are_the_call_or_its_chunks():
    # context: each generated token attends to the prompt and the completion before it: P x L + L (L - 1) / 2
    assert decoded_batches([10, 10, 20], [3, 7, 5]) == [(3, 7, 40, 33 + 91 + 110)]
    assert decoded_batches([10, 10, 20], [3, 7, 5], size=2) == [(2, 7, 20, 33 + 91), (1, 5, 20, 110)]
    assert decoded_batches([], []) == []


def test_the_ledger_counts_decoded_batches_and_carries_their_totals():
    batches = decoded_batches([4] * 4, [3, 4, 5, 6], size=2) + [Decoded(2, 1, 8, 8)]  # longest 4, 6, 1
    row = cost_metrics(generated=[torch.tensor([[3, 4], [5, 6]]), torch.tensor([[1, 1]])], trained_tokens=9,
                       rollouts_trained=2, prompts_skipped=0, rounds=2, batches=batches, tokens_updated=17,
                       previous={"step": 1, **{t: 1 for t in COST_TOTAL.values()}})
    assert (row["cost/generation_batches"], row["cost/decode_steps"], row["cost/tokens_padded"]) == (3, 11, 22)
    assert row["cost/prompt_tokens"] == 24 and row["cost/tokens_updated"] == 17
    assert row["cost/context_tokens"] == (12 + 3) + (16 + 6) + (20 + 10) + (24 + 15) + 8
    assert row["cost/decode_steps_total"] == 12 and row["cost/rounds_total"] == 3


def test_rows_that_predate_the_batch_counts_get_estimates():
    old = {"step": 10, "cost/tokens_generated": 400, "cost/rollouts_generated": 8, "cost/tokens_trained": 100,
           "cost/rounds": 1, "cost/tokens_generated_total": 4000, "cost/tokens_trained_total": 1000}
    counts = step_counts(old)  # one batch per round, its longest completion the mean, no padding, prompts unpriced
    assert (counts["generation_batches"], counts["decode_steps"], counts["tokens_padded"]) == (1, 50, 400)
    assert (counts["prompt_tokens"], counts["context_tokens"], counts["tokens_updated"]) == (0, 400 * 50 / 2, 100)
    totals = ledger_totals(old)
    assert totals["tokens_generated"] == 4000 and totals["decode_steps"] == 500 and totals["generation_batches"] == 10
    assert ledger_totals(None) == {}
    # a resumed old run carries the estimate on
    new = cost_metrics(generated=[torch.tensor([[50.0] * 8])], trained_tokens=100, rollouts_trained=4,
                       prompts_skipped=0, rounds=1, previous=old)
    assert new["cost/decode_steps_total"] == 550 and new["cost/tokens_generated_total"] == 4400
