"""Figures (PNG + PDF) from evaluation results: `pods plot` as a script.

    uv run python scripts/plot.py --help    # its arguments; the code: pods/commands/plot.py
"""

import sys

from pods.commands.plot import main

if __name__ == "__main__":
    sys.exit(main(prog="plot.py"))
