"""What re-quantising a merged LoRA model to NF4 does to the update, simulated (docs/evaluation.md).

    uv run python benchmarks/nf4_requant.py                  # the table: update sizes 0.1 % .. 30 % of rms(W)
    uv run python benchmarks/nf4_requant.py --rank 0 --seed 1  # a full-rank update instead of rank 64

W: a [rows, cols] Gaussian matrix (the scale cancels: everything is relative to rms(W)); dW = B A of the
given rank (LoRA's form) scaled to a fraction of rms(W). Columns: U = NF4(W + dW) - NF4(W) is the update the
authors' merged 4-bit checkpoint carries, dW the one that was trained (evaluated exactly as NF4(W) + dW by
weights=adapter). NF4 as bitsandbytes defines it: pods.analysis.nf4 (code book, blocks of 64).
"""

from __future__ import annotations

import argparse

import numpy as np

from pods.analysis.nf4 import requant_noise

LEVELS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)  # rms(dW) / rms(W)


def update(rng, rows: int, cols: int, rank: int) -> np.ndarray:
    """A unit-rms update: B A of `rank` (0: full rank)."""
    if rank == 0:
        d = rng.standard_normal((rows, cols))
    else:
        d = rng.standard_normal((rows, rank)) @ rng.standard_normal((rank, cols))
    return d / np.sqrt(np.mean(d * d))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--rank", type=int, default=64, help="rank of dW (0: full rank); the paper's LoRA rank is 64")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    w = rng.standard_normal((args.rows, args.cols)).astype(np.float32)
    d = update(rng, args.rows, args.cols, args.rank)
    print(f"W {args.rows} x {args.cols} Gaussian, dW rank {args.rank or 'full'}, seed {args.seed}")
    print("| rms(dW) / rms(W) | rms(U) / rms(dW) | cos(U, dW) | rms(U - dW) / rms(dW) |")
    print("|---|---|---|---|")
    for level in LEVELS:
        r = requant_noise(w, (level * d).astype(np.float32))
        print(f"| {level:.1%} | {r['update_ratio']:.2f} | {r['cosine']:.2f} | {r['noise_ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
