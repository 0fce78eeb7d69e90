"""Benchmark `select(rule="max_variance")` against the authors' per-prompt procedure and a bare sort.

    uv run python benchmarks/bench_downsample.py [--groups 1024 4096] [--n 16 64 256 1024] [--m 16]

(a) "authors": one prompt at a time, sort, then recompute the variance of each of the m+1
candidate subsets from scratch (a faithful re-implementation of the original procedure, applied
per prompt). (b) "sort": a bare `torch.sort` of the same [G, n] tensor, the floor for any
sort-based rule. Prints the median time of each and the ratios authors/ours and ours/sort.
Targets (issue 2): >= 50x faster than (a) and <= 3x (b) at G=4096, n=256.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pods.core.downsample import select


def authors_max_variance(rewards: torch.Tensor, m: int) -> torch.Tensor:
    """[G, n] -> [G, m], one prompt at a time, each candidate's variance from scratch."""
    out = []
    for row in rewards:
        values, order = torch.sort(row)
        n = row.numel()
        best, best_idx = -1.0, None
        for k in range(m + 1):
            idx = torch.cat([order[: m - k], order[n - k :]])
            var = torch.var(row[idx], unbiased=False).item()
            if var > best:
                best, best_idx = var, idx
        out.append(best_idx)
    return torch.stack(out)


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 64, 256, 1024])
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, m={args.m}")
    print(f"{'G':>5} {'n':>5} {'authors ms':>11} {'ours ms':>9} {'sort ms':>9} {'authors/ours':>13} {'ours/sort':>10}")
    gen = torch.Generator().manual_seed(0)
    for G in args.groups:
        for n in args.n:
            rewards = torch.randint(0, 2, (G, n), generator=gen).float() + 0.1 * torch.rand(G, n, generator=gen)
            ours = median_seconds(lambda: select(rewards, args.m), args.repeats)
            bare = median_seconds(lambda: torch.sort(rewards, dim=-1), args.repeats)
            ref = median_seconds(lambda: authors_max_variance(rewards, args.m), 1)
            chosen_ours = rewards.gather(1, select(rewards, args.m)).var(1, unbiased=False)
            chosen_ref = rewards.gather(1, authors_max_variance(rewards[:64], args.m)).var(1, unbiased=False)
            assert torch.allclose(chosen_ours[:64], chosen_ref, atol=1e-5), "implementations disagree"
            print(f"{G:>5} {n:>5} {ref * 1e3:>11.1f} {ours * 1e3:>9.2f} {bare * 1e3:>9.2f} "
                  f"{ref / ours:>12.0f}x {ours / bare:>9.2f}x")


if __name__ == "__main__":
    main()
