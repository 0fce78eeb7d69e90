"""pods speedup (pods/commands/speedup.py, scripts/speedup.py): JSON keys and values on synthetic paper-layout files and run directories, errors."""

import json
from pathlib import Path

import pytest

from pods.analysis.paper_data import GET_IT, locate_results
from pods.commands import speedup

from helpers import exits

REPO = Path(__file__).resolve().parents[3]
PAPER = locate_results() or Path("paper-data/results")  # scripts/paper_data.py (pods.analysis.paper_data)


KEYS = ["baseline", "method", "baseline_peak", "baseline_peak_hours", "method_peak", "method_peak_hours",
        "method_hours_to_baseline_peak", "speedup_exact", "speedup_exact_interp", "speedup_99",
        "speedup_99_interp", "ci95_exact", "ci95_99", "baseline_runs", "method_runs", "never_reached_exact",
        "never_reached_99", "baseline_peak_runs", "method_reach_runs"]


def write_setting(d, prefix, curves):
    """curves: one list of gsm8k ans_acc per run, the i-th value at checkpoint step 10 * (i + 1)."""
    for k, ys in enumerate(curves, 1):
        data = {f"checkpoint-{10 * (i + 1)}": {"gsm8k": {"ans_acc": [y, y]}} for i, y in enumerate(ys)}
        (d / f"{prefix}-Run{k}.json").write_text(json.dumps(data))


def run_json(capsys, argv):
    assert speedup.main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_values_and_not_reached(tmp_path, capsys):
    write_setting(tmp_path, "G-16-16", [[0.2, 0.5, 0.6, 0.55], [0.2, 0.5, 0.6, 0.55]])
    write_setting(tmp_path, "P-64-16", [[0.4, 0.62, 0.7, 0.7], [0.4, 0.62, 0.7, 0.7]])
    write_setting(tmp_path, "slow", [[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]])
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "P-64-16",
                             "--method", "slow", "--dataset", "gsm8k", "--metric", "ans_acc",
                             "--hours-per-checkpoint", "0.5", "--bootstrap", "50"])
    assert [list(r) for r in rows] == [KEYS, KEYS]
    fast, slow = rows
    assert (fast["baseline"], fast["method"]) == ("G-16-16", "P-64-16")
    assert fast["baseline_peak_hours"] == 1.5 and fast["method_hours_to_baseline_peak"] == 1.0
    assert fast["speedup_exact"] == pytest.approx(1.5) and fast["speedup_99"] == pytest.approx(1.5)
    assert fast["ci95_exact"] == pytest.approx([1.5, 1.5])  # identical runs
    assert slow["method_hours_to_baseline_peak"] is None and slow["speedup_exact"] is None and slow["ci95_99"] is None
    # --max-hours 1.0: baseline peak 0.5 at 1 h; the method reaches it at 1 h (0.4 at 0.5 h), interpolated
    # at 0.5 + 0.5 * 0.1 / 0.22 h
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "P-64-16",
                             "--max-hours", "1.0", "--bootstrap", "0"])
    assert rows[0]["speedup_exact"] == pytest.approx(1.0) and rows[0]["ci95_exact"] is None
    assert rows[0]["speedup_exact_interp"] == pytest.approx(1.0 / (0.5 + 0.5 * 0.1 / 0.22))
    argv = ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "slow", "--bootstrap", "0"]
    assert speedup.main(argv) == 0
    assert "not reached" in capsys.readouterr().out


def test_run_directories_as_settings(tmp_path, capsys):
    for name, ys in (("grpo", [0.1, 0.3, 0.5]), ("pods", [0.2, 0.5, 0.6])):
        for seed in (1, 2):
            d = tmp_path / name / f"seed{seed}"
            d.mkdir(parents=True)
            data = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": 60.0 * s, "gsm8k": {"ans_acc": [y]}}
                    for s, y in zip((10, 20, 30), ys)}
            (d / "eval_results.json").write_text(json.dumps(data))
            greedy = {k: {**v, "gsm8k": {"ans_acc": [min(1.0, 2 * v["gsm8k"]["ans_acc"][0])]}} for k, v in data.items()}
            (d / "eval_greedy.json").write_text(json.dumps(greedy))
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "grpo", "--method", "pods", "--bootstrap", "20"])
    # baseline peak 0.5 at step 30 = 1800 s = 0.5 h; pods reaches 0.5 at step 20 = 1200 s
    assert rows[0]["baseline_peak_hours"] == pytest.approx(0.5)
    assert rows[0]["speedup_exact"] == pytest.approx(1.5)
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "grpo", "--method", "pods", "--bootstrap", "0",
                             "--results-file", "eval_greedy.json"])
    assert rows[0]["baseline_peak"] == pytest.approx(1.0)
    assert rows[0]["method_hours_to_baseline_peak"] == pytest.approx(1 / 3)


