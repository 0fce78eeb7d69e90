"""benchmarks/measure_sigterm.py on a small demo variant (no warm start): one SIGTERM, exit 143, timings printed."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_one_trial_reports_the_time_to_exit():
    out = subprocess.run([sys.executable, "benchmarks/measure_sigterm.py", "--trials", "1", "--after", "2", "--threads", "1",
                          "--", "warmstart=null", "rl.n=16", "rl.prompts_per_step=4"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"trial 1: exit 143 after [\d.]+ s, stopped after step [2-9]\d* \(checkpoint written", out.stdout)
    assert re.search(r"SIGTERM -> exit: min [\d.]+ s, median [\d.]+ s, max [\d.]+ s over 1 trials", out.stdout)
