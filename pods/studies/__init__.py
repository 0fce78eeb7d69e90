"""Studies: many training runs compared on one protocol.

    from pods.studies.runner import run_jobs, run_logged       # (arm, seed) jobs N at a time, one child process each
    from pods.studies.leaderboard import ARMS, TIERS            # the leaderboard's arms, tiers and run overrides
    from pods.studies.demo_compare import report               # the CPU demo's per-step comparison

Behind `pods leaderboard` and `pods demo-compare`; docs/leaderboard.md, docs/demo.md.
"""
