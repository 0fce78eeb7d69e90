"""Print the versions, devices and paths a bug report needs (as `trl env` does for TRL).

    pods env            # lines to paste into an issue
    pods env --json     # the same as one JSON object

Python and platform; the installed versions of pods and the libraries it runs on (and which optional ones are
missing); the CPU, memory, NVIDIA driver, each CUDA GPU or why CUDA is not usable; where pods, its config, the
model caches and the checkout (with its commit) are, each said to be writable, a file, or missing; pods' environment
variables that are set. Reads only: nothing is written. The facts: pods.firstcontact.environment.
"""

from __future__ import annotations

import json

from pods.cli import run_script
from pods.commands import parser


def run(argv=None, prog: str = "pods env") -> int:
    p = parser(prog, __doc__)
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = p.parse_args(argv)
    from pods.firstcontact.environment import report, text  # torch: once the arguments are read

    facts = report()
    print(json.dumps(facts, indent=1) if args.json else text(facts))
    return 0


def main(argv=None, prog: str = "pods env") -> int:
    """`run` with pipes, Ctrl-C and problems of the file system handled as every command's (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)
