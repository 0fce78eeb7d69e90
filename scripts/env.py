"""The versions, devices and paths for a bug report: `pods env` as a script.

    uv run python scripts/env.py --help    # its arguments; the code: pods/commands/env.py
"""

import sys

from pods.commands.env import main

if __name__ == "__main__":
    sys.exit(main(prog="env.py"))
