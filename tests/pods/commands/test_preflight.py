"""pods preflight (pods/commands/preflight.py, scripts/preflight.py): the memory estimate of a config for a named GPU, no GPU and no download needed.

The source review's examples: the full-parameter vLLM run is refused on an L40S (exit 3, with the knobs
that would fit) and accepted on 80 GiB; the paper's Unsloth run fits an L40S; a config error exits 2.
"""

import subprocess
import sys
from pathlib import Path

from pods.commands import preflight

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "preflight.py"
# full-parameter vLLM without the authors' reference pass (rl.reference_pass=always would add a reference copy)
FULL_VLLM = ["experiment=gsm8k_main", "backend=vllm", "model.lora.rank=0", "model.load_in_4bit=false",
             "rl.reference_pass=auto"]


def test_the_full_parameter_vllm_run_is_refused_on_an_l40s_with_the_knobs_that_fit(capsys):
    assert preflight.main(["--gpu", "L40S", *FULL_VLLM]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("memory estimate: Qwen/Qwen2.5-3B-Instruct (3.09 B params), backend vllm, full-parameter")
    assert any(line.lstrip().startswith("fp32 master weights") for line in out)
    assert out[-1].startswith("does not fit: ") and "GiB needed, 45.0 GiB available; try rl.micro_batch_size=" in out[-1]


def test_it_fits_80_gib_and_the_papers_unsloth_run_fits_an_l40s(capsys):
    assert preflight.main(["--gpu-memory-gib", "80", *FULL_VLLM]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(" GiB of 80.0 GiB")
    assert preflight.main(["experiment=gsm8k_main"]) == 0  # L40S by default
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("fits: ") and last.endswith(" GiB of 45.0 GiB")


def test_every_preset_and_sweep_job_gets_a_line(capsys):
    assert preflight.main(["--presets", "--gpu", "L40S", "--gpu", "H100"]) == 0
    out = capsys.readouterr().out
    assert "| n_scaling | rl.n=256 | unsloth |" in out and "| rules | rule=random | unsloth |" in out
    assert "DOES NOT FIT" not in out


def test_a_config_error_is_one_message_and_exit_2():
    proc = subprocess.run([sys.executable, str(SCRIPT), "experiment=gsm8k_main", "rl.n=4.5"], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("preflight.py: error: invalid config:") and "rl.n must be an integer" in proc.stderr
