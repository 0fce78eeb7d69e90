"""Evaluate every complete checkpoint of a training run (and the base model) on held-out data.

    uv run python evaluate-run.py run_dir=checkpoints/<run>                 # sampled as the run trained
    uv run python evaluate-run.py run_dir=checkpoints/<run> protocol=paper  # the paper's evaluation

Writes `<run_dir>/eval_results.json` in the paper's layout (see pods/evaluation.py) after every
(checkpoint, dataset, repeat), so an interrupted sweep continues where it stopped when rerun.
Uses the run's own backend and verifiers; LoRA runs are evaluated as adapters on the base model.
Reports two accuracies: `ans_acc` by this suite's strict verifiers and `paper_ans_acc` by the
authors' own grader (`paper_grader=paper_answer|paper_answer_decimal|null`), the one to put next
to the paper's numbers (docs/evaluation.md).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from pods.evaluation import evaluate_run
from pods.io import WriteError


@hydra.main(config_path="config", config_name="evaluate", version_base=None)
def main(cfg: DictConfig) -> None:
    try:
        results = evaluate_run(cfg.run_dir, cfg)
    except (ValueError, FileNotFoundError, WriteError) as err:  # WriteError: "no space left on device: <path>"
        print(f"evaluate-run.py: {err}", file=sys.stderr)
        sys.exit(2)
    for entry in results.entries():
        data = results.data[entry]
        names = [ds for ds in data if isinstance(data[ds], dict)]
        line = f"{entry} (step {data['step']}, {data['elapsed_seconds']:.0f} s): ans_acc " + ", ".join(
            f"{ds} {results.mean(entry, ds):.4f}" for ds in names)
        if all(data[ds].get("paper_ans_acc") for ds in names):
            line += " | paper_ans_acc " + ", ".join(f"{ds} {results.mean(entry, ds, 'paper_ans_acc'):.4f}" for ds in names)
        print(line)
    print(f"results: {results.path}")


if __name__ == "__main__":
    main()
