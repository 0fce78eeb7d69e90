"""The `pods` console command: one subcommand per program users run (pyproject.toml [project.scripts]).

    pods --help                                       # the subcommands
    pods train experiment=demo                        # = uv run python train.py experiment=demo
    pods plot curves --results checkpoints --setting a --setting b   # = python scripts/plot.py curves ...

Contract: a subcommand is a module of this package with `main(argv: list[str], prog: str) -> int | None`
(None is 0; it may also sys.exit) and one `Command` line in COMMANDS. Its module is imported only when
it runs, so `pods --help` imports nothing heavy. The thin entry points (train.py, evaluate-run.py,
scripts/*.py) call the same `main` with their own `prog`. Arguments after the subcommand are its own:
Hydra overrides (key=value) where a config is composed, options where it reads files.
"""

from __future__ import annotations

import importlib
import sys


class Command:
    """One subcommand (a plain class: `pods --help` imports no dataclasses, no typing)."""

    __slots__ = ("name", "module", "help", "script")

    def __init__(self, name: str, module: str, help: str, script: str):
        self.name = name  # what users type after `pods`
        self.module = module  # pods.commands.<module>, with main(argv, prog)
        self.help = help  # one line for `pods --help`
        self.script = script  # the same program in a checkout


COMMANDS = (
    Command("train", "train", "train with GRPO-PODS / GRPO (Hydra overrides: experiment=demo rl.n=64)", "train.py"),
    Command("evaluate", "evaluate", "evaluate every checkpoint of a run (run_dir=checkpoints/<run>)",
            "evaluate-run.py"),
    Command("preflight", "preflight", "will a config fit a GPU? the memory estimate, no GPU needed",
            "scripts/preflight.py"),
    Command("gpu-check", "gpu_check", "first contact with a GPU: a few steps of each installed backend",
            "scripts/gpu_check.py"),
    Command("trl", "trl", "multi-GPU PODS / GRPO-GA with TRL's GRPOTrainer (preset=<name> of config/trl/)",
            "scripts/train_trl.py"),
    Command("plot", "plot", "figures from evaluation results (paper, curves, step-time)", "scripts/plot.py"),
    Command("speedup", "speedup", "speed-up table: how much sooner a method reaches the baseline's peak",
            "scripts/speedup.py"),
    Command("replay", "replay", "what other rules would have kept of a finished run's ledger (CPU, offline)",
            "scripts/replay.py"),
    Command("leaderboard", "leaderboard", "every arm of the selection lab on the same token budget: seeds, paired "
            "intervals, table, figure", "scripts/leaderboard.py"),
    Command("demo-compare", "demo_compare", "the CPU demo per step: GRPO, PODS, the random control, dynamic sampling; "
            "10 seeds", "scripts/demo_compare.py"),
    Command("paper-data", "paper_data", "the paper's published results and completions -> paper-data/",
            "scripts/paper_data.py"),
)


def usage() -> str:
    width = max(len(c.name) for c in COMMANDS)
    lines = [f"  {c.name:<{width}}  {c.help}" for c in COMMANDS]
    return ("usage: pods <command> [arguments]   (pods <command> --help: the command's own arguments)\n\n"
            "GRPO-PODS: down-sampling rollouts for RL with verifiable rewards on LLMs.\n\ncommands:\n"
            + "\n".join(lines) + "\n\nIn a checkout, `uv run pods ...`; each command is also a script there "
            "(pods train = python train.py).\n")


def main(argv: list[str] | None = None) -> int | None:
    """Dispatch `pods <command> <arguments>`; exit 2 with the closest name for an unknown command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0 if argv else 2
    if argv[0] == "--version":
        from importlib.metadata import version

        print(f"pods {version('pods')}")
        return 0
    by_name = {c.name: c for c in COMMANDS}
    command = by_name.get(argv[0])
    if command is None:
        import difflib  # only for a mistyped command: `pods --help` stays light

        close = difflib.get_close_matches(argv[0], by_name, n=1)
        print(f"pods: error: unknown command {argv[0]!r}" + (f" (did you mean {close[0]}?)" if close else "")
              + f"; commands: {', '.join(by_name)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"{__name__}.{command.module}")
    return module.main(argv[1:], prog=f"pods {command.name}")
