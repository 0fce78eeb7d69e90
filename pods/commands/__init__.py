"""The `pods` console command: one subcommand per program users run (pyproject.toml [project.scripts]).

    pods --help                                       # the subcommands
    pods train experiment=demo                        # = uv run python train.py experiment=demo
    pods plot curves --results checkpoints --setting a --setting b   # = python scripts/plot.py curves ...

Contract: a subcommand is a module of this package with `main(argv: list[str], prog: str) -> int | None`
(None is 0; it may also sys.exit) and one `Command` line in COMMANDS. Its module is imported only when
it runs, so `pods --help` imports nothing heavy; its own `--help` (`parser(prog, __doc__)`: the summary line,
one example, its options) imports nothing heavy either: torch, TRL, matplotlib load after the arguments are read.
The thin entry points (train.py, evaluate-run.py, scripts/*.py) call the same `main` with their own `prog`.
Arguments after the subcommand are its own: Hydra overrides (key=value) where a config is composed, options
where it reads files. Pipes, Ctrl-C, signals and exit codes: pods/cli.py (run_script, HydraApp).
"""

from __future__ import annotations

import argparse
import importlib
import re
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
    Command("preflight", "preflight", "will a config fit a GPU, how long will a step take? no GPU needed",
            "scripts/preflight.py"),
    Command("gpu-check", "gpu_check", "first contact with a GPU; --random-weights measures its time profile",
            "scripts/gpu_check.py"),
    Command("trl", "trl", "multi-GPU PODS / GRPO-GA with TRL's GRPOTrainer (preset=<name> of config/trl/)",
            "scripts/train_trl.py"),
    Command("plot", "plot", "figures from evaluation results (paper, curves, step-time)", "scripts/plot.py"),
    Command("speedup", "speedup", "speed-up table: how much sooner a method reaches the baseline's peak",
            "scripts/speedup.py"),
    Command("replay", "replay", "what other rules would have kept of a finished run's ledger (CPU, offline)",
            "scripts/replay.py"),
    Command("leaderboard", "leaderboard", "every arm of the lab on one budget (tokens or seconds), paired over seeds", "scripts/leaderboard.py"),
    Command("demo-compare", "demo_compare", "the CPU demo per step: GRPO, PODS, the random control, dynamic sampling; "
            "10 seeds", "scripts/demo_compare.py"),
    Command("paper-data", "paper_data", "the paper's published results and completions -> paper-data/",
            "scripts/paper_data.py"),
    Command("env", "env", "versions, devices and paths for a bug report (as `trl env`)", "scripts/env.py"),
)


class Parser(argparse.ArgumentParser):
    """A subcommand's argument parser whose help fits a screen: what the command does and one example (its module
    docstring's summary line and first indented line), a short usage line (required arguments only), its options."""

    def __init__(self, *args, doc: str = "", **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        lines = doc.strip().splitlines()
        examples = [line.strip() for line in lines[1:] if line.startswith("    ") and line.strip()]
        self.summary = lines[0] if lines else ""
        self.example = re.sub(r"\s{2,}#", "   #", examples[0]) if examples else ""

    def _short_usage(self) -> None:
        if self.usage is not None:
            return
        words = ["%(prog)s", "[options]" if any(a.option_strings for a in self._actions) else ""]
        for a in self._actions:
            if a.help == argparse.SUPPRESS or (a.option_strings and not a.required):
                continue
            if a.option_strings:  # a required option
                words.append(f"{a.option_strings[-1]} {a.metavar or a.dest.upper()}")
            elif a.choices is not None and a.nargs == argparse.PARSER:  # subcommands
                words.append("{" + ",".join(a.choices) + "} ...")
            else:
                name = a.metavar or a.dest
                words.append({"+": f"{name} [{name} ...]", "*": f"[{name} ...]", "?": f"[{name}]"}.get(a.nargs, name))
        self.usage = " ".join(w for w in words if w)

    def format_usage(self) -> str:
        self._short_usage()
        return super().format_usage()

    def format_help(self) -> str:
        self._short_usage()
        head = self.summary + ("\n" + example_line(self.example) if self.example else "")
        return (head + "\n\n" if head else "") + super().format_help()


def example_line(example: str) -> str:
    """'  example: pods ...', wrapped at 100 columns."""
    import textwrap

    return textwrap.fill(example, 100, initial_indent="  example: ", subsequent_indent=" " * 13,
                         break_on_hyphens=False, break_long_words=False)


class _Formatter(argparse.HelpFormatter):
    """Option names in a column of 26 characters; an epilog of several lines (a legend) kept as written."""

    def __init__(self, prog, **kwargs):
        super().__init__(prog, max_help_position=26, **kwargs)

    def _fill_text(self, text, width, indent):
        return text if "\n" in text else super()._fill_text(text, width, indent)


def hydra_help(doc: str, body: str, prog: str, name: str) -> str:
    """A Hydra program's --help (train, evaluate): the docstring's summary line and first example, then `body`
    with {prog} and {groups}: the groups config/<name>.yaml composes and their options. No config dump."""
    import textwrap

    from pods.config.files import composed_groups, groups

    lines = doc.strip().splitlines()
    example = next(line.strip() for line in lines[1:] if line.startswith("    "))
    options = groups()
    listed = "".join(textwrap.fill(f"{g}: {', '.join(options[g])}", 100, initial_indent=" " * 20,
                                   subsequent_indent=" " * 22) + "\n" for g in composed_groups(name))
    example = " ".join(example.split("#")[0].split())
    return f"{lines[0]}\n{example_line(example)}\n\n" + body.format(prog=prog, groups=listed)


def parser(prog: str, doc: str, **kwargs) -> Parser:
    """The parser of subcommand `prog` with the help head taken from `doc` (its module's docstring)."""
    return Parser(prog=prog, doc=doc, **kwargs)


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
        try:
            print(usage(), end="", flush=True)
        except BrokenPipeError:  # `pods --help | head -1`: quietly, as a pipe's writer should
            from pods.cli import closed_pipe

            return closed_pipe()
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
