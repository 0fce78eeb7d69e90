"""Will a train.py config fit a GPU: `pods preflight` as a script.

    uv run python scripts/preflight.py --help    # its arguments; the code: pods/commands/preflight.py
"""

import sys

from pods.commands.preflight import main

if __name__ == "__main__":
    sys.exit(main(prog="preflight.py"))
