"""A compute-matched leaderboard of the selection lab's arms: `pods leaderboard` as a script.

    uv run python scripts/leaderboard.py --help    # its arguments; the code: pods/commands/leaderboard.py
"""

import sys

from pods.commands.leaderboard import main

if __name__ == "__main__":
    sys.exit(main(prog="leaderboard.py"))
