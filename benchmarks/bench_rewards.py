"""Benchmark the verifiers: completions per second on real, typical and adversarial completions.

    uv run python benchmarks/bench_rewards.py                 # tables on stdout
    uv run python benchmarks/bench_rewards.py --json out.json # also write the numbers
    uv run python benchmarks/bench_rewards.py --examples FILE.jsonl.gz  # another examples file

Real completions (`--examples`, default `paper-data/examples.jsonl.gz` from scripts/paper_data.py, else
the project's 1,653-row sample in a shared/paper-examples folder beside the checkout): the paper's model
outputs (GSM8K, MATH-500, AMC23), each
scored by the verifier of its dataset (`gsm8k`; `math` for MATH-500 and AMC23). `cold` clears the math verifier's caches
before every pass over the file (each distinct (answer, reference) pair pays for sympy once per
pass), `cached` keeps them. Without the file the script says it is absent and skips these rows.
Adversarial inputs also include megabyte-long degenerate loops and a megabyte of newlines.

Typical completions: ~1 KB of reasoning in <think> tags plus an answer block, half right, half
wrong, answers in the formats of each dataset (for `math` a third need sympy, the rest are decided
by the string/number fast path). Adversarial: the inputs of tests/pods/rewards/test_robustness.py
(1 MB strings, 10k nested braces, power towers, factorials, expansion bombs, malformed LaTeX).
`typical` clears the math verifier's caches before every batch of 240 (6 distinct answers per
gold, repeated): sympy runs once per distinct (gold, answer) pair per batch; `cached` keeps them
(the steady state when answers repeat across steps). Single-threaded; math-verify is imported
and warmed up before timing. Adversarial inputs are timed cold, one call each.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

from pods import data, rewards
from pods.analysis.paper_data import examples_path
from pods.io import atomic_write_json
from pods.rewards import math_answer

THINK = "<think>" + "Let me work through this step by step. " * 25 + "</think>"

TYPICAL = {
    "gsm8k": [("27", "27"), ("$1,080", "1080"), ("135 muffins", "135"), ("28", "27"), ("2.5", "2.5"),
              ("7", "20")],
    "math": [(r"\boxed{\dfrac{1}{2}}", r"\frac{1}{2}"), (r"\boxed{0.5}", r"\frac12"),
             (r"\boxed{2\sqrt{2}}", r"\sqrt{8}"), (r"\boxed{[1,2)}", "(1, 2]"), (r"\boxed{120^\circ}", "120"),
             (r"\boxed{\frac{\pi}{3}}", r"\frac{2\pi}{6}")],
    "chemistry": [("4.52 g", "4.5 g"), ("(b)", "B"), ("H_2O", "H2O"), ("4.5 kg", "4.5 g"), ("C", "B"), ("CO", "CO2")],
    "arithmetic": [("0579", "0579"), ("0578", "0579"), ("1379", "1379"), ("", "0976"), ("0976\n", "0976"),
                   ("97", "0097")],
    "format": [("4", "4")] * 6,
    "tags": [("4", "4")] * 6,
}

# Registered rewards timed on another's typical inputs (the openr1 and paper graders of main).
TYPICAL_LIKE = {"openr1_accuracy": "math", "openr1_format": "format", "openr1_tags": "tags",
                "paper_answer": "gsm8k", "paper_answer_decimal": "gsm8k", "paper_format": "format"}

ADVERSARIAL = [
    "x" * 1_000_000,
    "9" * 1_000_000,
    r"\boxed{" + "{" * 10_000 + "1" + "}" * 10_000 + "}",
    r"\boxed{" * 100_000,
    r"<answer>\boxed{9^{9^{9^{9}}}}</answer>",
    r"<answer>\boxed{100000!}</answer>",
    r"<answer>\boxed{(x+1)^{100000} - (x-1)^{100000}}</answer>",
    r"<answer>\boxed{\frac{\sqrt{}{}^{_}\left(}</answer>",
    "<think><answer>" * 50_000,
    "<answer>" + "1" * 5000 + "." + "2" * 5000 + "</answer>",
    "\n" * 1_000_000,
    "The answer is 2.\n" + "</think>\n" * 120_000,
    "x\n" + "a 1\nb 2\nc 3\nd 4\ne 5\nf 6\ng 7\nh 8\n" * 30_000,
    "\\(" * 500_000,
]


def typical_batch(name: str, size: int) -> tuple[list[str], list[str]]:
    pairs = TYPICAL.get(TYPICAL_LIKE.get(name, name), TYPICAL["gsm8k"])
    if name == "arithmetic":
        completions = [pred for pred, _ in pairs]
    else:
        completions = [f"{THINK}<answer>{pred}</answer>" for pred, _ in pairs]
    golds = [gold for _, gold in pairs]
    reps = -(-size // len(pairs))
    return (completions * reps)[:size], (golds * reps)[:size]


def rate(fn, completions, answers, min_seconds: float = 1.0, cold: bool = True) -> float:
    """Completions per second (repeat the batch until min_seconds have passed).

    cold: clear the math verifier's caches before every call, so every distinct (gold, answer)
    pair pays for sympy once per call, as when each group has new answers.
    """
    done, start = 0, time.perf_counter()
    while True:
        if cold:
            math_answer.clear_caches()
        fn(completions, answers)
        done += len(completions)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return done / elapsed


# The paper's real completions: paper-data/examples.jsonl.gz (scripts/paper_data.py), else the sample in
# a shared/paper-examples folder beside the checkout (pods.analysis.paper_data.examples_path)
DEFAULT_EXAMPLES = examples_path()


def load_examples(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """{verifier name: (completions, references)} from the paper-examples file."""
    by_reward: dict[str, tuple[list[str], list[str]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            completions, answers = by_reward.setdefault(data.DATASETS[row["dataset"]].reward, ([], []))
            completions.append(row["completion"])
            answers.append(row["answer"])
    return by_reward


def bench_examples(path: Path, seconds: float) -> dict:
    """Completions per second of each dataset's verifier on the real completions (cold and cached)."""
    if not path.is_file():
        print(f"real completions: {path} is absent; skipping them (get them with `uv run python "
              "scripts/paper_data.py`, or pass --examples PATH)")
        return {}
    results = {}
    print(f"real completions from {path}")
    print(f"{'verifier':<11} {'completions':>11} {'cold /s':>10} {'cached /s':>10}")
    for name, (completions, answers) in sorted(load_examples(path).items()):
        fn = rewards.get(name)
        cold = rate(fn, completions, answers, seconds)
        cached = rate(fn, completions, answers, seconds, cold=False)
        results[name] = {"completions": len(completions), "cold_per_s": cold, "cached_per_s": cached}
        print(f"{name:<11} {len(completions):>11} {cold:>10.0f} {cached:>10.0f}")
    print()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=240, help="typical completions per call")
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum timing per measurement")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    parser.add_argument("--examples", type=Path, default=DEFAULT_EXAMPLES,
                        help="the paper's real completions (examples.jsonl.gz); skipped when absent")
    args = parser.parse_args()

    math_answer._math_verify_module()  # import + warm-up outside the timings
    results = {"real": bench_examples(args.examples, args.seconds), "synthetic": {}}
    print(f"{'verifier':<20} {'typical /s':>11} {'cached /s':>10} {'adversarial /s':>15} {'worst adversarial ms':>21}")
    for name in rewards.names():
        fn = rewards.get(name)
        completions, answers = typical_batch(name, args.batch)
        typical = rate(fn, completions, answers, args.seconds)
        cached = rate(fn, completions, answers, args.seconds, cold=False)
        math_answer.clear_caches()
        worst = 0.0
        start = time.perf_counter()
        for text in ADVERSARIAL:
            t0 = time.perf_counter()
            fn([text], ["2"])
            worst = max(worst, time.perf_counter() - t0)
        adversarial = len(ADVERSARIAL) / (time.perf_counter() - start)
        results["synthetic"][name] = {"typical_per_s": typical, "cached_per_s": cached, "adversarial_per_s": adversarial,
                         "worst_adversarial_s": worst}
        print(f"{name:<20} {typical:>11.0f} {cached:>10.0f} {adversarial:>15.1f} {worst * 1000:>21.1f}")
    if args.json:
        atomic_write_json(args.json, results, indent=2)


if __name__ == "__main__":
    main()
