"""Curves (mean over runs, 95% band, grids) and the speed-up math, against hand-computed answers."""

import numpy as np
import pytest
from scipy import stats

from pods.analysis.curves import Curve, setting_curve
from pods.analysis.loaders import Run
from pods.analysis.speedup import KEYS, difference_ci, first_reach, peak, speedup, speedups

T = np.array([0.5, 1.0, 1.5, 2.0])


def run(name, hours, acc, steps=None):
    acc = np.asarray(acc, float)
    steps = np.arange(1, len(hours) + 1) * 10.0 if steps is None else np.asarray(steps, float)
    return Run(name, "S", np.asarray(hours, float), steps, {"gsm8k": {"ans_acc": acc.reshape(len(hours), -1)}})


def curve(label, rows, hours=T):
    names = [f"r{i}" for i in range(len(rows))]
    return Curve(label, np.asarray(hours, float), np.asarray(rows, float), names)


def test_first_reach_grid_and_interpolated():
    y = np.array([0.4, 0.62, 0.7, 0.7])
    assert first_reach(T, y, 0.6) == 1.0
    assert first_reach(T, y, 0.6, interp=True) == pytest.approx(0.5 + 0.5 * 0.2 / 0.22)  # 0.954545...
    assert first_reach(T, y, 0.3, interp=True) == 0.5  # already at the first checkpoint
    assert first_reach(T, y, 0.71) is None and first_reach(T, y, 0.71, interp=True) is None
    assert first_reach(T, np.array([0.1, np.nan, 0.5, 0.6]), 0.3, interp=True) == pytest.approx(0.5 + 1.0 * 0.2 / 0.4)


def test_peak_ties_take_the_earliest():
    assert peak(T, np.array([0.5, 0.6, 0.6, 0.55])) == (0.6, 1.0)
    assert peak(T, np.full(4, np.nan)) == (None, None)


def test_speedups_hand_computed():
    yb = np.array([0.2, 0.5, 0.6, 0.55])  # peak 0.6 at 1.5 h
    ym = np.array([0.4, 0.62, 0.7, 0.7])  # peak 0.7 at 1.5 h (tie with 2.0 h)
    s = speedups(T, yb, T, ym)
    assert (s["baseline_peak"], s["baseline_peak_hours"]) == (0.6, 1.5)
    assert (s["method_peak"], s["method_peak_hours"]) == (0.7, 1.5)
    assert s["method_hours_to_baseline_peak"] == 1.0
    assert s["speedup_exact"] == pytest.approx(1.5)
    assert s["speedup_exact_interp"] == pytest.approx(1.5 / (0.5 + 0.5 * 0.2 / 0.22))
    # 99% of 0.6 = 0.594: baseline first >= at 1.5 h (interp 1.0 + 0.5 * 0.094 / 0.1 = 1.47 h)
    assert s["speedup_99"] == pytest.approx(1.5 / 1.0)
    assert s["speedup_99_interp"] == pytest.approx(1.47 / (0.5 + 0.5 * 0.194 / 0.22))


def test_not_reached_is_none():
    s = speedups(T, np.array([0.2, 0.5, 0.6, 0.55]), T, np.array([0.1, 0.2, 0.3, 0.4]))
    assert s["method_hours_to_baseline_peak"] is None
    assert all(s[k] is None for k in ("speedup_exact", "speedup_exact_interp", "speedup_99", "speedup_99_interp"))
    row = speedup(curve("b", [[0.2, 0.5, 0.6, 0.55]] * 3), curve("m", [[0.1, 0.2, 0.3, 0.4]] * 3), n_boot=20)
    assert row["ci95_exact"] is None and row["ci95_99"] is None
    assert list(row) == list(KEYS)


def test_max_hours_clips_before_peaks():
    b = curve("b", [[0.2, 0.5, 0.6, 0.9]] * 2)
    m = curve("m", [[0.3, 0.6, 0.6, 0.6]] * 2)
    row = speedup(b, m, max_hours=1.5, n_boot=0)
    assert row["baseline_peak_hours"] == 1.5 and row["speedup_exact"] == pytest.approx(1.5)
    assert speedup(b, m, n_boot=0)["speedup_exact"] is None  # 0.9 at 2 h is never reached by the method