def test_paper_metric_compares_our_runs_with_the_papers_files(tmp_path, capsys):
    # the paper's files (their ans_acc is the paper's grader) against our run (paper_ans_acc)
    for k, ys in ((1, [0.2, 0.5]), (2, [0.2, 0.5])):
        data = {f"checkpoint-{s}": {"gsm8k": {"ans_acc": [y]}} for s, y in zip((10, 20), ys)}
        (tmp_path / f"G-16-16-Run{k}.json").write_text(json.dumps(data))
    d = tmp_path / "ours"
    d.mkdir()
    data = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": 1800.0 * (i + 1),
                                "gsm8k": {"ans_acc": [0.1], "paper_ans_acc": [y]}}
            for i, (s, y) in enumerate(zip((10, 20), (0.5, 0.6)))}
    (d / "eval_results.json").write_text(json.dumps(data))
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", str(d),
                             "--metric", "paper_ans_acc", "--bootstrap", "0"])
    # the baseline peaks (0.5) at 1.0 h; ours reaches 0.5 at its first checkpoint, 0.5 h
    assert rows[0]["baseline_peak"] == pytest.approx(0.5) and rows[0]["speedup_exact"] == pytest.approx(2.0)


def test_our_runs_beside_the_papers_files_default_to_the_papers_grader_or_are_refused(tmp_path, capsys):
    # the same layout: without --metric the mix is compared on the paper's grader (our ans_acc, 0.1, is ignored)
    test_paper_metric_compares_our_runs_with_the_papers_files(tmp_path, capsys)
    argv = ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", str(tmp_path / "ours"), "--bootstrap", "0"]
    rows = run_json(capsys, argv)
    assert rows[0]["speedup_exact"] == pytest.approx(2.0) and rows[0]["method_peak"] == pytest.approx(0.6)
    # the strict verifier beside their grader: refused, with the metric to use
    assert speedup.main(argv + ["--metric", "ans_acc"]) == 2
    assert "compare on their grader with --metric paper_ans_acc" in capsys.readouterr().err
    # our runs evaluated without the paper's grader cannot stand beside their files
    data = json.loads((tmp_path / "ours" / "eval_results.json").read_text())
    for entry in data.values():
        entry["gsm8k"].pop("paper_ans_acc")
    (tmp_path / "ours" / "eval_results.json").write_text(json.dumps(data))
    assert speedup.main(argv) == 2
    assert "no paper_ans_acc (evaluated without the paper's grader)" in capsys.readouterr().err
    # our runs alone keep the strict verifier
    assert run_json(capsys, ["--results", str(tmp_path), "--baseline", str(tmp_path / "ours"),
                             "--method", str(tmp_path / "ours"), "--bootstrap", "0"])[0]["baseline_peak"] == 0.1


def test_errors_are_clear(tmp_path, capsys):
    assert speedup.main(["--results", str(tmp_path), "--baseline", "nope", "--method", "x"]) == 2
    assert "no nope-Run<k>.json" in capsys.readouterr().err


@pytest.mark.skipif(not PAPER.is_dir(), reason=f"the paper's results are absent: {GET_IT}")
def test_paper_gsm8k_speedup(capsys):
    rows = run_json(capsys, ["--results", str(PAPER), "--baseline", "Instruct-GSM8K-512-16-16",
                             "--method", "Instruct-GSM8K-512-64-16", "--bootstrap", "100"])
    r = rows[0]
    assert r["baseline_peak_hours"] == 4.0 and r["method_hours_to_baseline_peak"] == 2.5
    assert r["speedup_exact"] == pytest.approx(1.6) and r["speedup_99"] == pytest.approx(2.0)


