"""The CPU demo's per-step comparison of GRPO, PODS and the random control: `pods demo-compare` as a script.

    uv run python scripts/demo_compare.py --help    # its arguments; the code: pods/commands/demo_compare.py
"""

import sys

from pods.commands.demo_compare import main

if __name__ == "__main__":
    sys.exit(main(prog="demo_compare.py"))
