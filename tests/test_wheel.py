"""The built wheel installs into a fresh venv, trains a PODSTrainer step and runs the `pods` command outside the checkout.

    uv run pytest tests/test_wheel.py       (~6 s: uv build, venvs, one tiny TRL step)

How, without downloading a CUDA torch: `uv build --wheel`, then a fresh venv of this interpreter's
Python whose `_deps.pth` names this checkout's site-packages (torch, TRL, ... as locked; a plain path
line, so that site-packages' own .pth files, among them the editable install of the checkout, are not
processed), and `uv pip install --no-deps --offline` of the wheel: `pods` (with `pods.rewards`) then comes
from the venv's site-packages, which precede the .pth path. tests/fixtures/wheel_user.py runs there
with the working directory in a temporary folder. Every other Python found on the machine
(python3.12, python3.13 on PATH or in pyenv) gets a venv with only the wheel: it must install (Requires-Python) and
`import pods` must work without torch; Python 3.10 must be refused. A full 3.12 install with the
locked dependencies from PyPI is described in docs/library.md (not run here: it downloads ~3 GB).
"""

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv on PATH")]


def run(cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def python(version: str) -> str | None:
    """An interpreter of that version on this machine (PATH, then pyenv's versions), or None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [shutil.which(f"python{version}"), *sorted(map(str, pyenv.glob(f"{version}.*/bin/python{version}")))]
    want = str(tuple(map(int, version.split("."))))
    for exe in filter(None, found):  # a pyenv shim without that version installed fails to run
        ok = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
        if ok.returncode == 0 and ok.stdout.strip() == want:
            return exe
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run(["uv", "build", "--wheel", "-o", out, ROOT], cwd=ROOT)
    (path,) = out.glob("pods-*.whl")
    return path


def venv(where: Path, exe: str) -> Path:
    run([exe, "-m", "venv", "--without-pip", where])
    return where / "bin" / "python"


def install(py: Path, wheel: Path):
    return subprocess.run(["uv", "pip", "install", "--no-deps", "--offline", "--python", str(py), str(wheel)],
                          capture_output=True, text=True)


def test_wheel_trains_a_step_outside_the_checkout(wheel, tmp_path):
    py = venv(tmp_path / "venv", sys.executable)
    (purelib,) = [Path(p) for p in site.getsitepackages() if p.endswith("site-packages")][:1]
    own = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (own / "_deps.pth").write_text(f"{purelib}\n")
    assert install(py, wheel).returncode == 0
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "wheel_user.py", user / "train.py")
    (user / "rewards.py").write_text(  # the user's own module named like ours used to be: must not shadow pods'
        "def my_reward(completions, answer, **kwargs):\n"
        "    return [float(a in c) + 0.1 * (len(c) % 4) for c, a in zip(completions, answer)]\n")
    env = {"PATH": str(py.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "TRITON_INTERPRET": "1",
           "OMP_NUM_THREADS": "1"}
    out = run([py, "train.py"], cwd=user, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(res["pods"]).is_relative_to(own) and Path(res["rewards"]).is_relative_to(own)  # the wheel's
    assert not Path(res["pods"]).is_relative_to(ROOT)
    assert res["steps"] == 1 and res["kept"] == [1, 2]  # one group of n=4 per round, m=2 kept
    assert res["changed_tensors"] > 0 and "gsm8k" in res["reward_names"]
    assert Path(res["user_rewards"]) == user / "rewards.py"  # their module and ours side by side


def test_wheel_has_the_pods_command(wheel, tmp_path):
    """The console script runs outside the checkout and composes the configs the wheel carries."""
    py = venv(tmp_path / "venv", sys.executable)
    (purelib,) = [Path(p) for p in site.getsitepackages() if p.endswith("site-packages")][:1]
    own = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (own / "_deps.pth").write_text(f"{purelib}\n")
    assert install(py, wheel).returncode == 0
    pods, env = py.parent / "pods", {"PATH": str(py.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)}
    out = run([pods, "--help"], cwd=tmp_path, env=env).stdout
    assert all(f"\n  {name} " in out for name in ("train", "evaluate", "preflight", "gpu-check", "trl", "plot",
                                                    "speedup", "paper-data")), out
    cfg = run([pods, "train", "--cfg", "job", "model=tiny", "rl.n=8"], cwd=tmp_path, env=env).stdout
    assert "name: tiny" in cfg and "'n': 8" in cfg  # config/train.yaml and its groups, from the wheel
    where = run([py, "-c", "from pods.config.files import CONFIG_DIR; print(CONFIG_DIR)"], cwd=tmp_path, env=env)
    assert Path(where.stdout.strip()).is_relative_to(own)


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_wheel_installs_on_other_pythons(wheel, tmp_path, version):
    exe = python(version)
    if exe is None:
        pytest.skip(f"no python{version} on this machine")
    py = venv(tmp_path / "venv", exe)
    assert install(py, wheel).returncode == 0
    code = ("import sys, pods; print(pods.__version__, sys.version_info[:2], 'torch' in sys.modules, "
            "sorted(pods.__all__) == sorted(dir(pods)) or 'ok')")
    out = run([py, "-c", code], cwd=tmp_path).stdout.split()
    assert out[0] == "0.1.0" and out[-2] == "False"


def test_wheel_refuses_python_310(wheel, tmp_path):
    exe = python("3.10")
    if exe is None:
        pytest.skip("no python3.10 on this machine")
    res = install(venv(tmp_path / "venv", exe), wheel)
    assert res.returncode != 0 and "3.11" in res.stderr
