"""Loaders: paper files (grid timing, irregular counts), base files, our run directories, CSVs, settings."""

import json

import numpy as np
import pytest

from pods.analysis.csvruns import load_csv_setting, setting_of
from pods.analysis.loaders import IrregularCheckpointsWarning, load_base, load_paper_file, load_run_dir
from pods.analysis.settings import load_setting


def write_paper(path, steps_to_acc: dict, shuffle=True):
    """steps_to_acc: {step: [repeats of gsm8k ans_acc]} written in the paper's layout."""
    items = list(steps_to_acc.items())
    if shuffle:
        items = items[::-1]  # keys out of step order on purpose
    data = {f"checkpoint-{s}": {"gsm8k": {"ans_acc": a, "for_acc": a, "both_acc": a, "lengths": [100.0] * len(a)}}
            for s, a in items}
    path.write_text(json.dumps(data))


def test_paper_file_sorted_by_step_and_timed_on_grid(tmp_path):
    write_paper(tmp_path / "S-Run1.json", {100: [0.1, 0.3], 20: [0.5, 0.7], 300: [0.2, 0.2]})
    run = load_paper_file(tmp_path / "S-Run1.json", "S", hours_per_checkpoint=0.5)
    assert run.steps.tolist() == [20, 100, 300]
    assert run.hours.tolist() == [0.5, 1.0, 1.5]
    assert run.metric("gsm8k", "ans_acc") == pytest.approx([0.6, 0.2, 0.2])
    with pytest.raises(ValueError, match="no dataset 'math500'"):
        run.metric("math500", "ans_acc")


def test_base_file_is_t0(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps({"gsm8k": {"ans_acc": [0.4, 0.6]}}))
    b = load_base(tmp_path / "base.json")
    assert b.hours.tolist() == [0.0] and b.metric("gsm8k", "ans_acc").tolist() == [0.5]


def _irregular_setting(tmp_path):
    write_paper(tmp_path / "S-Run1.json", {10: [0.1], 20: [0.2], 30: [0.3], 40: [0.4]})
    write_paper(tmp_path / "S-Run2.json", {12: [0.1], 22: [0.2], 32: [0.3], 42: [0.4]})
    write_paper(tmp_path / "S-Run3.json", {10: [0.1], 20: [0.2], 40: [0.9]})  # slot of step ~30 missing
    write_paper(tmp_path / "S-Run4.json", {5: [0.0], 10: [0.1], 20: [0.2], 30: [0.3], 40: [0.4]})  # one extra early


def test_irregular_counts_warn_and_align(tmp_path):
    _irregular_setting(tmp_path)
    with pytest.warns(IrregularCheckpointsWarning, match=r"2 of 4 runs .*expected 4.*S-Run3=3.*S-Run4=5"):
        runs = load_setting("S", tmp_path, hours_per_checkpoint=0.5, irregular="align")
    by = {r.name: r for r in runs}
    assert by["S-Run3"].hours.tolist() == [0.5, 1.0, 2.0]  # step 40 stays at the last slot
    assert by["S-Run4"].steps.tolist() == [10, 20, 30, 40]  # the extra step-5 checkpoint is dropped
    assert by["S-Run4"].hours.tolist() == [0.5, 1.0, 1.5, 2.0]
    assert by["S-Run1"].irregular is False and by["S-Run3"].irregular is True


def test_irregular_policies_warn_and_drop(tmp_path):
    _irregular_setting(tmp_path)
    with pytest.warns(IrregularCheckpointsWarning):
        runs = load_setting("S", tmp_path, irregular="warn")
    assert {r.name: r.hours.tolist()[-1] for r in runs}["S-Run3"] == 1.5  # kept on the (mis-timed) grid
    with pytest.warns(IrregularCheckpointsWarning):
        runs = load_setting("S", tmp_path, irregular="drop")
    assert sorted(r.name for r in runs) == ["S-Run1", "S-Run2"]
    with pytest.raises(ValueError, match="valid"):
        load_setting("S", tmp_path, irregular="nope")


def test_prefix_does_not_match_longer_settings(tmp_path):
    write_paper(tmp_path / "A-64-16-Run1.json", {1: [0.1]})
    write_paper(tmp_path / "A-64-16-0.04-Run1.json", {1: [0.9]})
    runs = load_setting("A-64-16", tmp_path)
    assert [r.name for r in runs] == ["A-64-16-Run1"]
    with pytest.raises(ValueError, match="known prefixes"):
        load_setting("B", tmp_path)


def write_run_dir(path, entries: dict):
    """entries: {step: (elapsed_seconds, ans_acc repeats)}."""
    path.mkdir(parents=True)
    data = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": t, "gsm8k": {"ans_acc": a, "lengths": [50.0]}}
            for s, (t, a) in entries.items()}
    (path / "eval_results.json").write_text(json.dumps(data))