def test_bootstrap_degenerate_and_seeded():
    b = curve("b", [[0.2, 0.5, 0.6, 0.55]] * 4)  # identical runs: every resample gives the point estimate
    m = curve("m", [[0.4, 0.62, 0.7, 0.7]] * 4)
    row = speedup(b, m, n_boot=50, seed=1)
    assert row["ci95_exact"] == pytest.approx([1.5, 1.5]) and row["ci95_99"] == pytest.approx([1.5, 1.5])
    noisy_m = curve("m", [[0.4, 0.62, 0.7, 0.7], [0.4, 0.5, 0.55, 0.58], [0.5, 0.6, 0.61, 0.7]])
    r1, r2 = speedup(b, noisy_m, n_boot=200, seed=3), speedup(b, noisy_m, n_boot=200, seed=3)
    assert r1 == r2
    lo, hi = r1["ci95_exact"]
    assert 0.0 <= lo <= hi  # resamples that never reach 0.6 count as 0
    assert 0.0 < r1["never_reached_exact"] < 1.0 and (r1["baseline_runs"], r1["method_runs"]) == (4, 3)


def test_bootstrap_never_reached_share_and_single_runs():
    b = curve("b", [[0.2, 0.5, 0.6, 0.55]] * 2)  # peak 0.6 at 1.5 h in every resample
    fast, slow = [0.4, 0.62, 0.7, 0.7], [0.1, 0.2, 0.3, 0.4]  # fast reaches 0.6 at 1.0 h, slow never
    row = speedup(b, curve("m", [fast, fast, slow]), n_boot=4000, seed=0)
    assert row["speedup_exact"] == pytest.approx(0.75)  # mean (0.3, 0.48, 0.567, 0.6) reaches 0.6 at 2.0 h
    # resamples of 3 with k slow runs: k=0 (8/27) 1.5 x, k=1 (12/27) 0.75 x, k >= 2 (7/27) never reach
    assert row["never_reached_exact"] == pytest.approx(7 / 27, abs=0.03)
    assert row["ci95_exact"] == [0.0, 1.5]
    none = speedup(b, curve("m", [fast, slow]), n_boot=100)  # mean never reaches: no interval, no share
    assert none["speedup_exact"] is None and none["ci95_exact"] is None and none["never_reached_exact"] is None
    one = speedup(curve("b", [[0.2, 0.5, 0.6, 0.55]]), curve("m", [fast, fast]), n_boot=100)
    assert one["baseline_runs"] == 1 and one["speedup_99"] == pytest.approx(1.5)
    assert one["ci95_99"] is None and one["never_reached_99"] is None


def test_setting_curve_mean_band_and_base():
    runs = [run("a", T, [0.1, 0.2, 0.3, 0.4]), run("b", T, [0.3, 0.4, 0.5, 0.6]), run("c", T, [0.2, 0.3, 0.4, 0.5])]
    base = Run("base", "base", np.zeros(1), np.zeros(1), {"gsm8k": {"ans_acc": np.array([[0.05, 0.15]])}})
    c = setting_curve(runs, "gsm8k", "ans_acc", base=base)
    assert c.hours.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert c.mean == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert setting_curve(runs, "gsm8k", "ans_acc", x="steps", base=base).x.tolist() == [0, 10, 20, 30, 40]
    assert c.half_width[1] == pytest.approx(stats.t.ppf(0.975, 2) * 0.1 / np.sqrt(3))  # sd of 0.1,0.3,0.2 = 0.1


def test_setting_curve_missing_checkpoint_stays_on_grid():
    runs = [run("a", T, [0.1, 0.2, 0.3, 0.4]), run("b", T[[0, 1, 3]], [0.3, 0.4, 0.6])]
    c = setting_curve(runs, "gsm8k", "ans_acc")
    assert c.hours.tolist() == T.tolist()
    assert c.mean == pytest.approx([0.2, 0.3, 0.3, 0.5]) and c.n.tolist() == [2, 2, 1, 2]
    assert np.isnan(c.half_width[2])


