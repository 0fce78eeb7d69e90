"""Speed-up table from evaluation results: `pods speedup` as a script.

    uv run python scripts/speedup.py --help    # its arguments; the code: pods/commands/speedup.py
"""

import sys

from pods.commands.speedup import main

if __name__ == "__main__":
    sys.exit(main(prog="speedup.py"))
