"""Time the vLLM backend's LoRA hand-over: in memory (the default) against adapter files, on one engine.

    .venv-vllm-cpu/bin/python benchmarks/bench_handover.py                  # the CPU vLLM tier (scripts/test-vllm-cpu.sh)
    .venv-vllm-cpu/bin/python benchmarks/bench_handover.py --rank 64 --layers 8 --repeats 3

Builds a random model of the tiny family at a size whose LoRA adapter is about as large as Qwen2.5-3B's
rank-64 one (240 MB in bf16), starts the in-process engine (pods.backends.vllm.build), and times
`generator.update_weights(policy)` (what the trainer's `time/weight_sync` measures) with
`lora_from_memory` true, then false with the files in the system temp dir and in /dev/shm. Prints
the adapter's size and the median, min and max seconds of each; needs an importable vLLM.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf


def config(args, adapter_dir: str):
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    return OmegaConf.create({
        "seed": 0,
        "model": {"name": "tiny", "load_in_4bit": False, "dtype": "float32", "gradient_checkpointing": False,
                  "lora": {"rank": args.rank, "alpha": args.rank, "dropout": 0.0, "target_modules": targets},
                  "tiny": {"arch": "qwen2", "hidden": args.hidden, "layers": args.layers, "heads": args.hidden // 64,
                           "kv_heads": args.hidden // 256, "seed": 0}},
        "rl": {"beta": 0.0},
        "backend": {"name": "vllm", "device": "cpu", "max_lora_rank": args.rank, "max_model_len": 128,
                    "dtype": "float32", "enforce_eager": True, "distributed_executor_backend": "uni",
                    "gpu_memory_utilization": None, "max_num_seqs": None, "enable_prefix_caching": None,
                    "adapter_dir": adapter_dir, "engine_kwargs": {}},
    })


def timed(generator, policy, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        generator.update_weights(policy)
        seconds.append(time.perf_counter() - start)
    return seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden", type=int, default=1024, help="hidden size (head size 64)")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--rank", type=int, default=256, help="LoRA rank on all 7 projections")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    from peft import get_peft_model_state_dict

    from pods.backends import vllm as backend

    with tempfile.TemporaryDirectory() as tmp:
        policy, generator = backend.build(config(args, tmp))
        size = sum(t.numel() * t.element_size() for t in get_peft_model_state_dict(policy.model).values())
        print(f"adapter: {size / 2**20:.0f} MiB ({generator.dtype}), hidden {args.hidden}, {args.layers} layers, "
              f"rank {args.rank}; {args.repeats} hand-overs each (the first of all warms the engine up)")
        generator.update_weights(policy)
        runs = {"in memory": timed(generator, policy, args.repeats)}
        generator.lora_from_memory = False
        runs[f"files in {tmp}"] = timed(generator, policy, args.repeats)
        if Path("/dev/shm").is_dir():
            generator.adapter_root = Path(tempfile.mkdtemp(prefix="pods-bench-", dir="/dev/shm"))
            runs["files in /dev/shm"] = timed(generator, policy, args.repeats)
        for name, seconds in runs.items():
            print(f"  {name:<32} median {statistics.median(seconds):.3f} s  (min {min(seconds):.3f}, "
                  f"max {max(seconds):.3f})")
        generator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
