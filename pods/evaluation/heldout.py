"""Held-out accuracy at the end of a training run (the CPU demo prints it; train.py calls it).

    final_heldout(run_dir)   # latest complete checkpoint; None when the run's `evaluation` is null

Reads the run config's `evaluation` section (size, draws, temperature, max_tokens, seed,
batch_size, greedy) and reports sampled pass@1 (mean over `draws` samples per problem) and greedy
accuracy on the first `size` test problems of the run's dataset, with the run's own backend and
verifier (pods.evaluation does the sampling and scoring).
"""

from __future__ import annotations

from pathlib import Path

from pods.backends.base import Sampling
from pods.evaluation import prepare_dataset, complete_checkpoints, eval_datasets, sample_answers, score


def heldout_accuracy(generator, tokenizer, run_cfg, log=print) -> dict[str, float]:
    """Held-out accuracy of the current policy, for the end of a training run (e.g. the CPU demo).

    Reads `run_cfg.evaluation` (size, draws, temperature, max_tokens, seed, batch_size, greedy):
    sampled pass@1 = mean accuracy over `draws` samples per problem of the first `size` test
    problems of the run's dataset, plus greedy accuracy when `greedy` is true.
    """
    ev = run_cfg.get("evaluation") or {}
    ds = eval_datasets({"datasets": [{"name": run_cfg.dataset.name, "limit": ev.get("size", 2000),
                                      "format_reward": None}]}, run_cfg)[0]
    prompts, answers, cols, answer_fn, _, _ = prepare_dataset(ds, tokenizer)
    out, seed, bs = {}, int(ev.get("seed", 1234)), int(ev.get("batch_size", 1024))
    max_tokens = int(ev.get("max_tokens", run_cfg.rl.max_completion_tokens))
    draws = int(ev.get("draws", 4))
    accs = []
    for r in range(draws):
        s = Sampling(max_tokens=max_tokens, temperature=float(ev.get("temperature", 1.0)), seed=seed + 1000 * r)
        texts, lens = sample_answers(generator, prompts, s, batch_size=bs)
        accs.append(score(texts, lens, answers, answer_fn=answer_fn, cols=cols)[0]["ans_acc"])
    out["sampled_acc"] = sum(accs) / draws
    if ev.get("greedy", True):
        texts, lens = sample_answers(generator, prompts, Sampling(max_tokens=max_tokens, temperature=0.0, seed=seed),
                                     batch_size=bs)
        out["greedy_acc"] = score(texts, lens, answers, answer_fn=answer_fn, cols=cols)[0]["ans_acc"]
    log(f"held-out accuracy on {len(prompts)} {ds['name']} test problems: sampled pass@1 "
        f"{out['sampled_acc']:.4f} (T={ev.get('temperature', 1.0)}, mean of {draws} draws)"
        + (f", greedy {out['greedy_acc']:.4f}" if "greedy_acc" in out else ""))
    return out


def final_heldout(run_dir: str | Path, log=print) -> dict[str, float] | None:
    """`heldout_accuracy` of the latest complete checkpoint of a run whose config has an `evaluation`
    section (the CPU demo); None when the section is null. For train.py to call after training."""
    from omegaconf import OmegaConf

    from pods import backends

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
