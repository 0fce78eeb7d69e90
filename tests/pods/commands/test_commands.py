"""The `pods` command (pods/commands/__init__.py): every subcommand listed and reachable, lazy help, errors."""

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
