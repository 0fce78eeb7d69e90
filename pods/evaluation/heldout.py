"""Held-out accuracy at the end of a training run (the CPU demo prints it; train.py calls it).

    final_heldout(run_dir)   # latest complete checkpoint; None when the run's `evaluation` is null

Reads the run config's `evaluation` section (size, draws, temperature, max_tokens, seed,
batch_size, greedy) and reports sampled pass@1 (mean over `draws` samples per problem) and greedy
accuracy on the first `size` test problems of the run's dataset, with the run's own backend and
verifier (pods.evaluation does the sampling and scoring).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from pods import backends
from pods.backends.base import Sampling
from pods.config.schema import HeldoutConfig
from pods.evaluation import complete_checkpoints, eval_datasets, prepare_dataset, sample_answers, score


def heldout_accuracy(generator, tokenizer, run_cfg, log=print) -> dict[str, float]:
    """Held-out accuracy of the current policy per the run's `evaluation` section (HeldoutConfig):
    sampled pass@1 = mean accuracy over `draws` samples per problem of the first `size` test problems
    of the run's dataset, plus greedy accuracy when `greedy` is true."""
    ev = HeldoutConfig(**(run_cfg.get("evaluation") or {}))
    ds = eval_datasets({"datasets": [{"name": run_cfg.dataset.name, "limit": ev.size, "format_reward": None}]},
                       run_cfg)[0]
    prompts, answers, cols, answer_fn, _, _ = prepare_dataset(ds, tokenizer)
    max_tokens = ev.max_tokens or run_cfg.rl.max_completion_tokens

    def accuracy(temperature: float, seed: int) -> float:
        s = Sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        texts, lens = sample_answers(generator, prompts, s, batch_size=ev.batch_size)
        return score(texts, lens, answers, answer_fn=answer_fn, cols=cols)[0]["ans_acc"]

    out = {"sampled_acc": sum(accuracy(ev.temperature, ev.seed + 1000 * r) for r in range(ev.draws)) / ev.draws}
    if ev.greedy:
        out["greedy_acc"] = accuracy(0.0, ev.seed)
    log(f"held-out accuracy on {len(prompts)} {ds['name']} test problems: sampled pass@1 "
        f"{out['sampled_acc']:.4f} (T={ev.temperature}, mean of {ev.draws} draws)"
        + (f", greedy {out['greedy_acc']:.4f}" if "greedy_acc" in out else ""))
    return out


def final_heldout(run_dir: str | Path, log=print) -> dict[str, float] | None:
    """`heldout_accuracy` of the latest complete checkpoint of a run whose config has an `evaluation`
    section (the CPU demo); None when the section is null. For train.py to call after training."""
    run_dir = Path(run_dir)
    run_cfg = OmegaConf.load(run_dir / "config.yaml")
    ckpts = complete_checkpoints(run_dir)
    if not run_cfg.get("evaluation") or not ckpts:
        return None
    policy, generator = backends.build(run_cfg)
    policy.load(ckpts[-1][1] / "policy")
    generator.update_weights(policy)
    log(f"final evaluation of {run_dir.name}/{ckpts[-1][1].name}:")
    return heldout_accuracy(generator, policy.tokenizer, run_cfg, log=log)