def test_run_dir_uses_elapsed_seconds(tmp_path):
    write_run_dir(tmp_path / "demo", {50: (180.0, [0.5]), 25: (90.0, [0.2, 0.4])})
    run = load_run_dir(tmp_path / "demo")
    assert run.steps.tolist() == [25, 50]
    assert run.hours == pytest.approx([0.025, 0.05])
    assert run.metric("gsm8k", "ans_acc") == pytest.approx([0.3, 0.5])
    (tmp_path / "bad").mkdir()
    with pytest.raises(ValueError, match="evaluate-run.py"):
        load_run_dir(tmp_path / "bad")


def test_run_dir_settings_single_seeds_folder_and_prefix(tmp_path):
    for seed in (1, 2):
        write_run_dir(tmp_path / "pods" / f"s{seed}", {10: (60.0, [0.1 * seed])})
        write_run_dir(tmp_path / f"grpo-s{seed}", {10: (60.0, [0.2 * seed])})
    assert len(load_setting(str(tmp_path / "pods" / "s1"))) == 1  # a run directory as a path
    assert sorted(r.name for r in load_setting("pods", tmp_path)) == ["s1", "s2"]  # folder of seeds
    runs = load_setting("grpo", tmp_path)  # <prefix>-s<k> run directories
    assert sorted(r.name for r in runs) == ["grpo-s1", "grpo-s2"] and runs[0].setting == "grpo"


def test_a_csv_setting_has_one_run_per_seed(tmp_path):
    rows = [
        "eval/time,data/G-s1-n32-m32 - _step,data/G-s1-n32-m32 - eval/rewards/accuracy_reward/mean,"
        "data/G-s2-n32-m32 - _step,data/G-s2-n32-m32 - eval/rewards/accuracy_reward/mean,"
        "data/G-s1-n128-m32 - _step,data/G-s1-n128-m32 - eval/rewards/accuracy_reward/mean",
        "30,10,0.1,,,,", "45,,,10,0.2,,", "60,20,0.5,,,10,0.7", "90,,,20,0.6,,",
    ]
    (tmp_path / "h-acc.csv").write_text("\n".join(rows))
    assert setting_of("GRPO-s25-p8-n128-m32-ga4") == "GRPO-p8-n128-m32-ga4"
    runs = load_csv_setting(tmp_path, "h", "n32")
    assert [r.name for r in runs] == ["G-s1-n32-m32", "G-s2-n32-m32"]
    assert runs[0].hours == pytest.approx([30 / 3600, 60 / 3600])  # eval/time in seconds -> hours
    assert runs[1].hours == pytest.approx([45 / 3600, 90 / 3600])
    assert runs[1].metric("gsm8k", "ans_acc").tolist() == [0.2, 0.6]
    assert runs[0].meta["logged_steps"].tolist() == [10, 20]  # tracker rows, kept as logged
    assert np.isnan(runs[0].steps).all()  # no -ga<k> and an unknown export: not decoded into optimizer steps
    mins = load_setting("h:n32", tmp_path, csv_time_unit="minutes")
    assert mins[0].hours.tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="matches"):
        load_csv_setting(tmp_path, "h", "m32")  # ambiguous: both settings contain it


def test_run_dir_in_evaluate_run_format(tmp_path):
    """The file evaluate-run.py writes: string fields, a `base` entry (t = 0), examples, a partial entry."""
    d = tmp_path / "run"
    d.mkdir()
    ds = lambda a: {"gsm8k": {"ans_acc": a, "for_acc": a, "both_acc": a, "lengths": [9.0] * len(a)}}  # noqa: E731
    data = {"format": "pods-eval-results/1", "settings": "{}",
            "checkpoint-40": {"step": 40, "elapsed_seconds": 7200.0, **ds([])},  # started, no repeat yet
            "base": {"step": 0, "elapsed_seconds": 0.0, **ds([0.1, 0.3])},
            "checkpoint-20": {"step": 20, "elapsed_seconds": 3600.0, **ds([0.5])},
            "examples": {"checkpoint-20": {"gsm8k": [{"prompt": "p", "completion": "c"}]}}}
    (d / "eval_results.json").write_text(json.dumps(data))
    run = load_run_dir(d)
    assert run.steps.tolist() == [0, 20, 40] and run.hours.tolist() == [0.0, 1.0, 2.0]
    y = run.metric("gsm8k", "ans_acc")
    assert y[:2] == pytest.approx([0.2, 0.5]) and np.isnan(y[2])


