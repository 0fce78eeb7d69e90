#!/usr/bin/env python
"""Which prompt groups carry a learning signal under a reward, measured on the authors' own completions.

    uv run python benchmarks/reward_signal.py          # paper-data/ (scripts/paper_data.py), else the shared sample
    uv run python benchmarks/reward_signal.py --examples FILE.jsonl.gz --groups 2000 --seed 0 --out signal.json

Groups of n completions are drawn with replacement from the completions the authors published for one
question (Qwen2.5-3B-Instruct, their `examples` lists: the base model and checkpoints of every run),
`--groups` per question, and scored by the rewards of two dataset configs (config/dataset/): the strict
verifiers with ungated format and tags (`gsm8k`, `math`) and the reward the paper's runs trained on
(`gsm8k_paper`, `math_paper`). A group has a learning signal when its rewards are not all equal
(otherwise every advantage is 0). Printed (and written with --out):
1. all-correct GSM8K groups of 16 (correct by the config's accuracy reward): the share that still get an
   update (a pure formatting one); all-wrong MATH-500 groups of 16: the same;
2. dynamic sampling on GSM8K: the share of groups of n = 16 and 64 that a filter on the TOTAL reward drops
   and that DAPO's filter (accuracy all right or all wrong) drops;
3. n = 64 -> m = 16 on GSM8K: per down-sampling rule, the share of groups whose KEPT 16 are all right or
   all wrong, of the groups today's total filter trains and of those whose 64 hold both.
Deterministic for a given --seed; docs/workbench.md quotes a run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from pods.analysis.paper_data import examples_path

ROOT = Path(__file__).resolve().parent.parent
RULES = ("max_variance", "max_reward", "random", "percentile")


def dataset_rewards(name: str):
    """(combined reward, accuracy reward's name) of config/dataset/<name>.yaml."""
    from hydra import compose, initialize_config_dir

    from pods import rewards

    with initialize_config_dir(config_dir=str(ROOT / "config"), version_base=None):
        d = compose(config_name="train", overrides=[f"dataset={name}"]).dataset
    return rewards.combined(d.rewards), d.accuracy_reward or d.rewards[0]["name"]


def score(rows: list[dict], config: str, idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(total [N], correct [N] bool) of the rows `idx` under a dataset config's rewards (other rows: NaN, False)."""
    reward, acc = dataset_rewards(config)
    scored, per = reward([rows[i]["completion"] for i in idx], [rows[i]["answer"] for i in idx])
    total, correct = np.full(len(rows), np.nan), np.zeros(len(rows), dtype=bool)
    total[idx], correct[idx] = scored, np.asarray(per[acc]) > 0
    return total, correct


def draw(questions: dict[str, list[int]], n: int, k: int, rng: np.random.Generator, pool=None) -> np.ndarray:
    """[Q * k, n] row indices: k groups of n per question, with replacement, from its rows (or `pool`'s)."""
    out = []
    for rows in questions.values():
        rows = [i for i in rows if pool is None or pool[i]]
        if rows:
            out.append(np.asarray(rows)[rng.integers(0, len(rows), size=(k, n))])
    return np.concatenate(out)


def flat(values: np.ndarray) -> np.ndarray:
    """[G, n] -> [G] bool: every value of the group equal."""
    return (values == values[:, :1]).all(axis=1)


def measure(rows: list[dict], k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    by = defaultdict(lambda: defaultdict(list))  # dataset -> question -> row indices (Qwen only)
    for i, r in enumerate(rows):
        if r["model"] == "qwen":
            by[r["dataset"]][r["question"]].append(i)
    out = {"rows": len(rows), "groups_per_question": k, "seed": seed, "questions": {d: len(q) for d, q in by.items()}}
    cfg = {"gsm8k": ("gsm8k", "gsm8k_paper"), "math500": ("math", "math_paper")}
    scored = {c: score(rows, c, [i for q in by[d].values() for i in q]) for d, pair in cfg.items() for c in pair}
    for dataset, want, label in (("gsm8k", True, "all_correct_gsm8k_16"), ("math500", False, "all_wrong_math500_16")):
        out[label] = {}
        for c in cfg[dataset]:
            total, correct = scored[c]
            g = draw(by[dataset], 16, k, rng, pool=correct == want)
            out[label][c] = {"groups": len(g), "with_signal": float(1 - flat(total[g]).mean())}
    total, correct = scored["gsm8k"]
    out["filter_drops_gsm8k"] = {}
    for n in (16, 64):
        g = draw(by["gsm8k"], n, k, rng)
        out["filter_drops_gsm8k"][f"n{n}"] = {"groups": len(g), "total_filter": float(flat(total[g]).mean()),
                                              "accuracy_filter": float(flat(correct[g]).mean())}
    out["kept_flat_gsm8k_64_16"] = kept_flat(by["gsm8k"], total, correct, k, rng)
    return out


def kept_flat(questions, total, correct, k, rng) -> dict:
    """Per rule: the share of groups (n = 64) whose kept 16 (selected on the total) are all right or all wrong."""
    from pods.core.downsample import select

    g = draw(questions, 64, k, rng)
    t, c = torch.tensor(total[g], dtype=torch.float32), torch.tensor(correct[g])  # [G, 64]
    trained = ~torch.tensor(flat(total[g]))  # what today's total filter trains
    mixed = ~torch.tensor(flat(correct[g]))  # the 64 hold a right and a wrong answer
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    out = {"groups": len(g), "total_filter_trains": float(trained.float().mean()), "mixed": float(mixed.float().mean())}
    for rule in RULES:
        kept = c.gather(1, select(t, 16, rule, generator=gen))  # [G, 16]
        is_flat = kept.all(1) | (~kept).all(1)
        out[rule] = {"of_trained": float(is_flat[trained].float().mean()),
                     "of_mixed": float(is_flat[mixed].float().mean())}
    return out


def report(m: dict) -> None:
    pct = lambda v: f"{100 * v:.2f} %"  # noqa: E731
    print(f"{m['rows']} completions; questions (Qwen): {m['questions']}; {m['groups_per_question']} groups per "
          f"question, seed {m['seed']}\n")
    print("| groups of 16 | strict verifier + format 0.1 + tags 0.1 | the paper's reward |\n|---|---|---|")
    for label, (a, b) in (("all_correct_gsm8k_16", ("gsm8k", "gsm8k_paper")),
                          ("all_wrong_math500_16", ("math", "math_paper"))):
        print(f"| {label.replace('_', ' ')}: with an update | {pct(m[label][a]['with_signal'])} | "
              f"{pct(m[label][b]['with_signal'])} |")
    print("\n| GSM8K, dataset=gsm8k | total filter drops | DAPO's accuracy filter drops |\n|---|---|---|")
    for n, v in m["filter_drops_gsm8k"].items():
        print(f"| n = {n[1:]} | {pct(v['total_filter'])} | {pct(v['accuracy_filter'])} |")
    k = m["kept_flat_gsm8k_64_16"]
    print(f"\n| 64 -> 16, kept 16 all right or all wrong | of groups the total filter trains "
          f"({pct(k['total_filter_trains'])}) | of groups whose 64 are mixed ({pct(k['mixed'])}) |\n|---|---|---|")
    for rule in RULES:
        print(f"| {rule} | {pct(k[rule]['of_trained'])} | {pct(k[rule]['of_mixed'])} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--examples", type=Path, default=None, help="examples.jsonl.gz (default: paper-data/, else shared)")
    p.add_argument("--groups", type=int, default=2000, help="groups drawn per question and measurement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON")
    args = p.parse_args(argv)
    path = args.examples or examples_path()
    if not path.is_file():
        print(f"error: {path} not found: uv run python scripts/paper_data.py fetches the authors' completions",
              file=sys.stderr)
        return 2
    if args.groups < 1:
        p.error(f"--groups must be at least 1, got {args.groups}")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    m = {"examples": str(path), **measure(rows, args.groups, args.seed)}
    report(m)
    if args.out:
        args.out.write_text(json.dumps(m, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
