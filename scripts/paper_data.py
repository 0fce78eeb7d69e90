"""The paper's published results and real completions: `pods paper-data` as a script.

    uv run python scripts/paper_data.py --help    # its arguments; the code: pods/commands/paper_data.py
"""

import sys

from pods.commands.paper_data import main

if __name__ == "__main__":
    sys.exit(main(prog="paper_data.py"))
