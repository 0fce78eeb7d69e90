"""Evaluate every checkpoint of a run: `pods evaluate` as a script (pods/commands/evaluate.py; config/evaluate.yaml).

    uv run python evaluate-run.py run_dir=checkpoints/<run>                 # sampled as the run trained
    uv run python evaluate-run.py run_dir=checkpoints/<run> protocol=paper  # the paper's evaluation
"""

from pods.commands.evaluate import main

if __name__ == "__main__":
    main(prog="evaluate-run.py")
