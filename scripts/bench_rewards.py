"""Benchmark the verifiers: completions per second on typical and on adversarial completions.

    uv run python scripts/bench_rewards.py                 # table on stdout
    uv run python scripts/bench_rewards.py --json out.json # also write the numbers

Typical completions: ~1 KB of reasoning in <think> tags plus an answer block, half right, half
wrong, answers in the formats of each dataset (for `math` a third need sympy, the rest are decided
by the string/number fast path). Adversarial: the inputs of tests/rewards/test_robustness.py
(1 MB strings, 10k nested braces, power towers, factorials, expansion bombs, malformed LaTeX).
`typical` clears the math verifier's caches before every batch of 240 (6 distinct answers per
gold, repeated): sympy runs once per distinct (gold, answer) pair per batch; `cached` keeps them
(the steady state when answers repeat across steps). Single-threaded; math-verify is imported
and warmed up before timing. Adversarial inputs are timed cold, one call each.
"""

from __future__ import annotations

import argparse
import time


import rewards  # noqa: E402
from rewards import math_answer  # noqa: E402
from pods.io import atomic_write_json  # noqa: E402

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
]


def typical_batch(name: str, size: int) -> tuple[list[str], list[str]]:
    pairs = TYPICAL[name]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=240, help="typical completions per call")
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum timing per measurement")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = parser.parse_args()

    math_answer._math_verify_module()  # import + warm-up outside the timings
    results = {}
    print(f"{'verifier':<11} {'typical /s':>11} {'cached /s':>10} {'adversarial /s':>15} {'worst adversarial ms':>21}")
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
        results[name] = {"typical_per_s": typical, "cached_per_s": cached, "adversarial_per_s": adversarial,
                         "worst_adversarial_s": worst}
        print(f"{name:<11} {typical:>11.0f} {cached:>10.0f} {adversarial:>15.1f} {worst * 1000:>21.1f}")
    if args.json:
        atomic_write_json(args.json, results, indent=2)


if __name__ == "__main__":
    main()