def test_setting_curve_interpolates_runs_with_own_times():
    runs = [run("a", [1.0, 2.0, 3.0], [0.0, 1.0, 2.0]), run("b", [1.2, 2.2, 3.2], [0.0, 1.0, 2.0])]
    c = setting_curve(runs, "gsm8k", "ans_acc")
    assert c.hours == pytest.approx([1.1, 2.1, 3.1])  # mean times, same count
    assert c.values[0, :2] == pytest.approx([0.1, 1.1]) and np.isnan(c.values[0, 2])  # a ends at 3.0
    assert np.isnan(c.values[1, 0]) and c.values[1, 1:] == pytest.approx([0.9, 1.9])  # b starts at 1.2
    assert c.mean == pytest.approx([0.1, 1.0, 1.9])


def test_rows_count_the_runs_behind_the_peak_and_the_crossing():
    b = curve("b", [[0.2, 0.5, 0.6, 0.55], [0.2, 0.5, np.nan, 0.55]])  # the peak point has one run
    row = speedup(b, curve("m", [[0.4, 0.62, 0.7, 0.7]] * 2), n_boot=0)
    assert (row["baseline_peak"], row["baseline_peak_hours"], row["baseline_peak_runs"]) == (0.6, 1.5, 1)
    assert (row["method_hours_to_baseline_peak"], row["method_reach_runs"]) == (1.0, 2)


def test_reach_ratio_ci_resamples_seeds_and_recomputes_the_crossing():
    from pods.analysis.speedup import reach_ratio_ci

    steps = np.tile(np.arange(0, 101, 25.0), (4, 1))  # [S, C]: 4 seeds, checkpoints 0..100
    base = np.array([[0.1, 0.15, 0.2, 0.25, 0.3]] * 4) + np.array([[-0.01], [0.01], [-0.01], [0.01]])
    twice = np.array([[0.1, 0.2, 0.3, 0.35, 0.4]] * 4) + np.array([[-0.01], [0.01], [-0.01], [0.01]])
    ci = reach_ratio_ci(steps, base, steps, twice, n_boot=500, seed=0)
    assert ci["never_reached"] == 0.0 and ci["ci95"][0] <= 2.0 <= ci["ci95"][1]  # reaches 0.3 at step 50: 2x
    assert 1.5 < ci["ci95"][0] and ci["ci95"][1] < 2.7  # the seeds differ a little: a narrow interval
    same = reach_ratio_ci(steps, base, steps, base, n_boot=500, seed=0)
    assert same["ci95"][0] <= 1.0 <= same["ci95"][1]
    noisy = twice + np.array([[0.15], [-0.15], [0.15], [-0.15]])  # wildly different seeds: a wide interval
    wide = reach_ratio_ci(steps, base, steps, noisy, n_boot=500, seed=0)
    assert wide["ci95"][1] - wide["ci95"][0] > 2 * (ci["ci95"][1] - ci["ci95"][0])
    flat = np.full((4, 5), 0.1)  # never reaches GRPO's final: counted as 0
    assert reach_ratio_ci(steps, base, steps, flat, n_boot=100)["never_reached"] == 1.0
    assert reach_ratio_ci(steps[:1], base[:1], steps, twice) == {"ci95": None, "never_reached": None}  # one seed
    assert reach_ratio_ci(steps, base, steps, twice, n_boot=200, seed=3) == reach_ratio_ci(steps, base, steps, twice,
                                                                                          n_boot=200, seed=3)


def test_difference_ci_of_seed_means():
    a, b = np.array([0.35, 0.33, 0.37, 0.34, 0.36]), np.array([0.30, 0.28, 0.32, 0.29, 0.31])
    d = difference_ci(a, b, n_boot=2000, seed=0)
    assert d["diff"] == pytest.approx(0.05)
    lo, hi = d["ci95"]
    assert 0.0 < lo < 0.05 < hi < 0.1  # the arms do not overlap: the interval excludes 0
    half = 1.96 * np.sqrt(a.var() / len(a) + b.var() / len(b))  # the bootstrap's normal approximation
    assert hi - lo == pytest.approx(2 * half, rel=0.25)
    same = difference_ci(a, a, n_boot=2000, seed=0)
    assert same["diff"] == 0.0 and same["ci95"][0] < 0 < same["ci95"][1]
    assert difference_ci(a, b, n_boot=500, seed=1) == difference_ci(list(a), list(b), n_boot=500, seed=1)
    assert difference_ci(a[:1], b) == {"diff": pytest.approx(0.05), "ci95": None}  # one seed: no interval
    assert difference_ci(a, b, n_boot=0)["ci95"] is None