def test_align_keeps_every_checkpoint_in_order(tmp_path):
    """Two checkpoints nearest to the same slot: the order-preserving match still keeps both."""
    for k in (1, 2):
        write_paper(tmp_path / f"S-Run{k}.json", {25: [0.1], 50: [0.2], 75: [0.3], 100: [0.4]})
    write_paper(tmp_path / "S-Run3.json", {42: [0.1], 55: [0.2], 100: [0.4]})  # 0.42 and 0.55 both nearest 0.5
    with pytest.warns(IrregularCheckpointsWarning):
        runs = load_setting("S", tmp_path, irregular="align")
    r3 = {r.name: r for r in runs}["S-Run3"]
    assert r3.steps.tolist() == [42, 55, 100] and r3.hours.tolist() == [0.5, 1.0, 2.0]


def test_paper_metric_on_our_runs_and_the_papers_files(tmp_path):
    # our file: strict and paper-compatible accuracies side by side (evaluate-run.py with paper_grader)
    d = tmp_path / "run"
    d.mkdir()
    entry = {"ans_acc": [0.5], "for_acc": [1.0], "both_acc": [0.5], "lengths": [9.0], "paper_ans_acc": [0.75],
             "paper_for_acc": [0.5], "paper_both_acc": [0.25]}
    (d / "eval_results.json").write_text(json.dumps({"checkpoint-10": {"step": 10, "elapsed_seconds": 60.0,
                                                                         "gsm8k": entry}}))
    run = load_run_dir(d)
    assert run.metric("gsm8k", "paper_ans_acc").tolist() == [0.75] and run.metric("gsm8k", "ans_acc").tolist() == [0.5]
    # the authors' files were graded by the paper's grader: their ans_acc is readable as paper_ans_acc
    write_paper(tmp_path / "S-Run1.json", {20: [0.5, 0.7]})
    paper = load_paper_file(tmp_path / "S-Run1.json", "S", hours_per_checkpoint=0.5)
    assert paper.metric("gsm8k", "paper_ans_acc") == pytest.approx([0.6])
    (tmp_path / "base.json").write_text(json.dumps({"gsm8k": {"ans_acc": [0.4], "for_acc": [0.2]}}))
    assert load_base(tmp_path / "base.json").metric("gsm8k", "paper_for_acc").tolist() == [0.2]
    # an older file of ours without paper metrics still loads; asking for them is a clear error
    write_run_dir(tmp_path / "old", {10: (60.0, [0.5])})
    with pytest.raises(ValueError, match="no metric 'paper_ans_acc'"):
        load_run_dir(tmp_path / "old").metric("gsm8k", "paper_ans_acc")


RESULTS_ENTRY = {"step": 2, "elapsed_seconds": 20.0, "arithmetic": {"ans_acc": [0.5]}}


@pytest.mark.parametrize("raw, said", [
    ('{"checkpoint-2": {"caf\xe9": 1}}'.encode("latin1"), ["eval_results.json: not UTF-8 text"]),
    (b"[1, 2]", ["eval_results.json: holds a JSON list, not an object of checkpoints"]),
    (json.dumps({"checkpoint-2": {**RESULTS_ENTRY, "arithmetic": {"ans_acc": ["high"]}}}).encode(),
     ["eval_results.json: arithmetic ans_acc holds 'high' (str), not a number", "fix or remove the file"]),
    (json.dumps({"checkpoint-2": {**RESULTS_ENTRY, "arithmetic": {"ans_acc": [True]}}}).encode(),
     ["eval_results.json: arithmetic ans_acc holds True (bool), not a number"]),
    (json.dumps({"checkpoint-2": {**RESULTS_ENTRY, "arithmetic": {"ans_acc": ["0.5"]}}}).encode(),
     ["eval_results.json: arithmetic ans_acc holds '0.5' (str), not a number"]),
    (json.dumps({"checkpoint-2": {**RESULTS_ENTRY, "arithmetic": {"ans_acc": [51.0]}}}).encode(),
     ["eval_results.json: arithmetic ans_acc holds 51.0, not an accuracy in [0, 1]"]),
], ids=["not-utf8", "json-list", "metric-strings", "metric-bool", "metric-number-as-text", "accuracy-above-1"])
def test_a_bad_results_file_is_one_message_naming_it(tmp_path, raw, said):
    """A damaged or foreign eval_results.json (what speedup.py and plot.py read) is one ResultsError naming the
    file and what it holds; the file is left as it was."""
    from pods.errors import ResultsError

    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / "eval_results.json"
    path.write_bytes(raw)
    with pytest.raises(ResultsError) as err:
        load_run_dir(tmp_path / "run")
    assert all(f"{tmp_path}/run/{text}" in str(err.value) if text.startswith("eval_results") else text in str(err.value)
               for text in said)
    assert path.read_bytes() == raw
