"""benchmarks/paper_steps.py: optimizer steps per arm and the old 1 %-of-an-epoch warm-up's share of them."""

import importlib.util
import json
from pathlib import Path

import pytest

from pods.analysis.paper_data import GET_IT, locate_results

REPO = Path(__file__).resolve().parents[2]
# the shared folder sits beside the checkout (or beside the worktrees' folder)
PAPER = locate_results() or Path("paper-data/results")  # scripts/paper_data.py (pods.analysis.paper_data)

spec = importlib.util.spec_from_file_location("script_paper_steps", REPO / "benchmarks" / "paper_steps.py")
paper_steps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(paper_steps)


def write_run(d, name, steps):
    (d / name).write_text(json.dumps({f"checkpoint-{s}": {"gsm8k": {"ans_acc": [0.5]}} for s in steps}))


def test_medians_warmup_share_and_minutes(tmp_path, capsys):
    write_run(tmp_path, "Instruct-GSM8K-512-64-16-Run1.json", [150, 300, 450])
    write_run(tmp_path, "Instruct-GSM8K-512-64-16-Run2.json", [160, 320, 500])
    write_run(tmp_path, "Instruct-Llama-512-16-16-0.04-Run1.json", [70, 140])
    (tmp_path / "base-qwen.json").write_text("{}")
    runs = paper_steps.load_steps(tmp_path)
    assert runs == {"Instruct-GSM8K-512-64-16": [[150, 300, 450], [160, 320, 500]],
                    "Instruct-Llama-512-16-16-0.04": [[70, 140]]}
    gsm = paper_steps.summarise("Instruct-GSM8K-512-64-16", runs["Instruct-GSM8K-512-64-16"], 0.01)
    assert (gsm["final"], gsm["final_range"], gsm["first"], gsm["hours"]) == (475, (450, 500), 155, 1.5)
    assert gsm["warmup_steps"] == 75 and gsm["warmup_share"] == pytest.approx(75 / 475)
    assert gsm["warmup_minutes"] == pytest.approx(75 / (155 / 30))
    llama = paper_steps.summarise("Instruct-Llama-512-16-16-0.04", runs["Instruct-Llama-512-16-16-0.04"], 0.01)
    assert llama["checkpoint_minutes"] == 10 and llama["warmup_minutes"] == pytest.approx(75 / 7)
    assert paper_steps.main(["--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| Instruct-GSM8K-512-64-16 | 2 | 1.5 h | 475 (450-500) | 155 in 30 min | 75 | 15.8 % | 15 |" in out


def test_no_result_files_is_a_clean_error(tmp_path, capsys):
    assert paper_steps.main(["--results", str(tmp_path / "absent")]) == 2
    assert "no Instruct-*-Run<k>.json files" in capsys.readouterr().err


@pytest.mark.skipif(not PAPER.is_dir(), reason=f"the paper's results are absent: {GET_IT}")
def test_paper_numbers_in_docs(capsys):
    """The table in docs/algorithms.md is this output."""
    assert paper_steps.main(["--results", str(PAPER)]) == 0
    out = capsys.readouterr().out
    assert "| Instruct-GSM8K-512-16-16 | 10 | 6 h | 2877.5 (2616-3134) | 229.5 in 30 min | 75 | 2.6 % | 10 |" in out
    assert "| Instruct-GSM8K-512-64-16 | 10 | 6 h | 2119 (1978-2470) | 154.5 in 30 min | 75 | 3.5 % | 15 |" in out
    assert "| Instruct-Llama-512-64-16-0.04 | 10 | 2 h | 647.5 (605-666) | 51 in 10 min | 75 | 11.6 % | 15 |" in out
    docs = (REPO / "docs" / "algorithms.md").read_text()
    assert all(line in docs for line in out.strip().splitlines()[2:])


def test_a_damaged_result_file_is_a_clean_error(tmp_path, capsys):
    (tmp_path / "Instruct-GSM8K-512-16-16-Run1.json").write_text('{"checkpoint-10": {"gsm8k": {"ans_acc": [0.')
    assert paper_steps.main(["--results", str(tmp_path)]) == 2
    assert "Instruct-GSM8K-512-16-16-Run1.json: cannot be read as a results file" in capsys.readouterr().err
