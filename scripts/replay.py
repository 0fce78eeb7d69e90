"""Offline replay of other rules on a run's rollout ledger: `pods replay` as a script.

    uv run python scripts/replay.py --help    # its arguments; the code: pods/commands/replay.py
"""

import sys

from pods.commands.replay import main

if __name__ == "__main__":
    sys.exit(main(prog="replay.py"))