def test_table_time_unit_single_runs_and_never_reached_share(tmp_path, capsys):
    """Short runs read in seconds (not "0.00 h"); a one-run setting has no interval ("n/a (1 run)"); an
    interval from 0 says how many resamples never reach the level."""
    def seeds(name, curves, seconds):
        for k, ys in enumerate(curves):
            d = tmp_path / name / f"s{k}"
            d.mkdir(parents=True)
            data = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": seconds * s, "gsm8k": {"ans_acc": [y]}}
                    for s, y in zip((10, 20, 30, 40), ys)}
            (d / "eval_results.json").write_text(json.dumps(data))

    seeds("grpo", [[0.2, 0.5, 0.6, 0.55]] * 2, 0.5)  # peak 0.6 at step 30 = 15 s
    seeds("one", [[0.4, 0.62, 0.7, 0.7]], 0.5)
    seeds("mixed", [[0.4, 0.62, 0.7, 0.7]] * 2 + [[0.1, 0.2, 0.3, 0.4]], 0.5)
    argv = ["--results", str(tmp_path), "--baseline", "grpo", "--method", "one", "--method", "mixed",
            "--bootstrap", "1000"]
    assert speedup.main(argv) == 0
    out = capsys.readouterr().out
    assert "0.00 h" not in out and "peak 0.600 at 15.00 s" in out
    one, mixed = out.splitlines()[2:]
    assert one.startswith("one (1) | 0.700 at 15.00 s | 10.00 s | 1.50") and "n/a (1 run)" in one
    assert "of 2 runs" not in out  # every point averages all runs here
    assert "not reached" not in one
    assert mixed.startswith("mixed (3) | 0.600 at 20.00 s | 20.00 s | 0.75") and "[0.00, 1.50] (" in mixed
    share = speedup.compute(speedup.parse_args(argv))[1]["never_reached_exact"]
    assert f"[0.00, 1.50] ({share:.0%} of resamples never reach)" in mixed and 0.15 < share < 0.4
    assert speedup.main(argv + ["--time-unit", "minutes"]) == 0
    assert "peak 0.600 at 0.25 min" in capsys.readouterr().out
    assert speedup.main([*argv[:4], "--method", "mixed", "--bootstrap", "0"]) == 0
    assert "n/a (no bootstrap)" in capsys.readouterr().out
    assert speedup.pick_unit([{"baseline_peak_hours": 6.0, "method_peak_hours": 1.0,
                               "method_hours_to_baseline_peak": None}]) == "hours"
    assert speedup.pick_unit([{"baseline_peak_hours": 0.5, "method_peak_hours": None,
                               "method_hours_to_baseline_peak": None}]) == "minutes"


@pytest.fixture
def base_ok(tmp_path):
    """A results folder with one good run directory, base-ok."""
    (tmp_path / "base-ok").mkdir()
    (tmp_path / "base-ok" / "eval_results.json").write_text(json.dumps(
        {"checkpoint-2": {"step": 2, "elapsed_seconds": 20.0, "arithmetic": {"ans_acc": [0.5]}}}))
    return tmp_path


@pytest.mark.parametrize("argv, said", [
    (["--hours-per-checkpoint", "0"], "argument --hours-per-checkpoint: '0': hours must be positive"),
    (["--hours-per-checkpoint=-0.5"], "argument --hours-per-checkpoint: '-0.5': hours must be positive"),
], ids=["hours-0", "hours-negative"])
def test_a_bad_argument_is_one_message_and_exit_2(base_ok, capsys, argv, said):
    code, _, err = exits(speedup.main, ["--results", str(base_ok), "--baseline", "base-ok", "--method", "base-ok",
                                        *argv], capsys)
    assert code == 2 and said in err


def test_an_unknown_setting_is_one_message_and_exit_2(base_ok, capsys):
    code, _, err = exits(speedup.main, ["--results", str(base_ok), "--baseline", "nope", "--method", "base-ok"],
                         capsys)
    assert code == 2 and "setting 'nope': no directory" in err
