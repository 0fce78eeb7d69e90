"""pods preflight (pods/commands/preflight.py, scripts/preflight.py): the memory estimate of a config for a named GPU, no GPU and no download needed.

The source review's examples: the full-parameter vLLM run is refused on an L40S (exit 3, with the knobs
that would fit) and accepted on 80 GiB; the paper's Unsloth run fits an L40S; a config error exits 2.
"""

from pathlib import Path

import pytest

from pods.commands import preflight

from helpers import exits

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


def test_a_config_error_is_one_message_and_exit_2(capsys):
    code, _, err = exits(preflight.main, ["experiment=gsm8k_main", "rl.n=4.5"], capsys)
    assert code == 2 and err.startswith("preflight.py: error: invalid config:") and "rl.n must be an integer" in err


def test_time_prints_seconds_per_step_on_the_gpus_profile_beside_the_memory_verdict(capsys):
    assert preflight.main(["--time", "--gpu", "L40S", "experiment=gsm8k_main", "rl.n=16"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("seconds per step: "))
    seconds = float(line.split()[3])
    assert 6.5 < seconds < 8.5 and "on l40s-unsloth" in line  # the authors' 16 -> 16 on an L40S: 7.56 s measured
    assert "the run: " in line and "6.00 h (rl.max_time=21600 s)" in line and "fits: " in out
    assert "note: assumed mean lengths" in out


def test_time_as_json_and_one_line_per_sweep_job_with_what_lies_outside_the_fit(capsys):
    import json

    assert preflight.main(["--time", "--json", "--gpu", "L40S", "experiment=gsm8k_main",
                           "--completion-tokens", "230", "--prompt-tokens", "150"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["fits"] and 9.5 < row["seconds_per_step"] < 11 and row["profile"] == "l40s-unsloth"  # 64 -> 16: 10.1
    assert row["notes"] == []  # inside the fitted range, lengths given
    assert preflight.main(["--time", "-m", "--gpu", "L40S", "experiment=n_scaling", "rl.prompts_per_step=8"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if not x.startswith("  ")]
    assert [x.split(":")[0] for x in lines] == [f"rl.n={n}" for n in (16, 32, 64, 128, 256)]
    assert all("seconds per step: " in x for x in lines)
    # 8 prompts x 256: 2,048 sequences in a batch, beyond the fitted 8-256
    assert preflight.main(["--time", "--gpu", "L40S", "experiment=n_scaling", "rl.n=256", "rl.prompts_per_step=8"]) == 0
    assert "sequences 2048 outside the fitted 8-256" in capsys.readouterr().out


def test_time_with_a_profile_file_and_the_demo_on_the_cpu_profile(capsys, tmp_path):
    import json

    from pods.core import profiles

    data = json.loads((profiles.SHIPPED / "l40s-unsloth.json").read_text())
    data["constants"]["fixed"] += 10.0  # a slower machine
    (tmp_path / "slow.json").write_text(json.dumps(data))
    assert preflight.main(["--json", "--profile", str(tmp_path / "slow.json"), "experiment=gsm8k_main"]) == 0
    assert json.loads(capsys.readouterr().out)["seconds_per_step"] > 19
    assert preflight.main(["--time", "--json", "experiment=demo"]) == 0  # backend.device=cpu: the cpu profile
    row = json.loads(capsys.readouterr().out)
    assert row["profile"] == "cpu" and row["seconds_per_step"] > 0 and row["limit"] == "rl.max_steps=500"
    assert not [n for n in row["notes"] if "not the profile's" in n]  # the demo's own model: float32 KV bytes alike


def test_time_with_an_unknown_profile_or_one_of_another_backend_is_exit_2_and_says_which(capsys):
    assert preflight.main(["--profile", "l40s", "experiment=gsm8k_main"]) == 2
    assert "unknown profile 'l40s'; known: " in capsys.readouterr().err
    assert preflight.main(["--profile", "h100-hf", "experiment=gsm8k_main"]) == 2  # the preset runs unsloth
    assert "this run uses backend=unsloth" in capsys.readouterr().err
    assert preflight.main(["--time", "--gpu", "H100", "experiment=gsm8k_main"]) == 2  # none measured there
    assert "no profile measured on H100 with backend=unsloth" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_gpu_memory_that_is_not_a_finite_number_is_refused(capsys, value):
    code, _, err = exits(preflight.main, ["--gpu-memory-gib", value, "experiment=gsm8k_main"], capsys)
    assert code == 2 and (f"preflight.py: error: argument --gpu-memory-gib: '{value}': must be a positive, finite "
                          "number of GiB (e.g. 80)") in err


def test_two_gpus_get_a_verdict_each(capsys):
    code, out, _ = exits(preflight.main, ["--gpu", "L40S", "--gpu", "H100", "experiment=gsm8k_main"], capsys)
    assert code == 0
    for line in ("LoRA 64 on a 4-bit base, on L40S (44.99 GiB)", "fits: 30.9 GiB of 45.0 GiB",
                 "LoRA 64 on a 4-bit base, on H100 (79.65 GiB)", "fits: 48.2 GiB of 79.7 GiB"):
        assert line in out, out
