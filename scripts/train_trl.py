"""Multi-GPU PODS / GRPO-GA with TRL's GRPOTrainer on accelerate: `pods trl` as a script.

    uv run python scripts/train_trl.py --help    # its arguments; the code: pods/commands/trl.py
"""

import sys

from pods.commands.trl import main

if __name__ == "__main__":
    sys.exit(main(prog="train_trl.py"))
