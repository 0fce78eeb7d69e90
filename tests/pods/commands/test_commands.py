"""The `pods` command (pods/commands/__init__.py): every subcommand listed and reachable, lazy help, errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pods import commands

ROOT = Path(__file__).resolve().parents[3]
MODULES = sorted(p.stem for p in (ROOT / "pods" / "commands").glob("*.py") if p.stem != "__init__")


def test_help_lists_every_subcommand_and_each_is_a_module_with_its_script(capsys):
    assert commands.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert [c.name for c in commands.COMMANDS if f"\n  {c.name} " in out] == [c.name for c in commands.COMMANDS]
    assert sorted(c.module for c in commands.COMMANDS) == MODULES  # no module without its subcommand
    for c in commands.COMMANDS:
        script = (ROOT / c.script).read_text()  # the checkout's thin entry point runs the same main
        assert f"from pods.commands.{c.module} import main" in script, c.script
        assert len(script.splitlines()) <= 15, f"{c.script} is not a thin entry point"
    assert {"train", "evaluate", "preflight", "gpu-check", "plot", "speedup", "paper-data", "trl", "replay"} <= {
        c.name for c in commands.COMMANDS}


def test_no_arguments_prints_the_help_and_exits_2(capsys):
    assert commands.main([]) == 2
    assert "commands:" in capsys.readouterr().out


def test_an_unknown_command_names_the_closest(capsys):
    assert commands.main(["trian", "rl.n=4"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'trian' (did you mean train?)" in err and "gpu-check" in err


def test_a_subcommand_gets_its_arguments_and_its_name(tmp_path, capsys):
    assert commands.main(["plot", "list"]) == 0
    assert "gsm8k" in capsys.readouterr().out.split()
    assert commands.main(["speedup", "--results", str(tmp_path), "--baseline", "nope", "--method", "x"]) == 2
    assert capsys.readouterr().err.startswith("pods speedup: error: ")
    assert commands.main(["trl", "preset=tiny-cpy"]) == 2  # config/trl/ presets by name, Hydra overrides after
    assert "pods trl: error: preset=tiny-cpy: no config/trl/tiny-cpy.yaml (did you mean preset=tiny-cpu?)" in \
        capsys.readouterr().err
    assert commands.main(["replay", str(tmp_path / "no-run"), "--rule", "random"]) == 2
    assert capsys.readouterr().err.startswith("pods replay: error: ")
    with pytest.raises(SystemExit) as stop:  # argparse's own usage line names the subcommand
        commands.main(["preflight", "--gpu", "nope"])
    assert stop.value.code == 2 and "usage: pods preflight" in capsys.readouterr().err


def test_help_imports_nothing_heavy():
    code = ("import sys; from pods.commands import main; main(['--help']); "
            "print(sorted(m for m in ('torch', 'hydra', 'transformers', 'trl', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines()[-1] == "[]"


@pytest.mark.skipif(not (Path(sys.executable).parent / "pods").exists(), reason="the console script is not installed")
def test_the_console_script_composes_train_yaml_with_hydra_overrides(tmp_path):
    """`pods train` = `python train.py`: the same config tree, the same override grammar (TRL aliases too)."""
    proc = subprocess.run([Path(sys.executable).parent / "pods", "train", "--cfg", "job", "model=tiny",
                           "num_generations=8"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "name: tiny" in proc.stdout and "\n  'n': 8\n" in proc.stdout and "rl.n=8" in proc.stderr
    bad = subprocess.run([Path(sys.executable).parent / "pods", "train", "rl.n=[1"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("pods train: error: invalid command line")


HEAVY = ("torch", "trl", "transformers", "matplotlib", "scipy", "pandas")  # none of these for any --help
HELPS = r"""
import io, json, sys, contextlib
from pods.commands import COMMANDS, main
out = {}
for name in ["", *(c.name for c in COMMANDS)]:
    text, code = io.StringIO(), None
    with contextlib.redirect_stdout(text):
        try:
            code = main([name, "--help"] if name else ["--help"])
        except SystemExit as stop:
            code = stop.code
    out[name] = {"code": code, "text": text.getvalue()}
