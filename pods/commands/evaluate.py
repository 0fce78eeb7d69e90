"""`pods evaluate` (and evaluate-run.py): every complete checkpoint of a training run (and the base model) on held-out data.

    pods evaluate run_dir=checkpoints/<run>                 # sampled as the run trained (= python evaluate-run.py ...)
    pods evaluate run_dir=checkpoints/<run> protocol=paper  # the paper's evaluation

Writes `<run_dir>/eval_results.json` in the paper's layout (see pods/evaluation/__init__.py) after every
(checkpoint, dataset, repeat), so an interrupted sweep continues where it stopped when rerun.
Uses the run's own backend and verifiers; LoRA runs are evaluated as adapters on the base model
(`weights=adapter`), or, as the authors did (`weights=merged_4bit`, set by protocol=paper), merged into
the 16-bit base and reloaded in 4-bit (docs/evaluation.md).
Reports two accuracies: `ans_acc` by this suite's strict verifiers and `paper_ans_acc` by the
authors' own grader (`paper_grader=paper_answer|paper_answer_decimal|null`), the one to put next
to the paper's numbers (docs/evaluation.md).
Every setting, the run directory and the datasets are checked before a model loads; a problem is
one message and exit code 2 (docs/configuration.md), as is a results file another evaluation is writing
(it names that process). A run without a complete checkpoint is said so, and only its base model evaluated.
"""

from __future__ import annotations

import sys

from pods.cli import HydraApp, quiet_openmp, set_cpu_threads
from pods.config.files import CONFIG_DIR

quiet_openmp()  # before torch loads: idle OpenMP threads sleep (pods/cli.py, CPU threads)

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402


def run(cfg: DictConfig) -> None:
    from pods.evaluation import evaluate_run

    set_cpu_threads()  # PODS_THREADS, else as pods.cli.cpu_threads chooses
    results = evaluate_run(OmegaConf.select(cfg, "run_dir", throw_on_missing=False), cfg)  # checks every setting and the run directory before a model loads
    for entry in results.entries():
        data = results.data[entry]
        names = [ds for ds in data if isinstance(data[ds], dict)]
        line = f"{entry} (step {data['step']}, {data['elapsed_seconds']:.0f} s): ans_acc " + ", ".join(
            f"{ds} {results.mean(entry, ds):.4f}" for ds in names)
        if all(data[ds].get("paper_ans_acc") for ds in names):
            line += " | paper_ans_acc " + ", ".join(f"{ds} {results.mean(entry, ds, 'paper_ans_acc'):.4f}" for ds in names)
        print(line)
    print(f"results: {results.path}")


def main(argv: list[str] | None = None, prog: str = "evaluate-run.py") -> None:
    """Run `prog argv` (default: this process's own arguments): Hydra composes config/evaluate.yaml with them."""
    app = HydraApp(prog)  # errors -> messages (exit 2), bugs -> traceback + what it was doing

    @hydra.main(config_path=str(CONFIG_DIR), config_name="evaluate", version_base=None)
    def job(cfg: DictConfig) -> None:
        app.job(lambda: run(cfg), doing=f"evaluating {OmegaConf.select(cfg, 'run_dir', throw_on_missing=False)}")

    if argv is not None:
        sys.argv[1:] = argv
    app.main(job)
