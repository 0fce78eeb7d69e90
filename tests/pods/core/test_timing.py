"""pods.core.timing: a step's modelled seconds from the cost ledger, planned counts, the fit."""

import numpy as np
import pytest

from pods.core.cost import COST_TOTAL
from pods.core.timing import (
    CONSTANTS,
    expected_longest,
    fit,
    harmonic_step_seconds,
    nnls,
    planned_counts,
    seconds_spent,
    step_seconds,
)

C = {"fixed": 1.0, "batch": 0.5, "decode_step": 0.01, "token": 0.001, "padded_token": 0.0, "prompt_token": 0.0,
     "context_token": 1e-6, "update_token": 0.002, "reference_token": 0.0005}


def test_a_step_costs_fixed_plus_each_constant_times_its_count_and_the_reference_only_where_it_runs():
    counts = {"generation_batches": 2, "decode_steps": 100, "tokens_generated": 1000, "context_tokens": 10**5,
              "tokens_updated": 400}
    base = 1.0 + 2 * 0.5 + 100 * 0.01 + 1000 * 0.001 + 0.1 + 400 * 0.002
    assert step_seconds(counts, C, reference=False) == pytest.approx(base)
    assert step_seconds(counts, C, reference=True) == pytest.approx(base + 400 * 0.0005)


def test_a_runs_seconds_follow_from_its_totals_and_its_step_count():
    rows = [{"generation_batches": 1, "decode_steps": 50 + s, "tokens_generated": 300 + 7 * s, "tokens_updated": 90}
            for s in range(5)]
    totals = {t: sum(r.get(k, 0) for r in rows) for k, t in COST_TOTAL.items()}
    last = {"step": 5, **totals, "cost/tokens_trained_total": 0}
    assert seconds_spent(last, C, reference=True) == pytest.approx(sum(step_seconds(r, C, reference=True) for r in rows))
    assert seconds_spent(None, C, reference=True) == 0.0


def test_the_longest_of_a_batch_grows_with_its_size_and_stops_at_the_limit():
    assert expected_longest(200, 1, 512) == 200
    assert 200 < expected_longest(200, 16, 512) < expected_longest(200, 256, 512) < 512
    assert expected_longest(450, 256, 512) == 512


def test_planned_counts_chunk_a_call_and_count_what_the_ledger_counts():
    c = planned_counts(prompts=2, n=8, m=4, prompt_tokens=10, completion_tokens=20, max_tokens=20, batch_size=6)
    assert c["generation_batches"] == 3 and c["decode_steps"] == 60  # 6 + 6 + 4 sequences, each batch at the limit
    assert c["tokens_padded"] == 16 * 20 == c["tokens_generated"] and c["prompt_tokens"] == 160
    assert c["tokens_updated"] == 2 * 4 * 30 and c["context_tokens"] == 16 * (10 * 20 + 200)


def test_nnls_keeps_constants_non_negative_and_solves_the_unconstrained_case():
    rng = np.random.default_rng(0)
    A = np.abs(rng.normal(size=(20, 3)))
    x = np.array([0.5, 0.0, 2.0])
    assert nnls(A, A @ x) == pytest.approx(x, abs=1e-9)
    b = A @ np.array([1.0, -3.0, 1.0])  # the least-squares answer has a negative entry: it is held at 0
    got = nnls(A, b)
    assert (got >= 0).all() and got[1] == 0.0


def test_fit_recovers_the_constants_that_made_the_points():
    truth = {**{c: 0.0 for c in CONSTANTS}, "fixed": 0.7, "decode_step": 0.02, "token": 3e-4, "update_token": 4e-4}
    points = []
    for n in (8, 16, 64, 256):
        for m in (2, 8, 16):
            for L in (150.0, 300.0):
                k = planned_counts(prompts=1, n=n, m=m, prompt_tokens=100, completion_tokens=L, max_tokens=512)
                points.append((k, step_seconds(k, truth, reference=False)))
    got = fit(points, ("fixed", "decode_step", "token", "update_token"), {"prompt_token": 0.0}, reference=False)
    for c in ("fixed", "decode_step", "token", "update_token"):
        assert got[c] == pytest.approx(truth[c], rel=1e-6)
    assert set(got) == set(CONSTANTS)
    with pytest.raises(ValueError, match="positive"):
        fit([(points[0][0], 0.0)], ("fixed",))


def test_the_mean_seconds_per_step_over_equal_stretches_of_time_is_harmonic():
    assert harmonic_step_seconds([10.0, 10.0]) == 10.0
    assert harmonic_step_seconds([5.0, 20.0]) == pytest.approx(8.0)  # 360 + 90 steps in 2 x 30 min
