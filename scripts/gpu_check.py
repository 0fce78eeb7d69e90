"""First contact with a GPU: `pods gpu-check` as a script.

    uv run python scripts/gpu_check.py --help    # its arguments; the code: pods/commands/gpu_check.py
"""

import sys

from pods.commands.gpu_check import main

if __name__ == "__main__":
    sys.exit(main(prog="gpu_check.py"))
