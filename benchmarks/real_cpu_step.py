#!/usr/bin/env python
"""Where a PODS step of experiment=real_cpu spends its time on CPU, and what bfloat16 does to the log-probs.

    uv run python benchmarks/real_cpu_step.py                      # 3 steps of the preset as it stands
    uv run python benchmarks/real_cpu_step.py --steps 3 model.cpu_dtype=float32 rl.n=16   # overrides: train.py's
    uv run python benchmarks/real_cpu_step.py --dtypes             # bf16 vs float32 log-probs of the same tokens

Steps: the preset trained in this process (pods.run.trainer.train, a temp run directory, no held-out
evaluation) for --steps steps; printed per step from metrics.jsonl: generation, update and step seconds,
completion tokens and generation tokens/s, with the load average (/proc/loadavg) before and after: the
machine may be shared. The first step includes no model load (prepare loads it before the clock).
--dtypes: one batch sampled from the preset's prompts, then its log-probs by the float32 and the bfloat16
policy (the same LoRA): mean / max absolute difference per token and of the sequence sums.
Results: docs/real-model.md ("Measured").
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from pods.cli import quiet_openmp, set_cpu_threads

quiet_openmp()  # before torch loads: idle OpenMP threads sleep, as train.py

import torch  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "config")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def preset(overrides: list[str]):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return compose(config_name="train", overrides=["experiment=real_cpu", *overrides])


def steps(k: int, overrides: list[str]) -> list[dict]:
    """metrics.jsonl rows of k steps of the preset (with `overrides`) trained in a temp directory."""
    from pods.run.trainer import train

    with tempfile.TemporaryDirectory() as tmp:
        cfg = preset([f"output_root={tmp}", "run_name=bench", f"rl.max_steps={k}", "rl.max_time=null",
                      "rl.save_strategy=no", "rl.save_final=false", "evaluation=null", "logging.progress=false",
                      *overrides])
        run_dir = train(cfg)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
        completions = cfg.rl.prompts_per_step * cfg.rl.n
    for r in rows:
        r["tokens"] = completions * r["completion_length/mean"]
    return rows


def dtypes(overrides: list[str], n: int = 8) -> dict[str, float]:
    """|log p(bf16) - log p(fp32)| over one sampled batch of the preset's first 2 training prompts x n."""
    from pods import data
    from pods.backends.base import Sampling
    from pods.backends.hf import HFGenerator, load_policy
    from pods.backends.precision import FP32, Precision

    cfg = preset(overrides)
    torch.manual_seed(0)
    fp32 = load_policy(cfg, precision=FP32)
    bf16 = load_policy(cfg, precision=Precision(torch.bfloat16, torch.bfloat16))
    bf16.model.load_state_dict({k: v for k, v in fp32.model.state_dict().items() if "lora_" in k}, strict=False)
    examples = data.load_dataset(cfg.dataset.name, limit=2, **cfg.dataset.options)
    _, prompts, _ = data.render_prompts(examples, fp32.tokenizer, cfg.dataset.prompt_style, cfg.dataset.system_prompt)
    ro = HFGenerator(fp32).generate(prompts, n, Sampling(max_tokens=cfg.rl.max_completion_tokens,
                                                         temperature=cfg.rl.temperature, seed=0))
    flat = [p for p in prompts for _ in range(n)]
    with torch.no_grad():
        a, mask = fp32.token_logprobs(flat, ro.completion_ids, temperature=cfg.rl.temperature)
        b, _ = bf16.token_logprobs(flat, ro.completion_ids, temperature=cfg.rl.temperature)
    diff = (a - b).abs()[mask.bool()]
    seq = ((a - b) * mask).sum(-1).abs()
    return {"tokens": int(mask.sum()), "mean_abs_token": diff.mean().item(), "max_abs_token": diff.max().item(),
            "mean_token_logp_fp32": (a.sum() / mask.sum()).item(), "mean_abs_sequence_sum": seq.mean().item()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="training steps to time")
    ap.add_argument("--dtypes", action="store_true", help="compare bf16 and float32 log-probs instead")
    ap.add_argument("overrides", nargs="*", help="train.py overrides on top of experiment=real_cpu")
    args = ap.parse_args(argv)
    print(f"torch threads {set_cpu_threads()}; load average before: {loadavg()}", flush=True)
    if args.dtypes:
        print(json.dumps(dtypes(args.overrides), indent=1))
    else:
        print("step  generation_s  update_s  step_s  completion_tokens  gen_tokens_per_s  reward  frac_truncated")
        for r in steps(args.steps, args.overrides):
            print(f"{r['step']:>4}  {r['time/generation']:>12.1f}  {r['time/update']:>8.1f}  {r['time/step']:>6.1f}  "
                  f"{r['tokens']:>17.0f}  {r['tokens'] / r['time/generation']:>16.1f}  {r['reward/total']:>6.3f}  "
                  f"{r.get('frac_truncated', float('nan')):>14.2f}")
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