out["heavy"] = sorted(m for m in %r if m in sys.modules)
sys.__stdout__.write(json.dumps(out))
"""


def test_every_subcommands_help_fits_a_screen_starts_with_what_and_an_example_and_imports_nothing_heavy():
    """No timed assertion: `--help` is fast because it loads none of torch, TRL, transformers, matplotlib (measured
    times: docs/configuration.md)."""
    proc = subprocess.run([sys.executable, "-c", HELPS % (HEAVY,)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found.pop("heavy") == []
    for name, help_ in found.items():
        lines = help_["text"].splitlines()
        assert help_["code"] == 0 and 8 <= len(lines) <= 40, (name, len(lines))
        if name:  # the subcommand's own: what it does, one example, its options
            assert not lines[0].startswith("usage") and lines[1].startswith("  example: "), (name, lines[:2])
            assert "--help" in help_["text"] and f"usage: pods {name}" in help_["text"], name
            assert max(map(len, lines)) <= 120, name  # wide enough for a screen, narrow enough to read
    assert "--config-help" in found["train"]["text"] and "rule: " in found["train"]["text"]  # the groups, no dump
    assert "protocol: paper" in found["evaluate"]["text"]


PIPED = r"""
import json, os, sys
from pods.commands import COMMANDS, main
saved, results = os.dup(1), {}
for argv in json.loads(sys.argv[1]):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte: `| head -1` at its worst
    os.dup2(write, 1)
    os.close(write)
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    sys.stdout.flush()
    os.dup2(saved, 1)
    results[" ".join(argv)] = code
os.write(saved, json.dumps(results).encode())
"""


def piped(cases: list[list[str]]) -> dict:
    """{command line: exit code} of `pods <case>` with stdout a pipe whose reader is gone; asserts a silent stderr."""
    proc = subprocess.run([sys.executable, "-c", PIPED, json.dumps(cases)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert proc.stderr == "" and proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_every_subcommand_ends_quietly_when_its_output_pipe_closes():
    """`pods <command> --help | head -1`, for every subcommand: exit 141 (as SIGPIPE would), nothing on stderr."""
    cases = [["--help"], *([c.name, "--help"] for c in commands.COMMANDS)]
    assert piped(cases) == {" ".join(c): 141 for c in cases}


@pytest.mark.slow
def test_the_outputs_that_gave_tracebacks_in_a_closed_pipe_end_quietly(tmp_path):
    """`pods replay --json | head -c 20`, `pods leaderboard --dry-run | head -2`, `pods plot list | head -1`."""
    ledger_run(tmp_path / "r")
    cases = [["plot", "list"], ["replay", str(tmp_path / "r"), "--rule", "random", "--json"],
             ["leaderboard", "--dry-run", "--arms", "grpo", "--out", str(tmp_path / "lb")]]
    assert piped(cases) == {" ".join(c): 141 for c in cases}


def ledger_run(run_dir: Path) -> None:
    """A run directory holding a two-step ledger (n = 4, m = 2, max-variance), as the trainer writes it."""
    import torch

    from pods.core import ledger as fmt
    from pods.core.algorithms import keep
    from pods.core.ledger_writer import Ledger

    led = Ledger(run_dir, {"n": 4, "m": 2, "rule": "max_variance", "algorithm": "pods", "seed": 0,
                           "scale_rewards": "group", "advantage_std": "sample"})
    for step in (1, 2):
        total = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # [B, n]
        led.record(step, fmt.concat_rows([fmt.group_rows(
            step=step, round_=0, prompts=[0, 1], status=["trained"] * 2, total=total, per_fn={"exact": total},
            accuracy=total, lengths=torch.ones(2, 4, dtype=torch.long), kept=keep(total, "pods", 2, "max_variance"),
            group=[0, 1])]))
    led.close()


@pytest.mark.parametrize("argv, message", [
    (["train", "rule=cppo"], "pods train: error: invalid overrides:\n  - unknown config group option 'rule=cppo'"),
    (["evaluate", "run_dir=x", "protocol=papr"],
     "pods evaluate: error: invalid overrides:\n  - unknown config group option 'protocol=papr': config/protocol/ has "
     "no papr.yaml; did you mean protocol=paper?"),
])
def test_a_config_group_mistake_is_one_message_before_hydra(capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        commands.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(message) and "Traceback" not in err and "Hydra" not in err
