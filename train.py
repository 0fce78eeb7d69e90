"""Train with GRPO-PODS / GRPO / GRPO-GA: `pods train` as a script (pods/commands/train.py; config/train.yaml).

    uv run python train.py experiment=demo                        # the CPU demo
    uv run python train.py model=tiny dataset=arithmetic rl.max_steps=2 rl.n=8 rl.m=4
    uv run python train.py experiment=gsm8k_main                  # the paper's GRPO 16/16 vs PODS 64/16 (GPU)
    uv run python train.py -m rl.n=16,32,64 rl.m=16               # a sweep
"""

from pods.commands.train import main

if __name__ == "__main__":
    main(prog="train.py")
