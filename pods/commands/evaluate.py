"""Evaluate every complete checkpoint of a training run and its base model on held-out data (`pods evaluate`).

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

from pods.cli import HydraApp, quiet_openmp, set_cpu_threads, show
from pods.commands import hydra_help
from pods.config.files import CONFIG_DIR, composed_groups, groups

quiet_openmp()  # before torch loads: idle OpenMP threads sleep (pods/cli.py, CPU threads)

from omegaconf import DictConfig, OmegaConf  # noqa: E402

HELP = """usage: {prog} run_dir=DIR [key=value ...] [protocol=NAME] [--cfg job] [--config-help]

arguments:
  run_dir=DIR     the run directory train.py wrote (checkpoints/<run>): required
  key=value       a setting of config/evaluate.yaml: repeats=5 temperature=0.9 max_tokens=512
                  datasets=[...] weights=adapter|merged_4bit base=false output=FILE
  group=option    a file of config/<group>/:
{groups}
options:
  --cfg job       print the composed config and exit
  --config-help   every setting with its default (Hydra's help: the whole config)
  -h, --help      this help

Writes <run_dir>/eval_results.json after every (checkpoint, dataset, repeat): rerunning continues
where it stopped. Exit codes: 0 done; 2 a problem to fix (one message); 130 Ctrl-C (what is
written stays); 1 a bug. docs/evaluation.md.
"""


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
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:  # before Hydra loads: a screen, not the config dump
        sys.exit(show(hydra_help(__doc__, HELP, prog, "evaluate")))
    problems = group_problems(argv)
    if problems:
        print(f"{prog}: error: invalid overrides:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        sys.exit(2)
    import hydra

    app = HydraApp(prog, interrupted="what was evaluated is saved; rerun the same command to continue")

    @hydra.main(config_path=str(CONFIG_DIR), config_name="evaluate", version_base=None)
    def job(cfg: DictConfig) -> None:
        app.job(lambda: run(cfg), doing=f"evaluating {OmegaConf.select(cfg, 'run_dir', throw_on_missing=False)}")

    sys.argv[1:] = ["--help" if a == "--config-help" else a for a in argv]  # --config-help: Hydra's dump
    app.main(job)


def group_problems(argv: list[str]) -> list[str]:
    """A config group option of config/evaluate.yaml that does not exist (protocol=papr), as train.py says it."""
    from pods.config.aliases import group_problem

    options = groups()
    found = [(a.split("=", 1)[0], a.split("=", 1)[1]) for a in argv if "=" in a and not a.startswith(("-", "~", "+"))]
    return [p for key, value in found if key in composed_groups("evaluate")
            for p in [group_problem(key, value, options[key])] if p]
